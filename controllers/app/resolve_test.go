package app_test

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenantv1alpha1 "github.com/kubeopera/kubeopera-operator/api/external/tenant/v1alpha1"
	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/apptest"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

func TestResolveByTenantName(t *testing.T) {
	f := newFixture(t)
	now := time.Now()
	f.addTenant("early", now.Add(-time.Hour))
	f.addTenant("named", now)
	f.create(f.newApp("web", "named"))

	a := f.waitReady("web")
	f.g.Expect(a.Status.Tenant).To(Equal(&kubeoperav1alpha1.TenantReference{Namespace: f.ns, Name: "named"}))
	f.g.Expect(a.Finalizers).To(ContainElement(kubeoperav1alpha1.Finalizer))
	f.waitCondition("web", kubeoperav1alpha1.ConditionTenantResolved, metav1.ConditionTrue, kubeoperav1alpha1.ReasonSucceeded)
	f.waitEvent("web", corev1.EventTypeNormal, "TenantSelected")
}

func TestResolveByCloudSpaceTakesEarliestReadyAndPins(t *testing.T) {
	f := newFixture(t)
	now := time.Now()
	f.addTenant("b-second", now.Add(-time.Hour))
	f.addTenant("c-first", now.Add(-2*time.Hour))
	f.addTenant("a-not-ready", time.Time{})
	// Same CloudSpace label in another namespace: never considered.
	otherNS, err := apptest.Namespace(f.ctx, host.Client, "other")
	f.g.Expect(err).NotTo(HaveOccurred())
	err = apptest.CreateTenant(f.ctx, host.Client,
		f.tenant("elsewhere", testfixture.TenantInNamespace(otherNS), testfixture.TenantReady(now.Add(-3*time.Hour))))
	f.g.Expect(err).NotTo(HaveOccurred())

	f.create(f.newApp("legacy", ""))
	a := f.waitReady("legacy")
	f.g.Expect(a.Status.Tenant.Name).To(Equal("c-first"))

	// A Tenant that became Ready even earlier appears: the app stays where it is.
	f.addTenant("d-earliest", now.Add(-3*time.Hour))
	f.update("legacy", func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.App.Image = "ghcr.io/example/legacy:2" })
	a = f.waitReady("legacy")
	f.g.Expect(a.Status.Tenant.Name).To(Equal("c-first"))

	// Naming another Tenant now is refused: an app never moves to another vCluster.
	f.update("legacy", func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.TenantCRName = "d-earliest" })
	a = f.waitCondition("legacy", kubeoperav1alpha1.ConditionTenantResolved, metav1.ConditionFalse, kubeoperav1alpha1.ReasonTenantPinned)
	f.g.Expect(a.Status.Tenant.Name).To(Equal("c-first"))
}

func TestTenantCloudSpaceMismatchIsRefused(t *testing.T) {
	f := newFixture(t)
	foreign := f.tenant("foreign", testfixture.TenantCloudSpace("another-cloudspace"), testfixture.TenantReady(time.Now()))
	err := apptest.CreateTenant(f.ctx, host.Client, foreign)
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(host.Client.Create(f.ctx, apptest.KubeconfigSecret(f.ns, "vc-foreign", vclusterKubeconfig))).To(Succeed())
	f.create(f.newApp("intruder", "foreign"))

	a := f.waitCondition("intruder", kubeoperav1alpha1.ConditionReady, metav1.ConditionFalse, kubeoperav1alpha1.ReasonTenantCloudSpaceMismatch)
	f.g.Expect(a.Status.Tenant).To(BeNil())
	f.waitEvent("intruder", corev1.EventTypeWarning, kubeoperav1alpha1.ReasonTenantCloudSpaceMismatch)
	// Nothing was written anywhere, and it stays that way: a manual retry finds the same (the
	// condition keeps its first transition time, nothing reaches Git), and no retry of its own
	// follows.
	first := apimeta.FindStatusCondition(a.Status.Conditions, kubeoperav1alpha1.ConditionTenantResolved).LastTransitionTime
	f.pokeAndWait("intruder")
	after := passes.of(f.ns, "intruder")
	f.g.Consistently(func(g Gomega) {
		cur := f.get("intruder")
		g.Expect(apimeta.FindStatusCondition(cur.Status.Conditions, kubeoperav1alpha1.ConditionTenantResolved).LastTransitionTime).To(Equal(first))
		g.Expect(f.head()).To(BeEmpty(), "something was pushed")
		g.Expect(passes.of(f.ns, "intruder")).To(BeNumerically("<=", after+1), "retried without a change")
	}, time.Second, 100*time.Millisecond).Should(Succeed())

	// Fixing the Tenant's label (a Tenant event) lets the app through.
	foreign.Labels[tenantv1alpha1.CloudSpaceLabel] = f.cloudSpace
	f.g.Expect(host.Client.Update(f.ctx, foreign)).To(Succeed())
	f.waitReady("intruder")
}

