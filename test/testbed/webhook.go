package testbed

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/kubeopera/kubeopera-operator/internal/pki"
	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

// sccWebhookName names the MutatingWebhookConfiguration and its one webhook.
const sccWebhookName = "scc.testbed.kubeopera.io"

// rangesWait is how long the SCC admission waits for a new namespace's annotations
// (CreateProvidersFromConstraints polls for 10 s before it refuses the pod).
const rangesWait = 10 * time.Second

// sccAdmission plays OpenShift's SCC admission for pods (sccadmission/admission.go,
// computeSecurityContext): it tries the SCCs in order (sccs), skipping those that neither the
// user who creates the pod nor the pod's ServiceAccount may use; the first whose defaults
// validate admits the pod, annotated with its name; when none does, the pod is refused with every
// SCC's errors.
type sccAdmission struct {
	// namespaces reads the pod's namespace (its SCC ranges) uncached.
	namespaces client.Reader
	// reviews creates the SubjectAccessReviews that say who may use an SCC.
	reviews client.Writer
}

func (a *sccAdmission) Handle(ctx context.Context, req admission.Request) admission.Response {
	pod := &corev1.Pod{}
	if err := json.Unmarshal(req.Object.Raw, pod); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	ranges, err := a.ranges(ctx, req.Namespace)
	if err != nil {
		return admission.Denied(fmt.Sprintf("error fetching namespace %q: %v", req.Namespace, err))
	}
	var errs []string
	for _, s := range sccs {
		if !a.usable(ctx, s.name, req.Namespace, req.UserInfo, pod.Spec.ServiceAccountName) {
			errs = append(errs, notUsable(s.name))
			continue
		}
		admitted := pod.DeepCopy()
		s.defaults(ranges, admitted)
		if refused := s.validate(ranges, admitted); len(refused) > 0 {
			errs = append(errs, refused...)
			continue
		}
		if admitted.Annotations == nil {
			admitted.Annotations = map[string]string{}
		}
		admitted.Annotations[AnnotationValidatedSCC] = s.name
		out, err := json.Marshal(admitted)
		if err != nil {
			return admission.Errored(http.StatusInternalServerError, err)
		}
		return admission.PatchResponseFromRaw(req.Object.Raw, out)
	}
	return admission.Denied(refusal(errs))
}

// usable reports whether the user who creates the pod or the pod's ServiceAccount may use the
// SCC in the namespace: verb use on the securitycontextconstraints of that name, asked of the API
// server's authorizer as sccmatching.ConstraintAppliesTo asks it (the SCCs' own users and groups
// lists are empty). The ServiceAccount is the pod's serviceAccountName, "default" when empty (the
// ServiceAccount admission plugin, which envtest disables, sets it before the SCC admission runs
// on OpenShift), asked about as serviceaccount.UserInfo describes it: its user name and its two
// service-account groups, without system:authenticated. A review that fails counts as a no, as
// there.
func (a *sccAdmission) usable(ctx context.Context, scc, namespace string, user authenticationv1.UserInfo, serviceAccount string) bool {
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sa := serviceaccount.UserInfo(namespace, cmp.Or(serviceAccount, "default"), "")
	subjects := []authorizationv1.SubjectAccessReviewSpec{
		{User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra},
		{User: sa.GetName(), Groups: sa.GetGroups()},
	}
	for _, spec := range subjects {
		spec.ResourceAttributes = &authorizationv1.ResourceAttributes{
			Namespace: namespace, Verb: "use", Group: SCCGroup, Resource: "securitycontextconstraints", Name: scc,
		}
		review := &authorizationv1.SubjectAccessReview{Spec: spec}
		if err := a.reviews.Create(ctx, review); err != nil {
			log.FromContext(ctx).Error(err, "Cannot authorize for SCC", "scc", scc, "user", spec.User)
			continue
		}
		if review.Status.Allowed {
			return true
		}
	}
	return false
}

