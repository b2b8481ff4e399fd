package controlplane_test

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/conversation"
	"github.com/kubeopera/kubeopera-operator/internal/iofog/fake"
	"github.com/kubeopera/kubeopera-operator/internal/pki"
	"github.com/kubeopera/kubeopera-operator/internal/scheme"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// Addresses the tests "assign" as cloud load balancers that the operator never dials (TEST-NET-1,
// never routed). The controller LoadBalancer address, which the external check dials, is a
// loopback address per harness (h.controllerLB) that the fake Controller listens on.
const (
	routerLBIP  = "192.0.2.20"
	ingressLBIP = "192.0.2.30"
	cpName      = testfixture.Name
)

// harness is one test's namespace, fake Controller and reconciler. Reconcile is called directly,
// so every requeue delay is a value to assert, never a wait.
type harness struct {
	t   *testing.T
	g   Gomega
	ctx context.Context
	ns  string
	api *fake.Server
	r   *controlplane.Reconciler
	rec *recorder
	// clock is the reconciler's clock (Options.Clock): the real time when the harness starts,
	// moved only by the test.
	clock *clocktesting.FakePassiveClock

	writes atomic.Int64
	// passes counts the reads of the ControlPlane object: Reconcile reads it once per pass.
	passes atomic.Int64
	// passEnds counts the passes that returned (Options.OnPass): passes == passEnds means no
	// pass is in flight.
	passEnds atomic.Int64
	// cpWrites counts the writes (status and metadata patches) of ControlPlane objects.
	cpWrites atomic.Int64

	// controllerLB is the loopback address the tests assign to the controller LoadBalancer
	// Service; the fake Controller listens on controllerLB:51121, so the external check dials
	// what the operator computes.
	controllerLB string
	// tlsCA is the test CA that issued the fake's certificate (HTTPS harnesses only).
	tlsCA *pki.KeyPair
	// tlsLeaf is the fake's certificate and key (HTTPS harnesses only).
	tlsLeaf *pki.KeyPair
	// idpCA is the CA (PEM) of the identity provider startIdentityProvider started, if any.
	idpCA []byte

	mu       sync.Mutex
	baseURLs []string
}

type harnessConfig struct {
	tls bool
	// tlsNames are the SANs of the fake's certificate; nil means the addresses the operator dials.
	tlsNames []string
}

type harnessOption func(*harnessConfig)

// withTLSController serves the fake Controller over HTTPS with a certificate issued by a test CA
// for the addresses the operator dials (127.0.0.1 and the controller LoadBalancer address).
// Nothing trusts that CA unless a test puts it in the ControlPlane's TLS Secret
// (createControllerTLSSecret) or a CA Secret.
func withTLSController() harnessOption { return func(c *harnessConfig) { c.tls = true } }

// withTLSControllerNames is withTLSController with a certificate for names only.
func withTLSControllerNames(names ...string) harnessOption {
	return func(c *harnessConfig) { c.tls, c.tlsNames = true, names }
}

// requireEnv skips the test under -short (TestMain starts no envtest then) and fails it when
// envtest is missing otherwise: a suite whose tools are missing fails, it does not skip.
func requireEnv(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: needs envtest")
	}
	if env == nil {
		t.Fatal("envtest is not running (TestMain did not start it)")
	}
}

