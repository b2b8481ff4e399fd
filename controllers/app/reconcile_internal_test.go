package app

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/kubeopera/kubeopera-operator/internal/outcome"
	"github.com/kubeopera/kubeopera-operator/internal/scheme"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	certutil "k8s.io/client-go/util/cert"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tenantv1alpha1 "github.com/kubeopera/kubeopera-operator/api/external/tenant/v1alpha1"
	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/gitops"
	"github.com/kubeopera/kubeopera-operator/internal/tenant"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// These tests call the reconciler directly with fake clients, to assert the requeue values the
// envtest suite shortens.

func testScheme() *runtime.Scheme { return scheme.New() }

// testKubeconfig is an exported vcluster kubeconfig (server https://localhost:8443) with a real
// CA certificate: the vCluster client's transport is built from it.
var testKubeconfig = func() string {
	caPEM, _, err := certutil.GenerateSelfSignedCertKey("vcluster-ca", nil, nil)
	if err != nil {
		panic(err)
	}
	return `apiVersion: v1
kind: Config
current-context: vc
clusters:
- name: vc
  cluster: {server: "https://localhost:8443", certificate-authority-data: ` + base64.StdEncoding.EncodeToString(caPEM) + `}
contexts:
- name: vc
  context: {cluster: vc, user: vc}
users:
- name: vc
  user: {token: t0ken}
`
}()

type testReconciler struct {
	*Reconciler
	host     client.Client
	recorder *events.FakeRecorder
	// configs are the REST configs the vCluster clients were built from.
	configs []*rest.Config
	events  []string
}

// newTestReconciler builds a reconciler with default Options on a fake host holding objs; vc is
// the vCluster client every Tenant gets.
func newTestReconciler(t *testing.T, vc client.Client, objs ...client.Object) *testReconciler {
	t.Helper()
	// The field indexes a pass lists apps by, as SetupWithManager registers them.
	host := fake.NewClientBuilder().WithScheme(testScheme()).WithObjects(objs...).
		WithIndex(&kubeoperav1alpha1.KubeOperaApp{}, indexGitURL, gitURL).
		WithIndex(&kubeoperav1alpha1.KubeOperaApp{}, indexGitSecretRef, gitSecretRef).
		WithIndex(&kubeoperav1alpha1.KubeOperaApp{}, indexFluxSecretRef, fluxSecretRef).
		WithIndex(&kubeoperav1alpha1.KubeOperaApp{}, indexTenant, tenantKeys).
		WithStatusSubresource(&kubeoperav1alpha1.KubeOperaApp{}, &tenantv1alpha1.Tenant{}).Build()
	rec := events.NewFakeRecorder(100)
	tr := &testReconciler{host: host, recorder: rec}
	opts := Options{GitCacheDir: t.TempDir()}.withDefaults()
	tr.Reconciler = &Reconciler{
		Client:    host,
		Options:   opts,
		apiReader: host,
		recorder:  rec,
		writer:    gitops.NewWriter(opts.GitCacheDir),
		clients: tenant.NewClients(func(cfg *rest.Config, _ *http.Client) (client.Client, error) {
			tr.configs = append(tr.configs, cfg)
			return vc, nil
		}),
		tenantAPI:    newTenantAPI(apimeta.NewDefaultRESTMapper(nil)),
		repoUsers:    newRepoUsers(),
		pushes:       newPushes(),
		secretHolds:  newPushSecretHolds(),
		folderChecks: newFolderChecks(),
	}
	tr.tenantAPI.watched.Store(true)
	return tr
}

var appKey = types.NamespacedName{Namespace: testfixture.AppNamespace, Name: testfixture.AppName}

func (tr *testReconciler) reconcile(t *testing.T) (ctrl.Result, *kubeoperav1alpha1.KubeOperaApp) {
	t.Helper()
	res, err := tr.Reconcile(context.Background(), ctrl.Request{NamespacedName: appKey})
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	return res, tr.get(t)
}