// ranges reads the namespace's SCC annotations, waiting for the allocation controller as the real
// admission does.
func (a *sccAdmission) ranges(ctx context.Context, namespace string) (sccRanges, error) {
	var r sccRanges
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, rangesWait, true, func(ctx context.Context) (bool, error) {
		r, last = a.readRanges(ctx, namespace)
		return last == nil, nil
	})
	if err != nil && last != nil {
		return r, last
	}
	return r, err
}

func (a *sccAdmission) readRanges(ctx context.Context, namespace string) (sccRanges, error) {
	ns := &corev1.Namespace{}
	if err := a.namespaces.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
		return sccRanges{}, err
	}
	return parseRanges(ns.Annotations)
}

// sccWebhook is the webhook server and its registration.
type sccWebhook struct {
	server ctrlwebhook.Server
	port   int
	ca     []byte
}

// newSCCWebhook prepares a TLS webhook server on loopback with a certificate of its own CA; the
// admission reads namespaces with one client and creates SubjectAccessReviews with the other.
func newSCCWebhook(dir string, namespaces client.Reader, reviews client.Writer) (*sccWebhook, error) {
	now := time.Now()
	ca, err := pki.GenerateCA("testbed webhook CA", now, 24*time.Hour)
	if err != nil {
		return nil, err
	}
	leaf, err := pki.GenerateLeaf(ca, "127.0.0.1", []string{"127.0.0.1"}, now, 24*time.Hour)
	if err != nil {
		return nil, err
	}
	certDir := filepath.Join(dir, "webhook")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return nil, err
	}
	if err := errors.Join(
		os.WriteFile(filepath.Join(certDir, "tls.crt"), leaf.CertPEM, 0o600),
		os.WriteFile(filepath.Join(certDir, "tls.key"), leaf.KeyPEM, 0o600),
	); err != nil {
		return nil, err
	}
	port, err := testenv.FreePort()
	if err != nil {
		return nil, err
	}
	srv := ctrlwebhook.NewServer(ctrlwebhook.Options{Host: "127.0.0.1", Port: port, CertDir: certDir})
	srv.Register("/scc", &admission.Webhook{Handler: &sccAdmission{namespaces: namespaces, reviews: reviews}})
	return &sccWebhook{server: srv, port: port, ca: ca.CertPEM}, nil
}

// configuration is the MutatingWebhookConfiguration that sends every pod creation to the webhook;
// a webhook that does not answer refuses the pod (failurePolicy Fail), as the SCC admission
// plugin compiled into OpenShift's API server never lets a pod through unchecked.
func (w *sccWebhook) configuration() *admissionregistrationv1.MutatingWebhookConfiguration {
	url := "https://127.0.0.1:" + strconv.Itoa(w.port) + "/scc"
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: sccWebhookName},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    sccWebhookName,
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: w.ca},
			AdmissionReviewVersions: []string{"v1"},
			SideEffects:             new(admissionregistrationv1.SideEffectClassNone),
			FailurePolicy:           new(admissionregistrationv1.Fail),
			ReinvocationPolicy:      new(admissionregistrationv1.IfNeededReinvocationPolicy),
			TimeoutSeconds:          new(int32(15)),
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{
					APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"},
				},
			}},
		}},
	}
}

// uidBlockSize and firstUID are the allocation controller's defaults: blocks of 10,000 UIDs from
// 1,000,000,000 on.
const (
	uidBlockSize = 10000
	firstUID     = 1000000000
)

// rangeAllocator plays the namespace SCC allocation controller of cluster-policy-controller: every
// namespace gets a UID block (uid-range and supplemental-groups) and an MCS level.
type rangeAllocator struct {
	mu   sync.Mutex
	next int64
}

// annotations are the next namespace's SCC annotations.
func (a *rangeAllocator) annotations() map[string]string {
	a.mu.Lock()
	n := a.next
	a.next++
	a.mu.Unlock()
	block := fmt.Sprintf("%d/%d", firstUID+n*uidBlockSize, uidBlockSize)
	// Two distinct categories per namespace (the second is always below 500, the first never), as
	// the controller's MCS allocation gives.
	return map[string]string{
		AnnotationUIDRange:           block,
		AnnotationSupplementalGroups: block,
		AnnotationMCS:                fmt.Sprintf("s0:c%d,c%d", 500+n/500, n%500),
	}
}
