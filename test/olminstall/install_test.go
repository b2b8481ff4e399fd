package olminstall

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeopera/kubeopera-operator/test/olm/olmtest"
)

// installMode is one OperatorGroup of config/olm and the namespaces the test checks.
type installMode struct {
	mode          operatorsv1alpha1.InstallModeType
	operatorGroup string
	// watched is where the manager must reconcile; unwatched where it must make no request at all.
	watched, unwatched string
}

var installModes = []installMode{
	{mode: operatorsv1alpha1.InstallModeTypeOwnNamespace, operatorGroup: "operatorgroup-ownnamespace.yaml", unwatched: "team-c"},
	{mode: operatorsv1alpha1.InstallModeTypeSingleNamespace, operatorGroup: "operatorgroup-singlenamespace.yaml", watched: "team-a", unwatched: "team-c"},
	{mode: operatorsv1alpha1.InstallModeTypeMultiNamespace, operatorGroup: "operatorgroup-multinamespace.yaml", watched: "team-b", unwatched: "team-c"},
	// AllNamespaces has no unwatched namespace: a second namespace is checked as watched too.
	{mode: operatorsv1alpha1.InstallModeTypeAllNamespaces, operatorGroup: "operatorgroup-allnamespaces.yaml", watched: "team-c"},
}

// installed is what one Subscription produced.
type installed struct {
	csv        *operatorsv1alpha1.ClusterServiceVersion
	deployment *appsv1.Deployment
	manager    *manager
}

// The README's OperatorHub install, in each install mode, through the real OLM: the catalog's
// channel head is installed with no unpack Job and no Pod, OLM's RBAC and olm.targetNamespaces
// are what the manager runs with, and the manager reconciles a ControlPlane and a KubeOperaApp in
// a watched namespace while it sends not one request about an unwatched one.
func TestInstallModes(t *testing.T) {
	want := currentBundle(t).CSV
	for _, im := range installModes {
		t.Run(string(im.mode), func(t *testing.T) {
			g := NewWithT(t)
			ctx := t.Context()
			c := startCluster(t)
			og := loadYAML[operatorsv1.OperatorGroup](t, im.operatorGroup)
			ns := og.Namespace
			targets := og.Spec.TargetNamespaces
			if im.watched == "" {
				im.watched = ns
			}
			for _, n := range append([]string{ns, im.watched, im.unwatched}, targets...) {
				if n != "" {
					c.createNamespace(t, n)
				}
			}
			inst := c.subscribe(t, og, loadYAML[operatorsv1alpha1.Subscription](t, "subscription.yaml"), want.Name, nil)

			// The annotation OLM wrote on the CSV and on the pod template, which WATCH_NAMESPACE reads.
			g.Expect(inst.csv.Annotations).To(HaveKeyWithValue(olmtest.TargetNamespacesAnnotation, strings.Join(targets, ",")))
			g.Expect(inst.deployment.Spec.Template.Annotations).To(HaveKeyWithValue(olmtest.TargetNamespacesAnnotation, strings.Join(targets, ",")))
			g.Expect(slices.Contains(targets, im.watched) || len(targets) == 0).To(BeTrue(), "test table: %s is not a target of %s", im.watched, im.operatorGroup)

			// The RBAC OLM created: every permissions rule in each watched namespace, every
			// clusterPermissions rule cluster-wide, and no namespaced rule in an unwatched namespace
			// (unless it also is a cluster permission).
			c.checkRBAC(t, inst, want, im)

			// The manager reconciles in a watched namespace and leaves an unwatched one alone.
			examples := olmtest.CreateExamples(ctx, t, c.client, want, im.watched)
			c.expectReconciled(t, examples)
			if im.unwatched != "" {
				outside := olmtest.CreateExamples(ctx, t, c.client, want, im.unwatched)
				// The manager has reconciled what it watches (above); the audit log proves it sent no
				// request at all about the unwatched namespace, while it did about the watched one.
				g.Consistently(func() int { return c.auditEvents(t, inst.manager.user, im.unwatched) }, 3*time.Second, poll).
					Should(BeZero(), "the manager sent requests about %s, which it does not watch", im.unwatched)
				g.Expect(c.auditEvents(t, inst.manager.user, im.watched)).To(BeNumerically(">", 0))
				for kind, obj := range outside {
					got := &unstructured.Unstructured{}
					got.SetGroupVersionKind(obj.GroupVersionKind())
					g.Expect(c.client.Get(ctx, client.ObjectKeyFromObject(obj), got)).To(Succeed())
					g.Expect(olmtest.Reconciled(got)).To(BeFalse(), "%s in %s was reconciled", kind, im.unwatched)
				}
			}
		})
	}
}