// reconcileErr runs a pass that must fail, and returns its error.
func (tr *testReconciler) reconcileErr(t *testing.T) (*kubeoperav1alpha1.KubeOperaApp, error) {
	t.Helper()
	res, err := tr.Reconcile(context.Background(), ctrl.Request{NamespacedName: appKey})
	if err == nil {
		t.Fatalf("reconcile succeeded (%+v), want an error", res)
	}
	if res != (ctrl.Result{}) {
		t.Fatalf("a failed pass returns no Result, got %+v", res)
	}
	return tr.get(t), err
}

func (tr *testReconciler) get(t *testing.T) *kubeoperav1alpha1.KubeOperaApp {
	t.Helper()
	a := &kubeoperav1alpha1.KubeOperaApp{}
	if err := tr.host.Get(context.Background(), appKey, a); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return a
}

func readyReason(a *kubeoperav1alpha1.KubeOperaApp) string {
	if c := apimeta.FindStatusCondition(a.Status.Conditions, kubeoperav1alpha1.ConditionReady); c != nil {
		return c.Reason
	}
	return ""
}

func TestTenantNotReadyIsAnErrorForTheRateLimiter(t *testing.T) {
	g := NewWithT(t)
	notReady := testfixture.Tenant(testfixture.TenantNotReady(time.Now()))
	tr := newTestReconciler(t, nil, testfixture.KubeOperaApp(), notReady)
	for range 3 {
		a, err := tr.reconcileErr(t)
		g.Expect(err).To(MatchError(tenant.ErrNotReady))
		g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeFalse(), "retried, with the rate limiter's delays")
		g.Expect(readyReason(a)).To(Equal(kubeoperav1alpha1.ReasonTenantNotReady))
	}
	// One Warning Event for the transition, not one per retry.
	g.Expect(tr.countEvents("Warning TenantNotReady")).To(Equal(1))
}

func TestNoRequeueOnCloudSpaceMismatch(t *testing.T) {
	g := NewWithT(t)
	tr := newTestReconciler(t, nil, testfixture.KubeOperaApp(), testfixture.Tenant(testfixture.TenantCloudSpace("someone-else")))
	a, err := tr.reconcileErr(t)
	g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeTrue(), "never retried: %v", err)
	g.Expect(readyReason(a)).To(Equal(kubeoperav1alpha1.ReasonTenantCloudSpaceMismatch))
	g.Expect(a.Status.Tenant).To(BeNil())
	g.Expect(a.Finalizers).To(ContainElement(kubeoperav1alpha1.Finalizer))
}

func TestSlowRequeueWithoutTenantAPI(t *testing.T) {
	g := NewWithT(t)
	tr := newTestReconciler(t, nil, testfixture.KubeOperaApp())
	tr.tenantAPI.watched.Store(false) // the empty RESTMapper has no Tenant kind
	res, a := tr.reconcile(t)
	g.Expect(res.RequeueAfter).To(Equal(5 * time.Minute))
	g.Expect(readyReason(a)).To(Equal(kubeoperav1alpha1.ReasonTenantAPIUnavailable))
	g.Expect(tr.countEvents("Warning TenantAPIUnavailable")).To(Equal(1))
}

func TestLocalhostKubeconfigUsesTheServiceAddress(t *testing.T) {
	g := NewWithT(t)
	unreachableVC := fake.NewClientBuilder().WithScheme(testScheme()).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return connectionRefused()
		},
	}).Build()
	tr := newTestReconciler(t, unreachableVC, testfixture.KubeOperaApp(), testfixture.Tenant(),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vc-t1"}, Data: map[string][]byte{"config": []byte(testKubeconfig)}})
	a, err := tr.reconcileErr(t)
	g.Expect(tr.configs).To(HaveLen(1))
	g.Expect(tr.configs[0].Host).To(Equal("https://t1.ns.svc:443"))
	g.Expect(tr.configs[0].Timeout).To(Equal(DefaultVClusterTimeout))
	// The vCluster does not answer: VClusterUnreachable, an error the rate limiter retries.
	g.Expect(readyReason(a)).To(Equal(kubeoperav1alpha1.ReasonVClusterUnreachable))
	g.Expect(err.Error()).To(ContainSubstring("connection refused"))
	g.Expect(a.Status.Tenant.Name).To(Equal("t1"))
}