func newHarness(t *testing.T, opts ...harnessOption) *harness {
	t.Helper()
	requireEnv(t)
	var cfg harnessConfig
	for _, o := range opts {
		o(&cfg)
	}
	h := &harness{t: t, g: NewWithT(t), ctx: ctrl.LoggerInto(t.Context(), ctrl.Log.WithName(t.Name())), rec: &recorder{}}
	h.controllerLB = randomLoopbackIP()
	if cfg.tls {
		names := cfg.tlsNames
		if names == nil {
			names = []string{"127.0.0.1", h.controllerLB}
		}
		h.issueControllerCertificate(names)
		cert, err := tls.X509KeyPair(h.tlsLeaf.CertPEM, h.tlsLeaf.KeyPEM)
		h.g.Expect(err).NotTo(HaveOccurred())
		h.api = fake.NewTLSServer(fake.WithTLSCertificate(cert))
	} else {
		h.api = fake.NewServer()
	}
	t.Cleanup(h.api.Close)
	h.listenOnControllerLB()

	h.ns = "cp-" + randomSuffix()
	h.g.Expect(env.Client.Create(h.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: h.ns}})).To(Succeed())
	// The Controller imports a CA by reading its Secret from its namespace.
	h.api.SetSecretReader(fake.KubernetesSecrets(env.Client, h.ns))

	// The reconciler holds exactly the bundle's RBAC of a SingleNamespace install of h.ns.
	c, err := client.NewWithWatch(env.MustManagerConfig(t, "cp-"+h.ns, h.ns), client.Options{Scheme: scheme.New()})
	h.g.Expect(err).NotTo(HaveOccurred())
	counting := interceptor.NewClient(c, h.countWrites())

	// The operator's in-cluster endpoint is the fake's address: what an off-cluster operator is
	// given with --controller-endpoint-template (a port-forward).
	opts2 := controlplane.DefaultOptions()
	h.clock = clocktesting.NewFakePassiveClock(time.Now())
	opts2.Clock = h.clock
	opts2.OnPass = func(types.NamespacedName) { h.passEnds.Add(1) }
	opts2.ControllerEndpointTemplate = strings.TrimPrefix(strings.TrimPrefix(h.api.URL(), "https://"), "http://")
	h.r = &controlplane.Reconciler{
		Client:              counting,
		Options:             opts2,
		Recorder:            h.rec,
		NewControllerClient: h.clientFactory(),
		KeyGenerator:        testKeyGenerator,
	}
	return h
}

// clientFactory is the production client factory (no --controller-ca-file), recording every
// base URL it is asked for. Nothing is redirected: the operator reaches the fake only because
// the endpoint template and the controller LoadBalancer address are addresses the fake listens
// on, and over HTTPS only with the trust the ControlPlane gives it.
func (h *harness) clientFactory() conversation.ClientFactory {
	production := conversation.NewClientFactory("")
	return func(ep conversation.Endpoint) (conversation.API, error) {
		h.mu.Lock()
		h.baseURLs = append(h.baseURLs, ep.BaseURL)
		h.mu.Unlock()
		return production(ep)
	}
}

// listenOnControllerLB makes the fake Controller answer on h.controllerLB:51121 as well, trying
// another loopback address if that one is taken.
func (h *harness) listenOnControllerLB() {
	h.t.Helper()
	for range 5 {
		if _, err := h.api.Listen(net.JoinHostPort(h.controllerLB, "51121")); err == nil {
			return
		}
		h.controllerLB = randomLoopbackIP()
	}
	h.t.Fatal("no free loopback address for the controller LoadBalancer")
}

// randomLoopbackIP returns an address of 127.0.0.0/8 other than 127.0.0.1 (Linux routes the whole
// block to the loopback interface).
func randomLoopbackIP() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	if b[0] == 0 {
		b[0] = 1
	}
	return fmt.Sprintf("127.%d.%d.%d", b[0], b[1], b[2]|1)
}

// issueControllerCertificate makes the test CA and the fake's certificate for names.
func (h *harness) issueControllerCertificate(names []string) {
	h.t.Helper()
	now := time.Now()
	ca, err := pki.GenerateCA("controller-test-ca", now, 0, pki.WithKeyGenerator(testKeyGenerator))
	h.g.Expect(err).NotTo(HaveOccurred())
	leaf, err := pki.GenerateLeaf(ca, "controller", names, now, 0, pki.WithKeyGenerator(testKeyGenerator))
	h.g.Expect(err).NotTo(HaveOccurred())
	h.tlsCA, h.tlsLeaf = ca, leaf
}

// createControllerTLSSecret creates the kubernetes.io/tls Secret the Controller serves from: the
// fake's certificate and key, and the test CA as ca.crt unless withoutCA.
func (h *harness) createControllerTLSSecret(name string, withoutCA bool) {
	h.t.Helper()
	data := pki.SecretData(h.tlsLeaf, h.tlsCA.CertPEM)
	if withoutCA {
		delete(data, pki.CACertKey)
	}
	h.g.Expect(env.Client.Create(h.ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns},
		Type:       corev1.SecretTypeTLS,
		Data:       data,
	})).To(Succeed())
}

