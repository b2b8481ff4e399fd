package app_test

import (
	"fmt"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/render"
)

// The suite's allow-lists (suiteOptions): Ingress hosts "*.example.com" and
// "*.{namespace}.tenants.test", ClusterIssuers "letsencrypt" and "le". An app outside them is
// refused before anything is written: a specific reason, a Warning Event, no retry, and not one
// push request reaches the Git server. An allowed spec brings the app back.
func TestIngressHostAndIssuerOutsideTheAllowListsAreRefused(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	cases := []struct {
		name    string
		ingress kubeoperav1alpha1.IngressSpec
		reason  string
		message string
	}{
		{name: "host-elsewhere", ingress: kubeoperav1alpha1.IngressSpec{Host: "shop.example.org"},
			reason: kubeoperav1alpha1.ReasonIngressHostNotAllowed, message: `spec.ingress.host "shop.example.org" is not in --app-allowed-ingress-hosts`},
		{name: "host-the-domain", ingress: kubeoperav1alpha1.IngressSpec{Host: "example.com"},
			reason: kubeoperav1alpha1.ReasonIngressHostNotAllowed, message: `"example.com"`},
		{name: "wildcard-broader", ingress: kubeoperav1alpha1.IngressSpec{Host: "*.com"},
			reason: kubeoperav1alpha1.ReasonIngressHostNotAllowed, message: `"*.com"`},
		{name: "other-namespace", ingress: kubeoperav1alpha1.IngressSpec{Host: "web.another-cloudspace.tenants.test"},
			reason: kubeoperav1alpha1.ReasonIngressHostNotAllowed, message: `"web.another-cloudspace.tenants.test"`},
		{name: "issuer-elsewhere", ingress: kubeoperav1alpha1.IngressSpec{Host: "shop.example.com", TLS: true, ClusterIssuer: "internal-ca"},
			reason: kubeoperav1alpha1.ReasonClusterIssuerNotAllowed, message: `spec.ingress.clusterIssuer "internal-ca" is not in --app-allowed-cluster-issuers (letsencrypt,le)`},
	}
	for _, tc := range cases {
		f.create(f.newApp(tc.name, "t1", func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.TargetNamespace = f.ns + "-" + tc.name
			a.Spec.Ingress = tc.ingress.DeepCopy()
		}))
	}
	for _, tc := range cases {
		a := f.waitCondition(tc.name, kubeoperav1alpha1.ConditionManifestsCommitted, metav1.ConditionFalse, tc.reason)
		f.waitCondition(tc.name, kubeoperav1alpha1.ConditionReady, metav1.ConditionFalse, tc.reason)
		f.g.Expect(conditionMessage(a, kubeoperav1alpha1.ConditionManifestsCommitted)).To(ContainSubstring(tc.message), tc.name)
		f.waitCondition(tc.name, kubeoperav1alpha1.ConditionStalled, metav1.ConditionTrue, tc.reason)
		f.waitEvent(tc.name, corev1.EventTypeWarning, tc.reason)
		f.g.Expect(a.Status.Path).To(BeEmpty(), "%s was placed", tc.name)
	}
	// Terminal: a poke is one pass, which pushes nothing either.
	f.pokeAndWait("host-elsewhere")
	f.g.Expect(gitServer.Pushes(f.repo)).To(BeZero(), "a refused app pushed")
	for _, tc := range cases {
		f.g.Expect(f.vc(&corev1.Namespace{}, "", f.ns+"-"+tc.name)).To(BeFalse(), "%s wrote to the vCluster", tc.name)
	}

	// Allowed: a name below *.example.com, and one below the app's own namespace's domain.
	f.update("host-elsewhere", func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Ingress.Host = "shop.example.com" })
	f.update("other-namespace", func(a *kubeoperav1alpha1.KubeOperaApp) {
		a.Spec.Ingress.Host = fmt.Sprintf("web.%s.tenants.test", f.ns)
	})
	f.update("issuer-elsewhere", func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Ingress.ClusterIssuer = "letsencrypt" })
	for _, name := range []string{"host-elsewhere", "other-namespace", "issuer-elsewhere"} {
		a := f.waitReady(name)
		f.g.Expect(f.files(a.Status.Path)).To(HaveKey(render.FileIngress))
	}
	f.g.Expect(gitServer.Pushes(f.repo)).To(BeNumerically(">", 0))
}