// subscribe applies the OperatorGroup and the Subscription and follows OLM to an installed CSV:
// InstallPlan Complete without bundle lookups, no Job and no Pod, then (once the manager runs and
// the Deployment's status says so) CSV Succeeded and the Subscription's installedCSV. approve,
// when set, is called for a Manual InstallPlan before it is approved.
func (c *cluster) subscribe(t *testing.T, og *operatorsv1.OperatorGroup, sub *operatorsv1alpha1.Subscription, csvName string, approve func(*operatorsv1alpha1.InstallPlan)) *installed {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	g.Expect(c.client.Create(ctx, og)).To(Succeed())
	g.Expect(c.client.Create(ctx, sub)).To(Succeed())
	c.completeInstallPlan(t, sub, csvName, approve)
	return c.runCSV(t, sub.Namespace, csvName, "manager-"+strings.TrimPrefix(csvName, "kubeopera-operator."))
}

// completeInstallPlan waits for the InstallPlan that installs csvName (approving it if asked)
// and checks that OLM installed it from the catalog's bundle objects: phase Complete, no
// bundleLookups, and no Job or Pod anywhere in the cluster.
func (c *cluster) completeInstallPlan(t *testing.T, sub *operatorsv1alpha1.Subscription, csvName string, approve func(*operatorsv1alpha1.InstallPlan)) {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	// The Subscription names its current InstallPlan once OLM has set the plan's initial status
	// (approving a plan before that races with OLM, which then abandons it for a new one).
	plan := &operatorsv1alpha1.InstallPlan{}
	g.Eventually(func(g Gomega) {
		got := &operatorsv1alpha1.Subscription{}
		g.Expect(c.client.Get(ctx, client.ObjectKeyFromObject(sub), got)).To(Succeed())
		g.Expect(got.Status.InstallPlanRef).NotTo(BeNil(), "no InstallPlan yet")
		g.Expect(c.client.Get(ctx, client.ObjectKey{Namespace: sub.Namespace, Name: got.Status.InstallPlanRef.Name}, plan)).To(Succeed())
		g.Expect(plan.Spec.ClusterServiceVersionNames).To(ContainElement(csvName))
		if approve != nil {
			g.Expect(plan.Status.Phase).To(Equal(operatorsv1alpha1.InstallPlanPhaseRequiresApproval))
		}
	}, timeout, poll).Should(Succeed(), c.subscriptionState(ctx, sub))
	if approve != nil {
		approve(plan)
		patch := client.MergeFrom(plan.DeepCopy())
		plan.Spec.Approved = true
		g.Expect(c.client.Patch(ctx, plan, patch)).To(Succeed())
	}
	g.Eventually(func(g Gomega) {
		g.Expect(c.client.Get(ctx, client.ObjectKeyFromObject(plan), plan)).To(Succeed())
		g.Expect(plan.Status.Phase).To(Equal(operatorsv1alpha1.InstallPlanPhaseComplete), "InstallPlan %s: %s %v", plan.Name, plan.Status.Phase, plan.Status.Conditions)
	}, timeout, poll).Should(Succeed())
	g.Expect(plan.Status.BundleLookups).To(BeEmpty(), "OLM looked the bundle up from its image (an unpack Job) instead of the catalog's objects")
	jobs := &batchv1.JobList{}
	g.Expect(c.client.List(ctx, jobs)).To(Succeed())
	g.Expect(jobs.Items).To(BeEmpty(), "OLM created a Job")
	pods := &corev1.PodList{}
	g.Expect(c.client.List(ctx, pods)).To(Succeed())
	g.Expect(pods.Items).To(BeEmpty(), "something created a Pod")
}