func (h *harness) requestedBaseURLs() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.baseURLs)
}

// countWrites counts every request that could change the API server's state, and the passes.
func (h *harness) countWrites() interceptor.Funcs {
	return interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*datasancev3.ControlPlane); ok {
				h.passes.Add(1)
			}
			return c.Get(ctx, key, obj, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			h.writes.Add(1)
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			h.writes.Add(1)
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			h.writes.Add(1)
			h.countControlPlaneWrite(obj)
			return c.Patch(ctx, obj, p, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			h.writes.Add(1)
			return c.Apply(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			h.writes.Add(1)
			return c.Delete(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			h.writes.Add(1)
			h.countControlPlaneWrite(obj)
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			h.writes.Add(1)
			h.countControlPlaneWrite(obj)
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
	}
}

func (h *harness) countControlPlaneWrite(obj client.Object) {
	if _, ok := obj.(*datasancev3.ControlPlane); ok {
		h.cpWrites.Add(1)
	}
}

// noWatch adapts a manager's client.Client to the client.WithWatch the interceptor wraps; the
// reconciler never watches through its client.
type noWatch struct{ client.Client }

func (noWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("watch is not supported through the reconciler's client")
}

// controlPlane is the harness's ControlPlane: testfixture.ControlPlane in the harness's
// namespace with the fake's bootstrap user, the external Postgres database and NATS off (the
// NATS tests turn it on with testfixture.WithNATS), then mods.
func (h *harness) controlPlane(mods ...testfixture.Mod) *datasancev3.ControlPlane {
	return testfixture.ControlPlane(append([]testfixture.Mod{
		testfixture.InNamespace(h.ns),
		testfixture.WithBootstrap(fake.DefaultUsername, fake.DefaultPassword),
		testfixture.WithPostgres("db-secret-value"),
		testfixture.WithoutNATS(),
	}, mods...)...)
}

// create stores cp in the API server.
func (h *harness) create(cp *datasancev3.ControlPlane) {
	h.t.Helper()
	h.g.Expect(env.Client.Create(h.ctx, cp)).To(Succeed())
}

// reconcile runs one pass.
func (h *harness) reconcile() (ctrl.Result, error) {
	return h.r.Reconcile(h.ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: h.ns, Name: cpName}})
}

// mustRequeue runs one pass and expects it to ask for exactly delay, without an error.
func (h *harness) mustRequeue(delay any) {
	h.t.Helper()
	res, err := h.reconcile()
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(res.RequeueAfter).To(Equal(delay))
}

// mustBeReady runs one pass and expects it to end ready: no error, and only the requeue that
// verifies the Controller later.
func (h *harness) mustBeReady() {
	h.t.Helper()
	res, err := h.reconcile()
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(isReadyResult(res)).To(BeTrue(), "result %+v", res)
	h.expectState(datasancev3.ConditionReady, datasancev3.ReasonReconciled)
}

// rollOut runs one pass that writes a workload and waits for its rollout (WorkloadUnavailable),
// then finishes the rollouts as the workload controllers would (finishRollouts).
func (h *harness) rollOut() {
	h.t.Helper()
	res, err := h.reconcile()
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(res.RequeueAfter).To(Equal(controlplane.RequeueWorkload), "result %+v", res)
	h.g.Expect(h.trueCondition().Reason).To(Equal(datasancev3.ReasonWorkloadUnavailable))
	h.finishRollouts()
}

// isReadyResult reports whether res is what a pass that ended ready returns.
func isReadyResult(res ctrl.Result) bool {
	return res == ctrl.Result{RequeueAfter: controlplane.DefaultControllerVerifyInterval}
}

// bringUp drives a new ControlPlane to ready: it plays the cloud (load balancer addresses for the
// LoadBalancer Services and the Ingress) between passes.
func (h *harness) bringUp(cp *datasancev3.ControlPlane) {
	h.t.Helper()
	h.create(cp)
	h.bringUpExisting()
}

