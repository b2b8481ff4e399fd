package testbed

import (
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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/kubeopera/kubeopera-operator/internal/pki"
	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

// sccWebhookName names the MutatingWebhookConfiguration and its one webhook.
const sccWebhookName = "restricted-v2.scc.testbed.kubeopera.io"

// rangesWait is how long the SCC admission waits for a new namespace's annotations
// (CreateProvidersFromConstraints polls for 10 s before it refuses the pod).
const rangesWait = 10 * time.Second

// sccAdmission plays OpenShift's SCC admission for pods: it defaults and validates every pod
// against restricted-v2 with the ranges of the pod's namespace.
type sccAdmission struct {
	c client.Reader
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
	defaultRestrictedV2(ranges, pod)
	if errs := validateRestrictedV2(ranges, pod); len(errs) > 0 {
		return admission.Denied(refusal(errs))
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[AnnotationValidatedSCC] = restrictedV2
	out, err := json.Marshal(pod)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, out)
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
	if err := a.c.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
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

// newSCCWebhook prepares a TLS webhook server on loopback with a certificate of its own CA.
func newSCCWebhook(dir string, c client.Reader) (*sccWebhook, error) {
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
	srv.Register("/scc", &admission.Webhook{Handler: &sccAdmission{c: c}})
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