// A hostile or overloaded vCluster that holds every request open (each would end only at its own
// request timeout) keeps a worker for at most the pass deadline, and the pass still records why.
// Fails when the pass runs on the request's context alone: the held request outlives the test's
// bound.
func TestSlowVClusterHoldsAWorkerForOnePassDeadlineAtMost(t *testing.T) {
	g := NewWithT(t)
	const held = 20 * time.Second // longer than the test waits: a request ends by the deadline or not at all
	hold := func(ctx context.Context) error {
		select {
		case <-ctx.Done():
			return fmt.Errorf("request to the vCluster: %w", ctx.Err())
		case <-time.After(held):
			return errors.New("the request was held to its end: no pass deadline")
		}
	}
	slowVC := fake.NewClientBuilder().WithScheme(testScheme()).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, _ client.WithWatch, _ client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
			return hold(ctx)
		},
	}).Build()
	tr := newTestReconciler(t, slowVC, testfixture.KubeOperaApp(), testfixture.Tenant(),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vc-t1"}, Data: map[string][]byte{"config": []byte(testKubeconfig)}})
	tr.Options.PassTimeout = 300 * time.Millisecond

	done := make(chan error, 1)
	go func() {
		_, err := tr.Reconcile(context.Background(), ctrl.Request{NamespacedName: appKey})
		done <- err
	}()
	var err error
	g.Eventually(done).WithTimeout(held/2).Should(Receive(&err), "the pass outlived its deadline")
	g.Expect(err).To(MatchError(context.DeadlineExceeded))
	g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeFalse(), "retried with the backoff")
	g.Expect(readyReason(tr.get(t))).To(Equal(kubeoperav1alpha1.ReasonVClusterUnreachable), "the status patch ran after the deadline")
}

func TestDeleteWithUnreachableVClusterIsRetried(t *testing.T) {
	g := NewWithT(t)
	// Deletion reads each object first (only the operator's own are deleted): every request fails.
	unreachableVC := fake.NewClientBuilder().WithScheme(testScheme()).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return connectionRefused()
		},
		Delete: func(context.Context, client.WithWatch, client.Object, ...client.DeleteOption) error {
			return connectionRefused()
		},
	}).Build()
	deleting := testfixture.KubeOperaApp(
		testfixture.AppFinalizers(kubeoperav1alpha1.Finalizer), testfixture.AppDeleting(time.Now()), testfixture.AppPlacedIn("ns", "t1"),
		func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Status.Path, a.Status.Commit = "apps/web/web", "0123456789abcdef0123456789abcdef01234567"
		})
	tr := newTestReconciler(t, unreachableVC, deleting, testfixture.Tenant(),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vc-t1"}, Data: map[string][]byte{"config": []byte(testKubeconfig)}})
	for range 3 {
		a, err := tr.reconcileErr(t)
		g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeFalse())
		g.Expect(a.Finalizers).To(ContainElement(kubeoperav1alpha1.Finalizer))
		g.Expect(readyReason(a)).To(Equal(kubeoperav1alpha1.ReasonDeleteFailed))
	}
	g.Expect(tr.countEvents("Warning DeleteFailed")).To(Equal(1))
}

func TestDeleteWithTenantGoneRemovesTheFinalizer(t *testing.T) {
	g := NewWithT(t)
	deleting := testfixture.KubeOperaApp(
		testfixture.AppFinalizers(kubeoperav1alpha1.Finalizer), testfixture.AppDeleting(time.Now()), testfixture.AppPlacedIn("ns", "gone"),
		// Committed once, with credentials that are gone too (the namespace is being deleted):
		// the Git folder cannot be removed, the deletion still finishes.
		testfixture.AppGitSecret("deleted-creds"),
		func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Status.Path, a.Status.Commit = "apps/ns/web", "0123456789abcdef0123456789abcdef01234567"
		})
	tr := newTestReconciler(t, nil, deleting)
	res, a := tr.reconcile(t)
	g.Expect(res).To(Equal(ctrl.Result{}))
	g.Expect(a.Name).To(BeEmpty(), "the app should be gone")
	g.Expect(tr.countEvents("Warning TenantGone")).To(Equal(1))
	g.Expect(tr.countEvents("Warning GitCleanupSkipped")).To(Equal(1))
}