// assignAddresses plays the cloud and the workload controllers: every LoadBalancer Service and
// the controller Ingress get an address if they have none, and every rollout finishes
// (finishRollouts).
func (h *harness) assignAddresses() {
	h.t.Helper()
	h.finishRollouts()
	for name, ip := range map[string]string{"controller": h.controllerLB, "router": routerLBIP} {
		svc := &corev1.Service{}
		if err := env.Client.Get(h.ctx, h.key(name), svc); err != nil {
			continue
		}
		if svc.Spec.Type == corev1.ServiceTypeLoadBalancer && len(svc.Status.LoadBalancer.Ingress) == 0 {
			h.setServiceAddress(name, ip)
		}
	}
	ing := &networkingv1.Ingress{}
	if err := env.Client.Get(h.ctx, h.key("controller"), ing); err == nil && len(ing.Status.LoadBalancer.Ingress) == 0 {
		h.setIngressAddress(ingressLBIP)
	}
}

// finishRollouts plays the deployment and statefulset controllers of a cluster whose pods all
// start: every Deployment and StatefulSet of the namespace gets the status of a finished rollout of
// its current generation. This suite's API server runs no controllers and no pods; the suites on
// the test bed (test/e2e) observe the real ones.
func (h *harness) finishRollouts() {
	h.t.Helper()
	var ds appsv1.DeploymentList
	h.g.Expect(env.Client.List(h.ctx, &ds, client.InNamespace(h.ns))).To(Succeed())
	for i := range ds.Items {
		d := &ds.Items[i]
		n := ptr.Deref(d.Spec.Replicas, 1)
		want := appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n}
		if !d.DeletionTimestamp.IsZero() || equality.Semantic.DeepEqual(d.Status, want) {
			continue
		}
		d.Status = want
		h.g.Expect(client.IgnoreNotFound(env.Client.Status().Update(h.ctx, d))).To(Succeed())
	}
	var sets appsv1.StatefulSetList
	h.g.Expect(env.Client.List(h.ctx, &sets, client.InNamespace(h.ns))).To(Succeed())
	for i := range sets.Items {
		sts := &sets.Items[i]
		n := ptr.Deref(sts.Spec.Replicas, 1)
		want := appsv1.StatefulSetStatus{ObservedGeneration: sts.Generation, Replicas: n, ReadyReplicas: n, CurrentReplicas: n,
			UpdatedReplicas: n, AvailableReplicas: n}
		if !sts.DeletionTimestamp.IsZero() || sts.Status.ObservedGeneration == want.ObservedGeneration && sts.Status.ReadyReplicas == n &&
			sts.Status.UpdatedReplicas == n && sts.Status.AvailableReplicas == n {
			continue
		}
		sts.Status = want
		h.g.Expect(client.IgnoreNotFound(env.Client.Status().Update(h.ctx, sts))).To(Succeed())
	}
}

func (h *harness) setServiceAddress(name, ip string) {
	h.t.Helper()
	svc := &corev1.Service{}
	h.g.Expect(env.Client.Get(h.ctx, h.key(name), svc)).To(Succeed())
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}}
	h.g.Expect(env.Client.Status().Update(h.ctx, svc)).To(Succeed())
}

func (h *harness) setIngressAddress(ip string) {
	h.t.Helper()
	ing := &networkingv1.Ingress{}
	h.g.Expect(env.Client.Get(h.ctx, h.key("controller"), ing)).To(Succeed())
	ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: ip}}
	h.g.Expect(env.Client.Status().Update(h.ctx, ing)).To(Succeed())
}

func (h *harness) key(name string) types.NamespacedName {
	return types.NamespacedName{Namespace: h.ns, Name: name}
}

// get reads the ControlPlane.
func (h *harness) get() *datasancev3.ControlPlane {
	h.t.Helper()
	cp := &datasancev3.ControlPlane{}
	h.g.Expect(env.Client.Get(h.ctx, h.key(cpName), cp)).To(Succeed())
	return cp
}

// update changes the ControlPlane's spec. The operator patches the object too (annotations,
// finalizer), so an update that meets a newer version is read and applied again, as kubectl edit
// would be.
func (h *harness) update(mutate func(*datasancev3.ControlPlane)) {
	h.t.Helper()
	h.g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cp := h.get()
		mutate(cp)
		return env.Client.Update(h.ctx, cp)
	})).To(Succeed())
}