// Synced waits for what makes the app reachable at status.url, not only for Flux: the Ingress's
// load-balancer address, then the cert-manager Certificate of its TLS Secret. Neither Flux, an
// ingress controller nor cert-manager runs in the suite: the test applies the Ingress as Flux
// would, writes the status.loadBalancer an ingress controller writes (vcluster syncs it back to
// the vCluster's Ingress), and creates the Certificate with the status cert-manager's
// ingress-shim and issuing controllers write. The suite's Synced poll is an hour and the test
// never pokes the app: each step reaches it through the vCluster watches.
func TestSyncedWaitsForTheIngressAddressAndItsCertificate(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	f.create(f.newApp("web", "t1", func(a *kubeoperav1alpha1.KubeOperaApp) {
		a.Spec.TargetNamespace = f.ns
		a.Spec.Ingress = &kubeoperav1alpha1.IngressSpec{Host: "web.example.com", TLS: true, ClusterIssuer: "letsencrypt"}
	}))
	a := f.waitReady("web")
	revision := "main@sha1:" + a.Status.Commit

	// Flux applies the folder and reports it: the Ingress exists, without an address.
	applyAsFlux(f, render.Ingress(a))
	setKustomizationStatus(f, render.FluxName(a), revision, metav1.ConditionTrue, "ReconciliationSucceeded", "Applied revision: "+revision)
	a = f.waitCondition("web", kubeoperav1alpha1.ConditionSynced, metav1.ConditionFalse, kubeoperav1alpha1.ReasonIngressAddressPending)
	f.g.Expect(conditionMessage(a, kubeoperav1alpha1.ConditionSynced)).To(ContainSubstring("has no load-balancer address"))
	f.g.Expect(a.Status.AppliedRevision).To(Equal(revision))
	f.g.Expect(a.Status.URL).To(Equal("https://web.example.com"))
	f.waitCondition("web", kubeoperav1alpha1.ConditionReconciling, metav1.ConditionTrue, kubeoperav1alpha1.ReasonIngressAddressPending)

	// cert-manager's ingress-shim creates the Certificate of the TLS Secret; it is being issued.
	secret := render.TLSSecretName(a)
	createCertificate(f, f.ns, secret, "web.example.com")
	setCertificateReady(f, f.ns, secret, metav1.ConditionFalse, "DoesNotExist", "Issuing certificate as Secret does not exist")
	// The ingress controller admits the Ingress.
	setIngressAddress(f, f.ns, "web", "203.0.113.10")
	a = f.waitCondition("web", kubeoperav1alpha1.ConditionSynced, metav1.ConditionFalse, kubeoperav1alpha1.ReasonCertificateNotReady)
	f.g.Expect(conditionMessage(a, kubeoperav1alpha1.ConditionSynced)).To(ContainSubstring("DoesNotExist"))

	// Issued.
	setCertificateReady(f, f.ns, secret, metav1.ConditionTrue, "Ready", "Certificate is up to date and has not expired")
	a = f.waitCondition("web", kubeoperav1alpha1.ConditionSynced, metav1.ConditionTrue, kubeoperav1alpha1.ReasonSucceeded)
	f.g.Expect(conditionMessage(a, kubeoperav1alpha1.ConditionSynced)).To(ContainSubstring("203.0.113.10"))
	f.g.Expect(findCondition(a, kubeoperav1alpha1.ConditionReconciling)).To(BeNil())
	f.g.Expect(a.Status.ObservedGeneration).To(Equal(a.Generation))

	// A renewal that fails takes Synced back.
	setCertificateReady(f, f.ns, secret, metav1.ConditionFalse, "Failed", "The certificate request has failed to complete")
	f.waitCondition("web", kubeoperav1alpha1.ConditionSynced, metav1.ConditionFalse, kubeoperav1alpha1.ReasonCertificateNotReady)
}