func TestNoReadyTenantWaitsForOne(t *testing.T) {
	f := newFixture(t)
	tn := f.addTenant("starting", time.Time{})
	f.create(f.newApp("early-bird", ""))
	f.waitCondition("early-bird", kubeoperav1alpha1.ConditionTenantResolved, metav1.ConditionFalse, kubeoperav1alpha1.ReasonTenantNotReady)
	f.waitCondition("early-bird", kubeoperav1alpha1.ConditionReady, metav1.ConditionFalse, kubeoperav1alpha1.ReasonTenantNotReady)

	f.g.Expect(apptest.SetTenantReady(f.ctx, host.Client, tn, true, time.Now())).To(Succeed())
	a := f.waitReady("early-bird")
	f.g.Expect(a.Status.Tenant.Name).To(Equal("starting"))
}

func TestTenantNotFound(t *testing.T) {
	f := newFixture(t)
	f.create(f.newApp("orphan", "does-not-exist"))
	f.waitCondition("orphan", kubeoperav1alpha1.ConditionReady, metav1.ConditionFalse, kubeoperav1alpha1.ReasonTenantNotFound)
	// The Tenant appears later: the Tenant watch picks the app up.
	f.addTenant("does-not-exist", time.Now())
	f.waitReady("orphan")
}

func TestBadKubeconfigThenFixed(t *testing.T) {
	f := newFixture(t)
	err := apptest.CreateTenant(f.ctx, host.Client, f.tenant("broken", testfixture.TenantReady(time.Now())))
	f.g.Expect(err).NotTo(HaveOccurred())
	secret := apptest.KubeconfigSecret(f.ns, "vc-broken", []byte("this is: [not a kubeconfig"))
	f.create(f.newApp("app", "broken"))
	// No Secret at all, then an unusable one.
	a := f.waitCondition("app", kubeoperav1alpha1.ConditionTenantResolved, metav1.ConditionFalse, kubeoperav1alpha1.ReasonKubeconfigInvalid)
	f.g.Expect(conditionMessage(a, kubeoperav1alpha1.ConditionTenantResolved)).To(ContainSubstring("not found"))
	f.create(secret)
	f.g.Eventually(func() string {
		return conditionMessage(f.get("app"), kubeoperav1alpha1.ConditionTenantResolved)
	}).Should(ContainSubstring("parse"))
	// An exec plugin is refused, and its command never appears anywhere.
	secret.Data["config"] = []byte(strings.ReplaceAll(string(vclusterKubeconfig), "client-certificate-data:", "exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/evil}\n    client-certificate-data:"))
	f.g.Expect(host.Client.Update(f.ctx, secret)).To(Succeed())
	f.g.Eventually(func() string {
		return conditionMessage(f.get("app"), kubeoperav1alpha1.ConditionTenantResolved)
	}).Should(ContainSubstring("exec credential plugins are not allowed"))

	// The fix arrives as a Secret event (no polling) and replaces the cached client.
	secret.Data["config"] = vclusterKubeconfig
	f.g.Expect(host.Client.Update(f.ctx, secret)).To(Succeed())
	f.waitReady("app")
}

func TestVClusterClientIsCachedUntilTheSecretChanges(t *testing.T) {
	f := newFixture(t)
	f.addTenant("cached", time.Now())
	f.create(f.newApp("app", "cached"))
	f.waitReady("app")
	builds := reconciler.VClusterClientBuilds()

	for i := range 3 {
		f.update("app", func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.App.Args = []string{"--round", string(rune('a' + i))} })
		f.waitReady("app")
	}
	f.g.Expect(reconciler.VClusterClientBuilds()).To(Equal(builds), "a reconcile rebuilt the vCluster client")

	// A rotated kubeconfig (any change of the Secret) builds a new client.
	secret := &corev1.Secret{}
	f.g.Expect(host.Client.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "vc-cached"}, secret)).To(Succeed())
	secret.Data["rotated"] = []byte("yes")
	f.g.Expect(host.Client.Update(f.ctx, secret)).To(Succeed())
	f.g.Eventually(reconciler.VClusterClientBuilds).Should(Equal(builds + 1))
	f.waitReady("app")
}

func conditionMessage(a *kubeoperav1alpha1.KubeOperaApp, condType string) string {
	for _, c := range a.Status.Conditions {
		if c.Type == condType {
			return c.Message
		}
	}
	return ""
}
