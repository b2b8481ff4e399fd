package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/app"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane"
	"github.com/kubeopera/kubeopera-operator/internal/iofog/fake"
	"github.com/kubeopera/kubeopera-operator/internal/pki"
	"github.com/kubeopera/kubeopera-operator/internal/scheme"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// controlPlane is the benchmark ControlPlane: embedded auth with the fake Controller's
// bootstrap user, an external database, NATS on (the default), every Service a LoadBalancer
// (the default).
func controlPlane(ns string) *datasancev3.ControlPlane {
	return testfixture.ControlPlane(testfixture.InNamespace(ns),
		testfixture.WithBootstrap(fake.DefaultUsername, fake.DefaultPassword), testfixture.WithPostgres("bench-db-password"))
}

func createNamespace(ctx context.Context, c client.Client, name string) error {
	return c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
}

// watchRoundTrip is the P1 floor: patch a Service's status with one client and see the change in
// another client's informer, runs times; it returns the durations in ms.
func watchRoundTrip(ctx context.Context, h *cluster, runs int) ([]float64, error) {
	const ns, name = "floor-watch", "probe"
	if err := createNamespace(ctx, h.Client, ns); err != nil {
		return nil, err
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}},
	}
	if err := h.Client.Create(ctx, svc); err != nil {
		return nil, err
	}
	ca, err := cache.New(h.Config, cache.Options{Scheme: scheme.New(), DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		return nil, err
	}
	seen := make(chan string, 64)
	inf, err := ca.GetInformer(ctx, &corev1.Service{})
	if err != nil {
		return nil, err
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(_, o any) {
		if s, ok := o.(*corev1.Service); ok && len(s.Status.LoadBalancer.Ingress) > 0 {
			seen <- s.Status.LoadBalancer.Ingress[0].IP
		}
	}}); err != nil {
		return nil, err
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { _ = ca.Start(cctx) }()
	ca.WaitForCacheSync(cctx)
	var out []float64
	for i := range runs {
		ip := fmt.Sprintf("203.0.113.%d", i%250+1)
		patch := client.RawPatch("application/merge-patch+json", fmt.Appendf(nil, `{"status":{"loadBalancer":{"ingress":[{"ip":%q}]}}}`, ip))
		start := time.Now()
		if err := h.Client.Status().Patch(ctx, svc.DeepCopy(), patch); err != nil {
			return nil, err
		}
		for got := ""; got != ip; {
			select {
			case got = <-seen:
			case <-time.After(10 * time.Second):
				return nil, fmt.Errorf("the informer did not see the patch within 10s")
			}
		}
		out = append(out, ms(time.Since(start)))
	}
	return out, nil
}

// readinessLatency is P1 for ControlPlanes: runs ControlPlanes, one after the other, each in its
// own namespace; for each, the time from the last dependency the cloud wrote to Ready (both seen
// through the benchmark's watch).
func readinessLatency(ctx context.Context, h *cluster, cl *cloud, runs int) (lat []float64, err error) {
	for i := range runs {
		ns := fmt.Sprintf("p1-cp-%02d", i)
		if err := createNamespace(ctx, h.Client, ns); err != nil {
			return nil, err
		}
		cl.net.controller(ns)
		if err := h.Client.Create(ctx, controlPlane(ns)); err != nil {
			return nil, err
		}
		ready, last, err := cl.waitReady(ctx, ns, 3*time.Minute)
		if err != nil {
			return lat, err
		}
		if last.IsZero() {
			return lat, fmt.Errorf("ControlPlane in %s ready before any dependency was written", ns)
		}
		lat = append(lat, ms(ready.Sub(last)))
	}
	return lat, nil
}