func TestObserveSync(t *testing.T) {
	const commit, head = "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	ready := func(s metav1.ConditionStatus) []metav1.Condition {
		return []metav1.Condition{{Type: meta.ReadyCondition, Status: s, Reason: "R", Message: "m"}}
	}
	cases := []struct {
		name       string
		status     kustomizev1.KustomizationStatus
		generation int64
		wantStatus metav1.ConditionStatus
		wantReason string
		wantAfter  time.Duration
		// wasSynced: the app was Synced before this observation.
		wasSynced bool
		// noHead: the pass has no head to compare an other commit's folder with. An applied
		// commit that is neither the app's nor the head is compared in the Git clone, which
		// this unit test has none of: TestSyncedHoldsWhileOtherAppsPushToTheBranch (envtest)
		// and internal/gitops TestSameFolder* cover that comparison.
		noHead bool
	}{
		{"nothing applied yet", kustomizev1.KustomizationStatus{}, 1,
			metav1.ConditionFalse, kubeoperav1alpha1.ReasonRevisionNotApplied, DefaultSyncPollInterval, false, false},
		{"pushed commit applied", kustomizev1.KustomizationStatus{ObservedGeneration: 1, LastAppliedRevision: "main@sha1:" + commit, Conditions: ready(metav1.ConditionTrue)}, 1,
			metav1.ConditionTrue, kubeoperav1alpha1.ReasonSucceeded, DefaultResyncInterval, false, false},
		{"later head with the same files applied", kustomizev1.KustomizationStatus{ObservedGeneration: 1, LastAppliedRevision: "refs/heads/main@sha1:" + head, Conditions: ready(metav1.ConditionTrue)}, 1,
			metav1.ConditionTrue, kubeoperav1alpha1.ReasonSucceeded, DefaultResyncInterval, false, false},
		{"older commit applied", kustomizev1.KustomizationStatus{ObservedGeneration: 1, LastAppliedRevision: "main@sha1:3333333333333333333333333333333333333333", Conditions: ready(metav1.ConditionTrue)}, 1,
			metav1.ConditionFalse, kubeoperav1alpha1.ReasonRevisionNotApplied, DefaultSyncPollInterval, false, true},
		{"another branch", kustomizev1.KustomizationStatus{ObservedGeneration: 1, LastAppliedRevision: "dev@sha1:" + commit, Conditions: ready(metav1.ConditionTrue)}, 1,
			metav1.ConditionFalse, kubeoperav1alpha1.ReasonRevisionNotApplied, DefaultSyncPollInterval, false, false},
		{"spec not observed yet", kustomizev1.KustomizationStatus{ObservedGeneration: 1, LastAppliedRevision: "main@sha1:" + commit, Conditions: ready(metav1.ConditionTrue)}, 2,
			metav1.ConditionFalse, kubeoperav1alpha1.ReasonRevisionNotApplied, DefaultSyncPollInterval, false, false},
		{"apply failed", kustomizev1.KustomizationStatus{ObservedGeneration: 1, LastAppliedRevision: "main@sha1:" + commit, Conditions: ready(metav1.ConditionFalse)}, 1,
			metav1.ConditionFalse, kubeoperav1alpha1.ReasonKustomizationNotReady, DefaultSyncPollInterval, false, false},
		// Flux's periodic reconcile (Ready Unknown, Progressing) of the revision it applied.
		{"synced app, Flux re-applying the same commit", kustomizev1.KustomizationStatus{ObservedGeneration: 1, LastAppliedRevision: "main@sha1:" + commit, Conditions: ready(metav1.ConditionUnknown)}, 1,
			metav1.ConditionTrue, kubeoperav1alpha1.ReasonSucceeded, DefaultResyncInterval, true, false},
		{"new app, Flux still applying the commit", kustomizev1.KustomizationStatus{ObservedGeneration: 1, LastAppliedRevision: "main@sha1:" + commit, Conditions: ready(metav1.ConditionUnknown)}, 1,
			metav1.ConditionFalse, kubeoperav1alpha1.ReasonRevisionNotApplied, DefaultSyncPollInterval, false, false},
		{"synced app, Flux applying an older commit", kustomizev1.KustomizationStatus{ObservedGeneration: 1, LastAppliedRevision: "main@sha1:3333333333333333333333333333333333333333", Conditions: ready(metav1.ConditionUnknown)}, 1,
			metav1.ConditionFalse, kubeoperav1alpha1.ReasonRevisionNotApplied, DefaultSyncPollInterval, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			tr := newTestReconciler(t, nil)
			a := testfixture.KubeOperaApp(func(a *kubeoperav1alpha1.KubeOperaApp) {
				a.Status.Commit = commit
				if tc.wasSynced {
					apimeta.SetStatusCondition(&a.Status.Conditions, metav1.Condition{Type: kubeoperav1alpha1.ConditionSynced,
						Status: metav1.ConditionTrue, Reason: kubeoperav1alpha1.ReasonSucceeded, Message: "Flux applied main@sha1:" + commit})
				}
			})
			ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Generation: tc.generation}, Status: tc.status}
			vc := fake.NewClientBuilder().WithScheme(testScheme()).Build()
			h := head
			if tc.noHead {
				h = ""
			}
			res, err := tr.observeSync(context.Background(), &scope{app: a, head: h, kustomization: ks, vc: vc})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.RequeueAfter).To(Equal(tc.wantAfter))
			c := apimeta.FindStatusCondition(a.Status.Conditions, kubeoperav1alpha1.ConditionSynced)
			g.Expect(c.Status).To(Equal(tc.wantStatus))
			g.Expect(c.Reason).To(Equal(tc.wantReason))
			g.Expect(a.Status.AppliedRevision).To(Equal(tc.status.LastAppliedRevision))
		})
	}
}