// subscriptionState describes the Subscription for a failure message.
func (c *cluster) subscriptionState(ctx context.Context, sub *operatorsv1alpha1.Subscription) func() string {
	return func() string {
		got := &operatorsv1alpha1.Subscription{}
		if err := c.client.Get(ctx, client.ObjectKeyFromObject(sub), got); err != nil {
			return err.Error()
		}
		return fmt.Sprintf("Subscription state %q, conditions %v", got.Status.State, got.Status.Conditions)
	}
}

// runCSV waits for OLM to create the CSV's Deployment, starts the manager from it, stands in for
// the deployment controller, and waits for the CSV to succeed and the Subscription to record it.
func (c *cluster) runCSV(t *testing.T, namespace, csvName, managerName string) *installed {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	key := client.ObjectKey{Namespace: namespace, Name: csvName}
	g.Eventually(func() error { return c.client.Get(ctx, key, csv) }, timeout, poll).Should(Succeed())
	strategy, _ := olmtest.InstallDeployment(t, csv)
	dep := &appsv1.Deployment{}
	depKey := client.ObjectKey{Namespace: namespace, Name: strategy.Name}
	// The Deployment of this CSV: OLM labels it with the CSV that owns it.
	g.Eventually(func(g Gomega) {
		g.Expect(c.client.Get(ctx, depKey, dep)).To(Succeed())
		g.Expect(dep.Labels).To(HaveKeyWithValue("olm.owner", csvName))
		g.Expect(olmtest.Container(t, dep).Image).To(Equal(olmtest.Container(t, deploymentOf(strategy)).Image))
	}, timeout, poll).Should(Succeed(), func() string {
		_ = c.client.Get(ctx, key, csv)
		return fmt.Sprintf("CSV %s: %s %s", csvName, csv.Status.Phase, csv.Status.Message)
	})
	m := c.startManager(t, dep, managerName)
	c.markAvailable(t, depKey, m)
	g.Eventually(func(g Gomega) {
		g.Expect(c.client.Get(ctx, key, csv)).To(Succeed())
		g.Expect(csv.Status.Phase).To(Equal(operatorsv1alpha1.CSVPhaseSucceeded), "CSV %s: %s %s", csvName, csv.Status.Reason, csv.Status.Message)
	}, timeout, poll).Should(Succeed())
	g.Eventually(func(g Gomega) {
		subs := &operatorsv1alpha1.SubscriptionList{}
		g.Expect(c.client.List(ctx, subs, client.InNamespace(namespace))).To(Succeed())
		g.Expect(subs.Items).To(HaveLen(1))
		g.Expect(subs.Items[0].Status.InstalledCSV).To(Equal(csvName))
	}, timeout, poll).Should(Succeed())
	return &installed{csv: csv, deployment: dep, manager: m}
}

func deploymentOf(s operatorsv1alpha1.StrategyDeploymentSpec) *appsv1.Deployment {
	return &appsv1.Deployment{Spec: *s.Spec.DeepCopy()}
}

// expectReconciled waits until the manager reconciled every object, and until the ControlPlane's
// first operands exist.
func (c *cluster) expectReconciled(t *testing.T, objs map[string]*unstructured.Unstructured) {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	for kind, obj := range objs {
		g.Eventually(func(g Gomega) {
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(obj.GroupVersionKind())
			g.Expect(c.client.Get(ctx, client.ObjectKeyFromObject(obj), got)).To(Succeed())
			g.Expect(olmtest.Reconciled(got)).To(BeTrue(), "%s %s/%s not reconciled yet", kind, got.GetNamespace(), got.GetName())
		}, timeout, poll).Should(Succeed())
	}
	cp := objs["ControlPlane"]
	g.Expect(cp).NotTo(BeNil(), "no ControlPlane alm-example")
	g.Eventually(func() (int, error) { return olmtest.CountOwned(ctx, c.client, cp.GetNamespace(), cp.GetUID()) }, timeout, poll).
		Should(BeNumerically(">", 0), "nothing owned by ControlPlane %s/%s was created", cp.GetNamespace(), cp.GetName())
}

