package app

import (
	"errors"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/outcome"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

func TestIngressHostAllowed(t *testing.T) {
	list := []string{"*.apps.example.com", "shop.example.org", "*.{namespace}.tenants.example.com"}
	cases := []struct {
		allowed []string
		host    string
		want    bool
	}{
		{nil, "anything.example.net", true},
		{nil, "*.com", true},
		{list, "web.apps.example.com", true},
		{list, "a.b.apps.example.com", true},
		{list, "WEB.Apps.Example.com.", true},
		{list, "apps.example.com", false},            // the domain itself is not below it
		{list, "evilapps.example.com", false},        // a suffix, not a label boundary
		{list, "*.team.apps.example.com", true},      // answers only for names below the entry
		{list, "*.apps.example.com", true},           // answers for exactly the names the entry allows
		{list, "*.example.com", false},               // answers for names the entry does not allow
		{list, "shop.example.org", true},             // exact
		{list, "www.shop.example.org", false},        // an exact entry allows nothing below it
		{list, "*.shop.example.org", false},          // nor a wildcard of it
		{list, "web.cs-1.tenants.example.com", true}, // {namespace} is the app's
		{list, "web.cs-2.tenants.example.com", false},
		{list, "web.tenants.example.com", false},
	}
	for _, tc := range cases {
		if got := ingressHostAllowed(tc.allowed, "cs-1", tc.host); got != tc.want {
			t.Errorf("ingressHostAllowed(%q, %q) = %v, want %v", tc.allowed, tc.host, got, tc.want)
		}
	}
}

func TestCheckIngress(t *testing.T) {
	g := NewWithT(t)
	r := &Reconciler{Options: Options{AllowedIngressHosts: []string{"*.example.com"}, AllowedClusterIssuers: []string{"letsencrypt"}}}
	with := func(in *kubeoperav1alpha1.IngressSpec) *kubeoperav1alpha1.KubeOperaApp {
		return testfixture.KubeOperaApp(func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Ingress = in })
	}
	g.Expect(r.checkIngress(with(nil))).To(Succeed())
	g.Expect(r.checkIngress(with(&kubeoperav1alpha1.IngressSpec{Host: "web.example.com", TLS: true, ClusterIssuer: "letsencrypt"}))).To(Succeed())
	// The issuer is rendered only with TLS: without it, any name is inert.
	g.Expect(r.checkIngress(with(&kubeoperav1alpha1.IngressSpec{Host: "web.example.com", ClusterIssuer: "internal-ca"}))).To(Succeed())

	err := r.checkIngress(with(&kubeoperav1alpha1.IngressSpec{Host: "web.example.org"}))
	g.Expect(err).To(MatchError(errIngressHostNotAllowed))
	var se *outcome.Error
	g.Expect(errors.As(ingressError(err), &se)).To(BeTrue())
	g.Expect(se.Reason).To(Equal(kubeoperav1alpha1.ReasonIngressHostNotAllowed))
	g.Expect(se.Next).To(Equal(outcome.WaitForChange))

	err = r.checkIngress(with(&kubeoperav1alpha1.IngressSpec{Host: "web.example.com", TLS: true, ClusterIssuer: "internal-ca"}))
	g.Expect(err).To(MatchError(errClusterIssuerNotAllowed))
	g.Expect(errors.As(ingressError(err), &se)).To(BeTrue())
	g.Expect(se.Reason).To(Equal(kubeoperav1alpha1.ReasonClusterIssuerNotAllowed))
	g.Expect(se.Next).To(Equal(outcome.WaitForChange))

	// Empty lists allow any host and issuer.
	open := &Reconciler{}
	g.Expect(open.checkIngress(with(&kubeoperav1alpha1.IngressSpec{Host: "*.com", TLS: true, ClusterIssuer: "anything"}))).To(Succeed())
}

func TestCertificateReadiness(t *testing.T) {
	cert := func(generation int64, conds ...any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": conds}}}
		u.SetName("web-tls")
		u.SetGeneration(generation)
		return u
	}
	ready := func(status string, gen int64) map[string]any {
		return map[string]any{"type": "Ready", "status": status, "reason": "R", "message": "m", "observedGeneration": gen}
	}
	cases := []struct {
		name string
		cert *unstructured.Unstructured
		want bool
	}{
		{"no conditions", cert(1), false},
		{"Ready True", cert(2, ready("True", 2)), true},
		{"Ready True of an older generation", cert(2, ready("True", 1)), false},
		{"Ready True without observedGeneration", cert(2, map[string]any{"type": "Ready", "status": "True"}), true},
		{"Ready False", cert(1, ready("False", 1)), false},
		{"only Issuing", cert(1, map[string]any{"type": "Issuing", "status": "True"}), false},
	}
	for _, tc := range cases {
		if got := certificateReadiness(tc.cert); got.ready != tc.want || got.name != "web-tls" {
			t.Errorf("%s: ready %v (name %q), want %v", tc.name, got.ready, got.name, tc.want)
		}
	}
}