func TestAppliedCommit(t *testing.T) {
	g := NewWithT(t)
	g.Expect(appliedCommit("main@sha1:abc", "main")).To(Equal("abc"))
	g.Expect(appliedCommit("refs/heads/main@sha1:abc", "main")).To(Equal("abc"))
	g.Expect(appliedCommit("release/v1@sha256:def", "release/v1")).To(Equal("def"))
	g.Expect(appliedCommit("dev@sha1:abc", "main")).To(BeEmpty())
	g.Expect(appliedCommit("abc", "main")).To(BeEmpty())
	g.Expect(appliedCommit("main@md5:abc", "main")).To(BeEmpty())
	g.Expect(appliedCommit("", "main")).To(BeEmpty())
}

func TestErrorClassification(t *testing.T) {
	g := NewWithT(t)
	g.Expect(unreachable(connectionRefused())).To(BeTrue())
	g.Expect(unreachable(apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "x", errors.New("no")))).To(BeFalse())
	g.Expect(unreachable(&apimeta.NoKindMatchError{GroupKind: schema.GroupKind{Kind: "Kustomization"}})).To(BeFalse())
	g.Expect(ignoreGone(apierrors.NewNotFound(schema.GroupResource{}, "x"))).To(Succeed())
	g.Expect(ignoreGone(&apimeta.NoKindMatchError{})).To(Succeed())
	g.Expect(ignoreGone(connectionRefused())).NotTo(Succeed())

	var se *outcome.Error
	g.Expect(errors.As(gitError("c", gitops.ErrAuthFailed), &se)).To(BeTrue())
	g.Expect(se.Reason).To(Equal(kubeoperav1alpha1.ReasonGitAuthFailed))
	g.Expect(errors.As(gitError("c", gitops.ErrInvalidAuth), &se)).To(BeTrue())
	g.Expect(se.Reason).To(Equal(kubeoperav1alpha1.ReasonGitAuthFailed))
	g.Expect(errors.As(gitError("c", gitops.ErrPushConflict), &se)).To(BeTrue())
	g.Expect(se.Reason).To(Equal(kubeoperav1alpha1.ReasonPushConflict))
	g.Expect(errors.As(gitError("c", gitops.ErrInvalidPath), &se)).To(BeTrue())
	g.Expect(se.Next).To(Equal(outcome.WaitForChange))
	g.Expect(errors.As(gitError("c", fmt.Errorf("fetch: %w", gitops.ErrRepositoryTooLarge)), &se)).To(BeTrue())
	g.Expect(se.Reason).To(Equal(kubeoperav1alpha1.ReasonRepositoryTooLarge))
	g.Expect(errors.As(gitError("c", fmt.Errorf("fetch: %w", gitops.ErrPathConflict)), &se)).To(BeTrue())
	g.Expect(se.Reason).To(Equal(kubeoperav1alpha1.ReasonPathConflict))
	g.Expect(se.Next).To(Equal(outcome.Backoff))
	g.Expect(errors.As(gitError("c", errors.New("network")), &se)).To(BeTrue())
	g.Expect(se.Reason).To(Equal(kubeoperav1alpha1.ReasonGitFailed))
	g.Expect(se.Next).To(Equal(outcome.Backoff))
}