// checkRBAC asks the API server's authorizer (SubjectAccessReview) what OLM's RBAC lets the
// operator's ServiceAccount do, rule by rule of the CSV, and lists the bindings OLM created.
func (c *cluster) checkRBAC(t *testing.T, inst *installed, csv *operatorsv1alpha1.ClusterServiceVersion, im installMode) {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	user := inst.manager.user
	strategy := csv.Spec.InstallStrategy.StrategySpec
	g.Expect(strategy.Permissions).NotTo(BeEmpty())
	clusterWide := map[string]bool{}
	for _, p := range strategy.ClusterPermissions {
		for _, a := range attributes(p.Rules, "") {
			g.Expect(c.allowed(ctx, user, a)).To(BeTrue(), "clusterPermissions: %s may not %+v", user, a)
			a.Namespace = ""
			clusterWide[fmt.Sprint(a)] = true
		}
	}
	// The operator's own namespace always gets the namespaced rules (its Lease lives there).
	granted := []string{im.watched, inst.deployment.Namespace}
	for _, p := range strategy.Permissions {
		for _, ns := range granted {
			for _, a := range attributes(p.Rules, ns) {
				g.Expect(c.allowed(ctx, user, a)).To(BeTrue(), "permissions: %s may not %+v in %s", user, a, ns)
			}
		}
		if im.unwatched == "" {
			continue
		}
		for _, a := range attributes(p.Rules, im.unwatched) {
			key := a
			key.Namespace = ""
			if clusterWide[fmt.Sprint(key)] {
				continue
			}
			g.Expect(c.allowed(ctx, user, a)).To(BeFalse(), "%s may %+v in %s, which the OperatorGroup does not target", user, a, im.unwatched)
		}
	}
	// OLM binds the ServiceAccount to Roles (namespaced modes) or ClusterRoles (AllNamespaces,
	// and clusterPermissions); at least one binding names it in the watched namespace or cluster-wide.
	rbs := &rbacv1.RoleBindingList{}
	g.Expect(c.client.List(ctx, rbs, client.InNamespace(im.watched))).To(Succeed())
	crbs := &rbacv1.ClusterRoleBindingList{}
	g.Expect(c.client.List(ctx, crbs)).To(Succeed())
	var bound []string
	for _, b := range rbs.Items {
		if bindsUser(b.Subjects, user) {
			bound = append(bound, "RoleBinding "+b.Namespace+"/"+b.Name+" -> "+b.RoleRef.Kind+" "+b.RoleRef.Name)
		}
	}
	for _, b := range crbs.Items {
		if bindsUser(b.Subjects, user) {
			bound = append(bound, "ClusterRoleBinding "+b.Name+" -> "+b.RoleRef.Name)
		}
	}
	g.Expect(bound).NotTo(BeEmpty())
	t.Logf("%s: RBAC OLM created for %s:\n  %s", im.mode, user, strings.Join(bound, "\n  "))
}

func bindsUser(subjects []rbacv1.Subject, user string) bool {
	for _, s := range subjects {
		if s.Kind == rbacv1.ServiceAccountKind && "system:serviceaccount:"+s.Namespace+":"+s.Name == user {
			return true
		}
	}
	return false
}

// attributes expands RBAC rules into single (group, resource, verb) checks in namespace.
func attributes(rules []rbacv1.PolicyRule, namespace string) []authorizationv1.ResourceAttributes {
	var out []authorizationv1.ResourceAttributes
	for _, r := range rules {
		for _, grp := range r.APIGroups {
			for _, res := range r.Resources {
				resource, sub, _ := strings.Cut(res, "/")
				for _, verb := range r.Verbs {
					names := r.ResourceNames
					if len(names) == 0 {
						names = []string{""}
					}
					for _, name := range names {
						out = append(out, authorizationv1.ResourceAttributes{
							Namespace: namespace, Group: grp, Resource: resource, Subresource: sub, Verb: verb, Name: name,
						})
					}
				}
			}
		}
	}
	return out
}

// allowed asks the authorizer whether the ServiceAccount user may do a.
func (c *cluster) allowed(ctx context.Context, user string, a authorizationv1.ResourceAttributes) (bool, error) {
	parts := strings.Split(user, ":") // system:serviceaccount:<namespace>:<name>
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               user,
		Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + parts[2], "system:authenticated"},
		ResourceAttributes: &a,
	}}
	if err := c.client.Create(ctx, sar); err != nil {
		return false, err
	}
	return sar.Status.Allowed, nil
}