// Once Flux applied the commit, Synced waits for the Ingress's address, then its Certificate.
// While Flux re-applies the same revision (Ready Unknown at every interval), a decision taken
// after the apply is kept: IngressAddressPending does not flap to RevisionNotApplied and back.
func TestSyncedWaitsForTheIngress(t *testing.T) {
	const commit = "1111111111111111111111111111111111111111"
	flux := func(s metav1.ConditionStatus) *kustomizev1.Kustomization {
		return &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Generation: 1}, Status: kustomizev1.KustomizationStatus{
			ObservedGeneration: 1, LastAppliedRevision: "main@sha1:" + commit,
			Conditions: []metav1.Condition{{Type: meta.ReadyCondition, Status: s, Reason: "R", Message: "m"}},
		}}
	}
	issuing := &certificateState{name: "web-tls", reason: "Issuing", message: "Issuing certificate as Secret does not exist"}
	cases := []struct {
		name      string
		flux      metav1.ConditionStatus
		before    string // Synced's reason before the pass ("" none, Succeeded: True)
		exp       exposure
		want      metav1.ConditionStatus
		reason    string
		wantAfter time.Duration
	}{
		{"no Ingress", metav1.ConditionTrue, "", exposure{}, metav1.ConditionTrue, kubeoperav1alpha1.ReasonSucceeded, DefaultResyncInterval},
		{"Ingress without an address", metav1.ConditionTrue, "", exposure{ingress: true},
			metav1.ConditionFalse, kubeoperav1alpha1.ReasonIngressAddressPending, DefaultSyncPollInterval},
		{"address, no cert-manager", metav1.ConditionTrue, "", exposure{ingress: true, address: "203.0.113.10"},
			metav1.ConditionTrue, kubeoperav1alpha1.ReasonSucceeded, DefaultResyncInterval},
		{"address, Certificate issuing", metav1.ConditionTrue, "", exposure{ingress: true, address: "lb.example.net", certificate: issuing},
			metav1.ConditionFalse, kubeoperav1alpha1.ReasonCertificateNotReady, DefaultSyncPollInterval},
		{"address, Certificate Ready", metav1.ConditionTrue, "", exposure{ingress: true, address: "lb.example.net", certificate: &certificateState{ready: true}},
			metav1.ConditionTrue, kubeoperav1alpha1.ReasonSucceeded, DefaultResyncInterval},
		{"no address, Certificate issuing: the address first", metav1.ConditionTrue, "", exposure{ingress: true, certificate: issuing},
			metav1.ConditionFalse, kubeoperav1alpha1.ReasonIngressAddressPending, DefaultSyncPollInterval},
		{"Flux re-applying while waiting for the address", metav1.ConditionUnknown, kubeoperav1alpha1.ReasonIngressAddressPending, exposure{ingress: true},
			metav1.ConditionFalse, kubeoperav1alpha1.ReasonIngressAddressPending, DefaultSyncPollInterval},
		{"Flux re-applying while the Certificate is issued", metav1.ConditionUnknown, kubeoperav1alpha1.ReasonCertificateNotReady, exposure{ingress: true, address: "a", certificate: issuing},
			metav1.ConditionFalse, kubeoperav1alpha1.ReasonCertificateNotReady, DefaultSyncPollInterval},
		{"Flux re-applying when the address arrives", metav1.ConditionUnknown, kubeoperav1alpha1.ReasonIngressAddressPending, exposure{ingress: true, address: "a"},
			metav1.ConditionTrue, kubeoperav1alpha1.ReasonSucceeded, DefaultResyncInterval},
		{"Flux applying for the first time", metav1.ConditionUnknown, "", exposure{ingress: true, address: "a"},
			metav1.ConditionFalse, kubeoperav1alpha1.ReasonRevisionNotApplied, DefaultSyncPollInterval},
		{"Flux failing: the Ingress is not looked at", metav1.ConditionFalse, kubeoperav1alpha1.ReasonIngressAddressPending, exposure{ingress: true},
			metav1.ConditionFalse, kubeoperav1alpha1.ReasonKustomizationNotReady, DefaultSyncPollInterval},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			tr := newTestReconciler(t, nil)
			a := testfixture.KubeOperaApp(func(a *kubeoperav1alpha1.KubeOperaApp) {
				a.Status.Commit = commit
				a.Spec.App.Ports = []kubeoperav1alpha1.AppPort{{Name: "http", ContainerPort: 8080}}
				a.Spec.Ingress = &kubeoperav1alpha1.IngressSpec{Host: "web.example.com", TLS: true, ClusterIssuer: "letsencrypt"}
				if tc.before != "" {
					status := metav1.ConditionFalse
					if tc.before == kubeoperav1alpha1.ReasonSucceeded {
						status = metav1.ConditionTrue
					}
					apimeta.SetStatusCondition(&a.Status.Conditions, metav1.Condition{Type: kubeoperav1alpha1.ConditionSynced,
						Status: status, Reason: tc.before, Message: "before"})
				}
			})
			res := tr.setSynced(&scope{app: a, kustomization: flux(tc.flux)}, 1, tc.exp, true, "")
			c := apimeta.FindStatusCondition(a.Status.Conditions, kubeoperav1alpha1.ConditionSynced)
			g.Expect(c.Status).To(Equal(tc.want), c.Message)
			g.Expect(c.Reason).To(Equal(tc.reason), c.Message)
			g.Expect(res.RequeueAfter).To(Equal(tc.wantAfter))
			g.Expect(a.Status.URL).To(Equal("https://web.example.com"))
		})
	}
}
