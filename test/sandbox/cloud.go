package sandbox

import (
	"context"
	"fmt"
	"net/netip"
	"sync"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

// Simulated is the word every log line and status line of a stand-in starts with.
const Simulated = "SIMULATED"

// firstLoadBalancerIP is the first loopback address the local cloud hands out; the next ones
// follow (127.0.100.1, 127.0.100.2, ...). All of 127.0.0.0/8 is routed to the loopback interface.
var firstLoadBalancerIP = netip.MustParseAddr("127.0.100.1")

// cloud is the local cloud of one cluster: what cloud-provider-kind and an ingress controller write
// into a kind cluster (load balancer and Ingress addresses), and nothing more. Workloads and pods
// are the test bed's real controllers and kwok.
type cloud struct {
	name string
	c    client.Client
	log  logr.Logger
	ips  *addressPool
	note func(string)
	// expose, when set, is told every address a LoadBalancer Service got (the sandbox serves the
	// fake Controller on the Controller Service's address).
	expose func(ctx context.Context, svc *corev1.Service, ip string) error
}

// addressPool hands out loopback addresses, one per LoadBalancer Service or Ingress, stable for
// the object's lifetime in this process.
type addressPool struct {
	mu       sync.Mutex
	next     netip.Addr
	assigned map[string]netip.Addr
}

func newAddressPool() *addressPool {
	return &addressPool{next: firstLoadBalancerIP, assigned: map[string]netip.Addr{}}
}

func (p *addressPool) get(key string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if a, ok := p.assigned[key]; ok {
		return a.String()
	}
	a := p.next
	p.next = p.next.Next()
	p.assigned[key] = a
	return a.String()
}

// newCloudManager builds a manager that runs the local cloud against cfg. note receives one
// sentence per simulated write (the status view shows the last ones).
func newCloudManager(name string, cfg *rest.Config, ips *addressPool, log logr.Logger, note func(string),
	expose func(context.Context, *corev1.Service, string) error,
) (manager.Manager, error) {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 testenv.Scheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Logger:                 log,
		// A process may run several (a test of its own per cluster).
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, fmt.Errorf("create local cloud manager: %w", err)
	}
	cl := &cloud{name: name, c: mgr.GetClient(), log: log.WithName("local-cloud").WithValues("cluster", name), ips: ips, note: note, expose: expose}
	for _, k := range []struct {
		kind string
		obj  client.Object
		fn   func(context.Context, reconcile.Request) (reconcile.Result, error)
	}{
		{"service", &corev1.Service{}, cl.reconcileService},
		{"ingress", &networkingv1.Ingress{}, cl.reconcileIngress},
	} {
		if err := ctrl.NewControllerManagedBy(mgr).For(k.obj).Named("local-cloud-" + name + "-" + k.kind).
			Complete(reconcile.Func(k.fn)); err != nil {
			return nil, fmt.Errorf("set up local cloud %s: %w", k.kind, err)
		}
	}
	return mgr, nil
}

func (cl *cloud) record(msg string, kv ...any) {
	cl.log.Info(Simulated+" "+msg, kv...)
	text := fmt.Sprintf("%s %s (%s)", Simulated, msg, cl.name)
	for i := 0; i+1 < len(kv); i += 2 {
		text += fmt.Sprintf(" %v=%v", kv[i], kv[i+1])
	}
	cl.note(text)
}

// reconcileService plays cloud-provider-kind: a LoadBalancer Service gets a loopback address in
// status.loadBalancer.ingress (what the service controller writes when the cloud's load balancer
// is up).
func (cl *cloud) reconcileService(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	svc := &corev1.Service{}
	if err := cl.c.Get(ctx, req.NamespacedName, svc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || !svc.DeletionTimestamp.IsZero() || len(svc.Status.LoadBalancer.Ingress) > 0 {
		return reconcile.Result{}, nil
	}
	ip := cl.ips.get(cl.name + "/service/" + req.String())
	if svc.Spec.LoadBalancerIP != "" {
		ip = svc.Spec.LoadBalancerIP
	}
	if cl.expose != nil {
		if err := cl.expose(ctx, svc, ip); err != nil {
			return reconcile.Result{}, err
		}
	}
	ports := make([]corev1.PortStatus, 0, len(svc.Spec.Ports))
	for _, p := range svc.Spec.Ports {
		ports = append(ports, corev1.PortStatus{Port: p.Port, Protocol: p.Protocol})
	}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip, IPMode: new(corev1.LoadBalancerIPModeVIP), Ports: ports}}
	if err := cl.c.Status().Update(ctx, svc); err != nil {
		return reconcile.Result{}, fmt.Errorf("write load balancer status: %w", err)
	}
	cl.record("load balancer: Service got an address", "service", req.String(), "ip", ip)
	return reconcile.Result{}, nil
}

// reconcileIngress plays an ingress controller (ingress-nginx in kind): an Ingress gets a loopback
// address in status.loadBalancer.ingress.
func (cl *cloud) reconcileIngress(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ing := &networkingv1.Ingress{}
	if err := cl.c.Get(ctx, req.NamespacedName, ing); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !ing.DeletionTimestamp.IsZero() || len(ing.Status.LoadBalancer.Ingress) > 0 {
		return reconcile.Result{}, nil
	}
	ip := cl.ips.get(cl.name + "/ingress/" + req.String())
	ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: ip}}
	if err := cl.c.Status().Update(ctx, ing); err != nil {
		return reconcile.Result{}, fmt.Errorf("write ingress status: %w", err)
	}
	cl.record("ingress controller: Ingress got an address", "ingress", req.String(), "ip", ip)
	return reconcile.Result{}, nil
}