// A wildcard host answers for every name below its domain, none of which is the app's one
// address: a Synced app with one has no status.url (not "https://*.example.com", not the bare
// domain, which the Ingress does not serve).
func TestWildcardHostIsSyncedWithoutURL(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	f.create(f.newApp("wild", "t1", func(a *kubeoperav1alpha1.KubeOperaApp) {
		a.Spec.TargetNamespace = f.ns
		a.Spec.Ingress = &kubeoperav1alpha1.IngressSpec{Host: "*.wild.example.com"}
	}))
	a := f.waitReady("wild")
	revision := "main@sha1:" + a.Status.Commit
	applyAsFlux(f, render.Ingress(a))
	setIngressAddress(f, f.ns, "wild", "203.0.113.11")
	setKustomizationStatus(f, render.FluxName(a), revision, metav1.ConditionTrue, "ReconciliationSucceeded", "Applied revision: "+revision)
	a = f.waitCondition("wild", kubeoperav1alpha1.ConditionSynced, metav1.ConditionTrue, kubeoperav1alpha1.ReasonSucceeded)
	f.g.Expect(a.Status.URL).To(BeEmpty())
	f.g.Expect(f.files(a.Status.Path)[render.FileIngress]).To(ContainSubstring(`host: '*.wild.example.com'`))
}

// A vCluster where cert-manager is installed after the operator first built its client: the
// Certificate watch that could not start then is retried, so a Certificate's status reaches the
// app without a poll (an hour in the suite) and without a poke. Until then there is no
// Certificate to wait for: the app is Synced once its Ingress has an address.
func TestCertificateWatchStartsOnceCertManagerIsInstalled(t *testing.T) {
	requireSuite(t)
	fluxCRDs, certManagerCRDs := vclusterCRDDirs(t)
	// A vCluster of its own, with Flux and without cert-manager.
	bare, kubeconfig := ownVCluster(t, "vcluster without cert-manager", fluxCRDs)
	f := newFixture(t)
	f.addTenantIn("no-cm", kubeconfig)
	f.create(f.newApp("web", "no-cm", func(a *kubeoperav1alpha1.KubeOperaApp) {
		a.Spec.TargetNamespace = "web"
		a.Spec.Ingress = &kubeoperav1alpha1.IngressSpec{Host: "web.example.com", TLS: true, ClusterIssuer: "letsencrypt"}
	}))
	a := f.waitReady("web")
	f.g.Expect(reconciler.WatchesVClusterKind(f.ns, "no-cm", "Ingress")).To(BeTrue())
	f.g.Expect(reconciler.WatchesVClusterKind(f.ns, "no-cm", "Certificate")).To(BeFalse(), "the Certificate kind is not served")

	// Flux applied, the ingress controller admitted: no cert-manager, nothing more to wait for.
	revision := "main@sha1:" + a.Status.Commit
	ing := render.Ingress(a)
	f.g.Expect(bare.Client.Create(f.ctx, ing)).To(Succeed())
	ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "203.0.113.12"}}
	f.g.Expect(bare.Client.Status().Update(f.ctx, ing)).To(Succeed())
	f.g.Eventually(func() error {
		return setKustomizationStatusIn(f, bare.Client, render.FluxName(a), revision)
	}).Should(Succeed())
	f.waitCondition("web", kubeoperav1alpha1.ConditionSynced, metav1.ConditionTrue, kubeoperav1alpha1.ReasonSucceeded)

	// cert-manager arrives and issues a Certificate for the Ingress: only the Certificate watch,
	// started once the kind is served, can tell the app.
	_, err := envtest.InstallCRDs(bare.Config, envtest.CRDInstallOptions{Paths: []string{certManagerCRDs}})
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Eventually(func() bool { return reconciler.WatchesVClusterKind(f.ns, "no-cm", "Certificate") }).Should(BeTrue())
	cert := certificate("web", render.TLSSecretName(a), "web.example.com")
	f.g.Expect(bare.Client.Create(f.ctx, cert)).To(Succeed())
	f.g.Expect(unstructured.SetNestedSlice(cert.Object, []any{certificateCondition(metav1.ConditionFalse, "Issuing", "Issuing certificate as Secret does not exist", cert.GetGeneration())},
		"status", "conditions")).To(Succeed())
	f.g.Expect(bare.Client.Status().Update(f.ctx, cert)).To(Succeed())
	f.waitCondition("web", kubeoperav1alpha1.ConditionSynced, metav1.ConditionFalse, kubeoperav1alpha1.ReasonCertificateNotReady)
}