// scaleRun creates n ControlPlanes in n namespaces at once (parallel writers) and waits for all to be
// ready; it returns the wall time from the first create to the last Ready.
func scaleRun(ctx context.Context, h *cluster, cl *cloud, prefix string, n int) (time.Duration, error) {
	names := make([]string, n)
	for i := range n {
		names[i] = fmt.Sprintf("%s-%03d", prefix, i)
		if err := createNamespace(ctx, h.Client, names[i]); err != nil {
			return 0, err
		}
		cl.net.controller(names[i])
	}
	start := time.Now()
	if err := parallel(writers, n, func(i int) error { return h.Client.Create(ctx, controlPlane(names[i])) }); err != nil {
		return 0, err
	}
	var last time.Time
	for _, ns := range names {
		ready, _, err := cl.waitReady(ctx, ns, 10*time.Minute)
		if err != nil {
			return 0, err
		}
		if ready.After(last) {
			last = ready
		}
	}
	return last.Sub(start), nil
}

// ownedKinds are the kinds a ControlPlane creates.
func ownedKinds() []client.ObjectList {
	return []client.ObjectList{
		&corev1.SecretList{}, &corev1.ConfigMapList{}, &corev1.ServiceAccountList{}, &corev1.ServiceList{},
		&corev1.PersistentVolumeClaimList{}, &rbacv1.RoleList{}, &rbacv1.RoleBindingList{},
		&appsv1.DeploymentList{}, &appsv1.StatefulSetList{}, &networkingv1.IngressList{},
	}
}

// scaleFloor is the P3 floor: a bare client creates what the operator created for the n
// ControlPlanes of prefix (the ControlPlanes themselves and every object they own, as stored),
// with the concurrency of the ControlPlane controller (one worker), and the RSA keys in those
// objects are generated again, one after the other. It returns both durations and the number of
// keys.
func scaleFloor(ctx context.Context, h *cluster, prefix string, n int) (create, keys time.Duration, nKeys int, err error) {
	var objs []client.Object
	keyBits := 0
	for i := range n {
		src := fmt.Sprintf("%s-%03d", prefix, i)
		dst := fmt.Sprintf("floor-%s-%03d", prefix, i)
		if err := createNamespace(ctx, h.Client, dst); err != nil {
			return 0, 0, 0, err
		}
		objs = append(objs, controlPlane(dst))
		for _, list := range ownedKinds() {
			if err := h.Client.List(ctx, list, client.InNamespace(src), client.MatchingLabels(controlplane.OwnedLabels())); err != nil {
				return 0, 0, 0, err
			}
			items, err := metaItems(list)
			if err != nil {
				return 0, 0, 0, err
			}
			for _, o := range items {
				if s, ok := o.(*corev1.Secret); ok {
					k, bits := rsaKeys(s)
					nKeys += k
					keyBits = max(keyBits, bits)
				}
				o.SetNamespace(dst)
				o.SetResourceVersion("")
				o.SetUID("")
				o.SetCreationTimestamp(metav1.Time{})
				o.SetManagedFields(nil)
				o.SetOwnerReferences(nil)
				o.SetGeneration(0)
				objs = append(objs, o)
			}
		}
	}
	start := time.Now()
	for _, o := range objs {
		if err := h.Client.Create(ctx, o); err != nil {
			return 0, 0, 0, fmt.Errorf("floor create %T %s: %w", o, o.GetName(), err)
		}
	}
	create = time.Since(start)
	if keyBits == 0 {
		keyBits = pki.KeyBits
	}
	start = time.Now()
	for range nKeys {
		if _, err := rsa.GenerateKey(rand.Reader, keyBits); err != nil {
			return 0, 0, 0, err
		}
	}
	return create, time.Since(start), nKeys, nil
}

// rsaKeys counts the RSA private keys in a Secret's values, and their size.
func rsaKeys(s *corev1.Secret) (n, bits int) {
	for _, v := range s.Data {
		rest := v
		for {
			var block *pem.Block
			block, rest = pem.Decode(rest)
			if block == nil {
				break
			}
			var key any
			var err error
			switch block.Type {
			case "RSA PRIVATE KEY":
				key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
			case "PRIVATE KEY":
				key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
			default:
				continue
			}
			if k, ok := key.(*rsa.PrivateKey); ok && err == nil {
				n++
				bits = k.N.BitLen()
			}
		}
	}
	return n, bits
}