func connectionRefused() error {
	return &url.Error{Op: "Get", URL: "https://t1.ns.svc:443/api", Err: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}}
}

// recorded drains the events recorded so far ("<type> <reason> <note>").
func (tr *testReconciler) recorded() []string {
	for {
		select {
		case e := <-tr.recorder.Events:
			tr.events = append(tr.events, e)
		default:
			return tr.events
		}
	}
}

// countEvents counts the recorded events starting with prefix.
func (tr *testReconciler) countEvents(prefix string) int {
	n := 0
	for _, e := range tr.recorded() {
		if strings.HasPrefix(e, prefix) {
			n++
		}
	}
	return n
}

func TestAllowListsRefuseOtherHosts(t *testing.T) {
	g := NewWithT(t)
	kubeconfig := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vc-t1"}, Data: map[string][]byte{"config": []byte(testKubeconfig)}}

	// The exported localhost server becomes https://t1.ns.svc:443, outside the list: the
	// vCluster is never contacted (no client is built).
	tr := newTestReconciler(t, nil, testfixture.KubeOperaApp(), testfixture.Tenant(), kubeconfig)
	tr.Options.AllowedVClusterServers = []string{"*.vcluster.internal"}
	a, err := tr.reconcileErr(t)
	g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeTrue())
	g.Expect(readyReason(a)).To(Equal(kubeoperav1alpha1.ReasonVClusterServerNotAllowed))
	g.Expect(tr.configs).To(BeEmpty())

	// The Git host: refused before any connection (the vCluster answers, the Git host is
	// not in the list).
	vc := fake.NewClientBuilder().WithScheme(testScheme()).Build()
	tr = newTestReconciler(t, vc, testfixture.KubeOperaApp(), testfixture.Tenant(), kubeconfig)
	tr.Options.AllowedGitHosts = []string{"git.internal.example.com"}
	a, err = tr.reconcileErr(t)
	g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeTrue())
	g.Expect(readyReason(a)).To(Equal(kubeoperav1alpha1.ReasonGitHostNotAllowed))
	g.Expect(err.Error()).To(ContainSubstring(`"git.example.com" is not in --app-allowed-git-hosts`))

	// Without allow-lists, a cloud metadata endpoint is still refused, before any connection.
	tr = newTestReconciler(t, vc, testfixture.KubeOperaApp(testfixture.AppGitURL("http://169.254.169.254/computeMetadata/v1/apps.git")), testfixture.Tenant(), kubeconfig)
	a, err = tr.reconcileErr(t)
	g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeTrue())
	g.Expect(readyReason(a)).To(Equal(kubeoperav1alpha1.ReasonGitHostNotAllowed))
	g.Expect(err.Error()).To(ContainSubstring("a cloud metadata endpoint"))
}

