package olminstall

import (
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	apimanifests "github.com/operator-framework/api/pkg/manifests"
	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeopera/kubeopera-operator/test/olm/olmtest"
	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

// The upgrade from the released version (hack/bundles/) to bundle/ through OLM: a Subscription
// that starts at the released CSV with Manual approval installs it, ControlPlanes and
// KubeOperaApps are created and reconciled under it, then the second InstallPlan is approved:
// OLM replaces the CRDs (checking that the stored objects validate against them), installs the new
// CSV, removes the old one, and the new manager reconciles the objects created under the old one.
func TestUpgradeFromReleasedVersion(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	current := currentBundle(t).CSV
	previous := current.Spec.Replaces
	g.Expect(previous).NotTo(BeEmpty(), "bundle/'s CSV replaces no released version")
	released, err := apimanifests.GetBundleFromDir(filepath.Join(testenv.Root(), "hack", "bundles", "v"+versionOf(t, previous)))
	g.Expect(err).NotTo(HaveOccurred(), "the released bundle %s is not frozen in hack/bundles", previous)
	g.Expect(released.CSV.Name).To(Equal(previous))

	// The released v0.1.0 lacks update on controlplanes/finalizers, which OpenShift's
	// OwnerReferencesPermissionEnforcement requires: it never ran there, and upgrading from it
	// is a vanilla Kubernetes path. The install-mode tests run the current bundle under the plugin.
	c := startCluster(t, true)
	og := loadYAML[operatorsv1.OperatorGroup](t, "operatorgroup-allnamespaces.yaml")
	const workloads = "team-a"
	c.createNamespace(t, og.Namespace)
	c.createNamespace(t, workloads)
	sub := loadYAML[operatorsv1alpha1.Subscription](t, "subscription.yaml")
	// Pin the start to the released version and hold upgrades until approved.
	sub.Spec.StartingCSV = previous
	sub.Spec.InstallPlanApproval = operatorsv1alpha1.ApprovalManual
	approve := func(plan *operatorsv1alpha1.InstallPlan) {
		g.Expect(plan.Spec.Approval).To(Equal(operatorsv1alpha1.ApprovalManual))
	}
	old := c.subscribe(t, og, sub, previous, approve)

	objs := olmtest.CreateExamples(ctx, t, c.client, released.CSV, workloads)
	c.expectReconciled(t, objs)

	// The upgrade: OLM proposes the channel's head; approving it runs the plan.
	c.completeInstallPlan(t, sub, current.Name, approve)
	// The Deployment is replaced: the old manager stops (the old pod goes away), the new one runs.
	old.manager.stop()
	c.runCSV(t, og.Namespace, current.Name, "manager-new")
	g.Eventually(func() bool {
		err := c.client.Get(ctx, client.ObjectKey{Namespace: og.Namespace, Name: previous}, &operatorsv1alpha1.ClusterServiceVersion{})
		return apierrors.IsNotFound(err)
	}, timeout, poll).Should(BeTrue(), "the replaced CSV %s was not removed", previous)

	// Objects created under the old version are served by the new CRDs, still validate (an
	// unchanged update is validated again), and the new manager reconciles a spec change.
	changes := map[string][]any{
		"ControlPlane": {"debug", "spec", "controller", "logLevel"},
		"KubeOperaApp": {int64(3), "spec", "app", "replicas"},
	}
	for kind, obj := range objs {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(obj.GroupVersionKind())
		// The new manager writes the object's status meanwhile: each update reads the latest
		// version first and is retried on a conflict (never on a validation error).
		update := func(mutate func()) error {
			return retry.RetryOnConflict(retry.DefaultRetry, func() error {
				if err := c.client.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
					return err
				}
				mutate()
				return c.client.Update(ctx, got)
			})
		}
		g.Expect(update(func() {})).To(Succeed(), "%s created under %s does not validate against the new CRD", kind, previous)
		change, ok := changes[kind]
		g.Expect(ok).To(BeTrue(), "no spec change for %s", kind)
		path := make([]string, 0, len(change)-1)
		for _, p := range change[1:] {
			path = append(path, p.(string))
		}
		g.Expect(update(func() { g.Expect(unstructured.SetNestedField(got.Object, change[0], path...)).To(Succeed()) })).To(Succeed())
		gen := got.GetGeneration()
		g.Eventually(func(g Gomega) {
			g.Expect(c.client.Get(ctx, client.ObjectKeyFromObject(obj), got)).To(Succeed())
			g.Expect(olmtest.ReconciledAt(got, gen)).To(BeTrue(), "%s %s: generation %d not reconciled: %v", kind, got.GetName(), gen, got.Object["status"])
		}, timeout, poll).Should(Succeed())
	}
}

// versionOf returns the version of a CSV name <package>.v<version>.
func versionOf(t *testing.T, csvName string) string {
	t.Helper()
	for i := len(csvName) - 1; i > 0; i-- {
		if csvName[i] == 'v' && csvName[i-1] == '.' {
			return csvName[i+1:]
		}
	}
	t.Fatalf("CSV name %q has no .v<version>", csvName)
	return ""
}