func metaItems(list client.ObjectList) ([]client.Object, error) {
	var out []client.Object
	switch l := list.(type) {
	case *corev1.SecretList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *corev1.ConfigMapList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *corev1.ServiceAccountList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *corev1.ServiceList:
		for i := range l.Items {
			s := &l.Items[i]
			// Allocated by the API server on create.
			s.Spec.ClusterIP, s.Spec.ClusterIPs, s.Spec.HealthCheckNodePort = "", nil, 0
			for j := range s.Spec.Ports {
				s.Spec.Ports[j].NodePort = 0
			}
			s.Status = corev1.ServiceStatus{}
			out = append(out, s)
		}
	case *corev1.PersistentVolumeClaimList:
		for i := range l.Items {
			l.Items[i].Status = corev1.PersistentVolumeClaimStatus{}
			out = append(out, &l.Items[i])
		}
	case *rbacv1.RoleList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *rbacv1.RoleBindingList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *appsv1.DeploymentList:
		for i := range l.Items {
			l.Items[i].Status = appsv1.DeploymentStatus{}
			out = append(out, &l.Items[i])
		}
	case *appsv1.StatefulSetList:
		for i := range l.Items {
			l.Items[i].Status = appsv1.StatefulSetStatus{}
			out = append(out, &l.Items[i])
		}
	case *networkingv1.IngressList:
		for i := range l.Items {
			l.Items[i].Status = networkingv1.IngressStatus{}
			out = append(out, &l.Items[i])
		}
	default:
		return nil, fmt.Errorf("unknown list %T", list)
	}
	return out, nil
}

// unrelatedObjects creates n Secrets and n ConfigMaps (1 KiB of data each) that have nothing to
// do with the operator, spread over 100 namespaces.
func unrelatedObjects(ctx context.Context, c client.Client, n int) error {
	const spaces = 100
	for i := range spaces {
		if err := createNamespace(ctx, c, fmt.Sprintf("unrelated-%03d", i)); err != nil {
			return err
		}
	}
	data := make([]byte, 1024)
	_, _ = rand.Read(data)
	return parallel(writers, n, func(i int) error {
		ns := fmt.Sprintf("unrelated-%03d", i%spaces)
		meta := metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("unrelated-%05d", i), Labels: map[string]string{"app": "unrelated"}}
		if err := c.Create(ctx, &corev1.Secret{ObjectMeta: meta, Data: map[string][]byte{"blob": data}}); err != nil {
			return err
		}
		return c.Create(ctx, &corev1.ConfigMap{ObjectMeta: meta, BinaryData: map[string][]byte{"blob": data}})
	})
}

// writers is the app controller's default workers (the bench runs the operator with the default):
// the P4 floor's API work runs on as many goroutines, so it has the controller's concurrency; the
// harness's own bulk creates use as many.
const writers = app.DefaultMaxConcurrentReconciles

// parallel runs f(0..n-1) on workers goroutines and returns the first error.
func parallel(workers, n int, f func(int) error) error {
	var (
		mu    sync.Mutex
		first error
		next  int
	)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				mu.Lock()
				i := next
				next++
				stop := first != nil
				mu.Unlock()
				if i >= n || stop {
					return
				}
				if err := retryConflict(func() error { return f(i) }); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return first
}

// retryConflict retries f briefly on a transient error (the API server is busy).
func retryConflict(f func() error) error {
	var err error
	_ = wait.ExponentialBackoff(wait.Backoff{Duration: 50 * time.Millisecond, Factor: 2, Steps: 5}, func() (bool, error) {
		err = f()
		if apierrors.IsAlreadyExists(err) {
			err = nil // an earlier attempt landed
		}
		return err == nil, nil
	})
	return err
}