// An API server's answer that is not a Kubernetes Status (client-go keeps up to 2 KiB of its body
// in the error of a 403 or a 5xx) reaches the conditions and the Events as its status code only.
func TestAServersAnswerNeverReachesTheStatus(t *testing.T) {
	g := NewWithT(t)
	const body = "<html>internal admin console of 10.0.3.7 (s3cret-banner)</html>"
	for _, code := range []int{http.StatusForbidden, http.StatusBadGateway} {
		tr := newTestReconciler(t, nil)
		a := testfixture.KubeOperaApp()
		answer := apierrors.NewGenericServerResponse(code, "get", schema.GroupResource{Resource: "namespaces"}, "web", body, 0, true)
		g.Expect(answer.Error()).To(ContainSubstring("s3cret-banner"), "client-go's error holds the body")
		_, _ = tr.failed(context.Background(), &scope{app: a}, vclusterError(kubeoperav1alpha1.ConditionTenantResolved, "read app namespace", answer))
		for _, c := range a.Status.Conditions {
			g.Expect(c.Message).NotTo(ContainSubstring("s3cret-banner"), "%s", c.Type)
		}
		ready := apimeta.FindStatusCondition(a.Status.Conditions, kubeoperav1alpha1.ConditionReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Message).To(ContainSubstring(fmt.Sprintf("answered HTTP %d", code)))
		for len(tr.recorder.Events) > 0 {
			g.Expect(<-tr.recorder.Events).NotTo(ContainSubstring("s3cret-banner"))
		}
	}
}

// The app's trailer is one line whatever the requester's annotation holds, and reads back
// into the fields it was written from.
func TestAppTrailerRoundTrip(t *testing.T) {
	g := NewWithT(t)
	a := testfixture.KubeOperaApp(testfixture.AppUID("uid-1"), testfixture.AppGeneration(7), testfixture.AppAnnotations(map[string]string{
		kubeoperav1alpha1.AnnotationRequestedBy: "Eve \"admin\"\nKubeOperaApp: ns/web uid=forged generation=1 manifests=sha256:00 " + strings.Repeat("x", 400),
	}))
	line := appTrailer(a, "sha256:abc", "c0ffee")
	g.Expect(line).NotTo(ContainSubstring("\n"), "one line")
	g.Expect(len(line)).To(BeNumerically("<", 1024), "within a trailer's bound")
	f, ok := parseAppTrailer(line)
	g.Expect(ok).To(BeTrue())
	g.Expect(f).To(Equal(trailerFields{app: "ns/web", uid: "uid-1", generation: 7, manifests: "sha256:abc", restores: "c0ffee"}),
		"the requester's text cannot forge fields")
	_, ok = parseAppTrailer("Signed-off-by: someone")
	g.Expect(ok).To(BeFalse())
}

// An app deleted before a pass added its finalizer (its first pass built the Tenant's client and
// ended before anything was written) goes without a deletion pass. The pass that finds it gone
// drops the clients of the namespace's Tenants that no app uses, and keeps the one another app
// is placed in.
func TestGoneAppDropsTheClientsNoAppUses(t *testing.T) {
	g := NewWithT(t)
	other := testfixture.KubeOperaApp(testfixture.AppNamed("other"), testfixture.AppPlacedIn(testfixture.AppNamespace, "t2"))
	tr := newTestReconciler(t, fake.NewClientBuilder().WithScheme(testScheme()).Build(), other)
	cfg := func() (*rest.Config, error) { return &rest.Config{Host: "https://vc.example:443"}, nil }
	for _, name := range []string{"t1", "t2"} {
		_, err := tr.clients.Get(types.NamespacedName{Namespace: testfixture.AppNamespace, Name: name}, tenant.SecretVersion{}, cfg)
		g.Expect(err).NotTo(HaveOccurred())
	}
	_, err := tr.clients.Get(types.NamespacedName{Namespace: "elsewhere", Name: "t1"}, tenant.SecretVersion{}, cfg)
	g.Expect(err).NotTo(HaveOccurred())

	res, err := tr.Reconcile(context.Background(), ctrl.Request{NamespacedName: appKey})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res).To(Equal(ctrl.Result{}))
	g.Expect(tr.clients.Tenants(testfixture.AppNamespace)).To(ConsistOf(types.NamespacedName{Namespace: testfixture.AppNamespace, Name: "t2"}),
		"t1's client dropped, t2's kept for the app placed in it")
	g.Expect(tr.clients.Tenants("elsewhere")).To(HaveLen(1), "another namespace's Tenants are not this app's")
}