// expectState asserts the True condition and that it is the only one.
func (h *harness) expectState(state, reason string) {
	h.t.Helper()
	cp := h.get()
	var trues []metav1.Condition
	for _, c := range cp.Status.Conditions {
		if c.Status == metav1.ConditionTrue {
			trues = append(trues, c)
		}
	}
	h.g.Expect(trues).To(HaveLen(1), "exactly one True condition: %+v", cp.Status.Conditions)
	h.g.Expect(trues[0].Type).To(Equal(state), "message: %s", trues[0].Message)
	h.g.Expect(trues[0].Reason).To(Equal(reason), "message: %s", trues[0].Message)
	h.g.Expect(trues[0].ObservedGeneration).To(Equal(cp.Generation))
}

// trueCondition returns the True condition.
func (h *harness) trueCondition() metav1.Condition {
	h.t.Helper()
	for _, c := range h.get().Status.Conditions {
		if c.Status == metav1.ConditionTrue {
			return c
		}
	}
	h.t.Fatal("no True condition")
	return metav1.Condition{}
}

func (h *harness) deployment(name string) *appsv1.Deployment {
	h.t.Helper()
	d := &appsv1.Deployment{}
	h.g.Expect(env.Client.Get(h.ctx, h.key(name), d)).To(Succeed())
	return d
}

func (h *harness) secret(name string) *corev1.Secret {
	h.t.Helper()
	s := &corev1.Secret{}
	h.g.Expect(env.Client.Get(h.ctx, h.key(name), s)).To(Succeed())
	return s
}

func (h *harness) exists(obj client.Object, name string) bool {
	h.t.Helper()
	err := env.Client.Get(h.ctx, h.key(name), obj)
	if err == nil {
		return true
	}
	h.g.Expect(client.IgnoreNotFound(err)).To(Succeed())
	return false
}

// envOf returns a container's environment: literal values, and "secret:<name>/<key>" for
// Secret-backed variables.
func envOf(c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
			out[e.Name] = "secret:" + e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil:
			out[e.Name] = "field:" + e.ValueFrom.FieldRef.FieldPath
		default:
			out[e.Name] = e.Value
		}
	}
	return out
}

// recorder records Events.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) Eventf(_ runtime.Object, _ runtime.Object, eventtype, reason, _, note string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, eventtype+" "+reason+" "+fmt.Sprintf(note, args...))
}

func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

func randomSuffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// createTLSSecret creates a user-owned kubernetes.io/tls Secret with a generated CA.
func (h *harness) createTLSSecret(name string) *corev1.Secret {
	h.t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns},
		Type:       corev1.SecretTypeTLS,
		Data:       h.createTLSSecretData(name),
	}
	h.g.Expect(env.Client.Create(h.ctx, s)).To(Succeed())
	return s
}

// assignAddressesAfterFirstPass runs the pass that creates the Services and assigns their
// addresses.
func (h *harness) assignAddressesAfterFirstPass() {
	h.t.Helper()
	_, _ = h.reconcile()
	h.assignAddresses()
}

// bringUpExisting drives an existing ControlPlane to ready, playing the cloud between passes.
func (h *harness) bringUpExisting() {
	h.t.Helper()
	for range 8 {
		h.assignAddresses()
		res, err := h.reconcile()
		h.g.Expect(err).NotTo(HaveOccurred())
		if isReadyResult(res) {
			h.expectState(datasancev3.ConditionReady, datasancev3.ReasonReconciled)
			return
		}
	}
	h.t.Fatalf("ControlPlane not ready after 8 passes: %+v", h.get().Status)
}

// createTLSSecretData returns the data of a kubernetes.io/tls Secret holding a new CA.
func (h *harness) createTLSSecretData(commonName string) map[string][]byte {
	h.t.Helper()
	kp, err := pki.GenerateCA(commonName, time.Now(), 0, pki.WithKeyGenerator(testKeyGenerator))
	h.g.Expect(err).NotTo(HaveOccurred())
	return pki.SecretData(kp, nil)
}
