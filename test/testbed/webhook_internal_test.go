package testbed

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// replicaSetController is who creates a Deployment's pods: the controller manager's replicaset
// controller, acting as its own ServiceAccount.
var replicaSetController = authenticationv1.UserInfo{
	Username: "system:serviceaccount:kube-system:replicaset-controller",
	Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"},
}

// authorizer answers the admission's SubjectAccessReviews from a list of "user scc" grants and
// records what was asked.
type authorizer struct {
	grants []string
	asked  []authorizationv1.SubjectAccessReviewSpec
}

func (a *authorizer) admission(t *testing.T) *sccAdmission {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", Annotations: testRanges}}
	c := fake.NewClientBuilder().WithObjects(ns).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
			review := obj.(*authorizationv1.SubjectAccessReview)
			a.asked = append(a.asked, review.Spec)
			for _, g := range a.grants {
				if g == review.Spec.User+" "+review.Spec.ResourceAttributes.Name {
					review.Status.Allowed = true
				}
			}
			return nil
		},
	}).Build()
	return &sccAdmission{namespaces: c, reviews: c}
}

// admit sends the pod to the admission as the replicaset controller creates it in namespace ns,
// and returns the SCC that admitted it ("" when refused) with the answer's message.
func admit(t *testing.T, a *sccAdmission, pod *corev1.Pod) (scc, message string) {
	t.Helper()
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	resp := a.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Namespace: "ns", Operation: admissionv1.Create, UserInfo: replicaSetController, Object: runtime.RawExtension{Raw: raw},
	}})
	if !resp.Allowed {
		return "", resp.Result.Message
	}
	for _, p := range resp.Patches {
		switch p.Path {
		case "/metadata/annotations":
			return p.Value.(map[string]any)[AnnotationValidatedSCC].(string), ""
		case "/metadata/annotations/openshift.io~1scc":
			return p.Value.(string), ""
		}
	}
	t.Fatalf("admitted without the %s annotation: %v", AnnotationValidatedSCC, resp.Patches)
	return "", ""
}

func TestSCCAdmissionTriesRestrictedV2ThenNonrootV2(t *testing.T) {
	const sa = "system:serviceaccount:ns:image-user"
	authz := &authorizer{grants: []string{replicaSetController.Username + " restricted-v2"}}
	a := authz.admission(t)

	// A pod that sets no IDs: restricted-v2, the first usable SCC, admits it; nothing else is asked.
	if scc, msg := admit(t, a, bareSCCPod()); scc != "restricted-v2" {
		t.Fatalf("a bare pod: admitted by %q (%s), want restricted-v2", scc, msg)
	}
	want := authorizationv1.ResourceAttributes{
		Namespace: "ns", Verb: "use", Group: "security.openshift.io", Resource: "securitycontextconstraints", Name: "restricted-v2",
	}
	if len(authz.asked) != 1 || authz.asked[0].User != replicaSetController.Username || *authz.asked[0].ResourceAttributes != want {
		t.Fatalf("asked %+v, want one review of %+v for the pod's creator", authz.asked, want)
	}

	// The image's user, 10000, under a ServiceAccount that may not use nonroot-v2: refused with
	// every SCC's errors, in the order they were tried.
	imageUser := imageUserPod(new(true))
	imageUser.Spec.ServiceAccountName = "image-user"
	authz.asked = nil
	scc, msg := admit(t, a, imageUser)
	if scc != "" {
		t.Fatalf("the image's user without a grant: admitted by %s", scc)
	}
	restricted := strings.Index(msg, "provider restricted-v2: .containers[0].runAsUser: Invalid value: 10000: must be in the ranges: [1000680000, 1000689999]")
	nonroot := strings.Index(msg, `provider "nonroot-v2": Forbidden: not usable by user or serviceaccount`)
	if !strings.HasPrefix(msg, "unable to validate against any security context constraint: [") || restricted < 0 || nonroot < restricted {
		t.Fatalf("refusal = %q", msg)
	}
	// nonroot-v2 was asked for the creator, then for the pod's ServiceAccount with its groups.
	if n := len(authz.asked); n != 3 || authz.asked[2].User != sa || authz.asked[2].ResourceAttributes.Name != "nonroot-v2" ||
		strings.Join(authz.asked[2].Groups, ",") != "system:serviceaccounts,system:serviceaccounts:ns" {
		t.Fatalf("asked %+v", authz.asked)
	}

	// Once the ServiceAccount may use nonroot-v2, nonroot-v2 admits the pod; a bare pod under
	// the same ServiceAccount is still restricted-v2's.
	authz.grants = append(authz.grants, sa+" nonroot-v2")
	if scc, msg := admit(t, a, imageUser); scc != "nonroot-v2" {
		t.Fatalf("the image's user with a grant: admitted by %q (%s), want nonroot-v2", scc, msg)
	}
	bare := bareSCCPod()
	bare.Spec.ServiceAccountName = "image-user"
	if scc, msg := admit(t, a, bare); scc != "restricted-v2" {
		t.Fatalf("a bare pod with the grant: admitted by %q (%s), want restricted-v2", scc, msg)
	}

	// A pod that names no ServiceAccount runs as "default".
	authz.asked = nil
	admit(t, a, imageUserPod(new(true)))
	if len(authz.asked) != 3 || authz.asked[2].User != "system:serviceaccount:ns:default" {
		t.Fatalf("asked %+v, want the default ServiceAccount last", authz.asked)
	}
}