// applyAsFlux creates obj in the vCluster, as Flux applies it from the app's folder.
func applyAsFlux(f *fixture, obj client.Object) {
	f.t.Helper()
	f.g.Expect(vcluster.Client.Create(f.ctx, obj)).To(Succeed())
}

// setIngressAddress writes the status an ingress controller writes once it serves the Ingress
// (vcluster syncs it from the host's Ingress back to the vCluster's).
func setIngressAddress(f *fixture, ns, name, ip string) {
	f.t.Helper()
	f.g.Eventually(func() error {
		ing := &networkingv1.Ingress{}
		if err := vcluster.Client.Get(f.ctx, client.ObjectKey{Namespace: ns, Name: name}, ing); err != nil {
			return err
		}
		ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: ip}}
		return vcluster.Client.Status().Update(f.ctx, ing)
	}).Should(Succeed())
}

// certificate is the Certificate cert-manager's ingress-shim creates for an Ingress's TLS block:
// named after the Secret, for the Ingress's host, issued by the annotated ClusterIssuer.
func certificate(ns, secret, host string) *unstructured.Unstructured {
	c := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cert-manager.io/v1",
		"kind":       "Certificate",
		"metadata":   map[string]any{"namespace": ns, "name": secret},
		"spec": map[string]any{
			"secretName": secret,
			"dnsNames":   []any{host},
			"usages":     []any{"digital signature", "key encipherment"},
			"issuerRef":  map[string]any{"name": "letsencrypt", "kind": "ClusterIssuer", "group": "cert-manager.io"},
		},
	}}
	return c
}

// certificateCondition is the Ready condition cert-manager writes.
func certificateCondition(status metav1.ConditionStatus, reason, message string, generation int64) map[string]any {
	return map[string]any{
		"type": "Ready", "status": string(status), "reason": reason, "message": message,
		"lastTransitionTime": time.Now().UTC().Format(time.RFC3339), "observedGeneration": generation,
	}
}

func createCertificate(f *fixture, ns, secret, host string) {
	f.t.Helper()
	f.g.Expect(vcluster.Client.Create(f.ctx, certificate(ns, secret, host))).To(Succeed())
}

// setCertificateReady writes the Ready condition cert-manager writes on the Certificate.
func setCertificateReady(f *fixture, ns, name string, status metav1.ConditionStatus, reason, message string) {
	f.t.Helper()
	f.g.Eventually(func() error {
		c := &unstructured.Unstructured{}
		c.SetAPIVersion("cert-manager.io/v1")
		c.SetKind("Certificate")
		if err := vcluster.Client.Get(f.ctx, client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
			return err
		}
		if err := unstructured.SetNestedSlice(c.Object, []any{certificateCondition(status, reason, message, c.GetGeneration())}, "status", "conditions"); err != nil {
			return err
		}
		return vcluster.Client.Status().Update(f.ctx, c)
	}).Should(Succeed())
}

// setKustomizationStatusIn writes, through c, the status Flux writes once it applied revision.
func setKustomizationStatusIn(f *fixture, c client.Client, name, revision string) error {
	ks := &kustomizev1.Kustomization{}
	if err := c.Get(f.ctx, client.ObjectKey{Namespace: "flux-system", Name: name}, ks); err != nil {
		return err
	}
	ks.Status.ObservedGeneration = ks.Generation
	ks.Status.LastAppliedRevision, ks.Status.LastAttemptedRevision = revision, revision
	ks.Status.Conditions = []metav1.Condition{{
		Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: "ReconciliationSucceeded",
		Message: "Applied revision: " + revision, LastTransitionTime: metav1.Now(), ObservedGeneration: ks.Generation,
	}}
	return c.Status().Update(f.ctx, ks)
}
