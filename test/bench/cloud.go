package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
)

// cloud plays the parts of a real cluster that envtest lacks, writing exactly what they write:
//   - the cloud load-balancer controller: every LoadBalancer Service without an address gets
//     status.loadBalancer.ingress[0].ip (from ipAllocator); for Service controller, the address
//     is routed to that namespace's fake Controller (controllerNet);
//   - the deployment and statefulset controllers: a workload whose status lags its spec gets the
//     status of a fully rolled-out, available workload (observedGeneration, replicas,
//     updated/ready/available replicas, Available and Progressing conditions).
//
// It reacts to watch events, at once. It records when it wrote each ControlPlane dependency (the
// controller and router addresses and the controller Deployment's availability), and it watches
// ControlPlanes to record when each first turned ready.
type cloud struct {
	c     client.Client
	cache cache.Cache
	net   *controllerNet
	ips   ipAllocator
	work  chan func()

	mu      sync.Mutex
	deps    map[string][]time.Time // namespace → times a dependency was written
	ready   map[string]time.Time   // namespace → first Ready of its ControlPlane
	waiters map[string]chan struct{}
}

func startCloud(ctx context.Context, cfg *rest.Config, net *controllerNet) (*cloud, error) {
	return runCloud(ctx, cfg, net, true)
}

// startTenantWorkloads plays only the deployment and statefulset controllers, for a vCluster's
// API server: Flux's health checks (the Kustomization's wait) read the applied Deployment's
// status there, which envtest has no controller to write.
func startTenantWorkloads(ctx context.Context, cfg *rest.Config) (*cloud, error) {
	return runCloud(ctx, cfg, nil, false)
}

func runCloud(ctx context.Context, cfg *rest.Config, net *controllerNet, host bool) (*cloud, error) {
	c, ca, err := clientAndCache(cfg)
	if err != nil {
		return nil, err
	}
	cl := &cloud{
		c: c, cache: ca, net: net, work: make(chan func(), 4096),
		deps: map[string][]time.Time{}, ready: map[string]time.Time{}, waiters: map[string]chan struct{}{},
	}
	for range 4 {
		go func() {
			for f := range cl.work {
				f()
			}
		}()
	}
	handlers := map[client.Object]func(any){
		&appsv1.Deployment{}:  cl.onDeployment,
		&appsv1.StatefulSet{}: cl.onStatefulSet,
	}
	if host {
		handlers[&corev1.Service{}] = cl.onService
		handlers[&datasancev3.ControlPlane{}] = cl.onControlPlane
	}
	for obj, h := range handlers {
		inf, err := ca.GetInformer(ctx, obj)
		if err != nil {
			return nil, err
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    h,
			UpdateFunc: func(_, o any) { h(o) },
		}); err != nil {
			return nil, err
		}
	}
	go func() { _ = ca.Start(ctx) }()
	if !ca.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("cloud cache did not sync")
	}
	return cl, nil
}

func (cl *cloud) dependency(ns string) {
	cl.mu.Lock()
	cl.deps[ns] = append(cl.deps[ns], time.Now())
	cl.mu.Unlock()
}

func (cl *cloud) onService(o any) {
	svc, ok := o.(*corev1.Service)
	if !ok || svc.Spec.Type != corev1.ServiceTypeLoadBalancer || len(svc.Status.LoadBalancer.Ingress) > 0 {
		return
	}
	key := client.ObjectKeyFromObject(svc)
	cl.work <- func() {
		ip := cl.ips.allocate()
		if svc.Name == "controller" {
			cl.net.routeLoadBalancer(svc.Namespace, ip)
		}
		patch := client.RawPatch("application/merge-patch+json",
			fmt.Appendf(nil, `{"status":{"loadBalancer":{"ingress":[{"ip":%q}]}}}`, ip))
		obj := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
		if err := cl.c.Status().Patch(context.Background(), obj, patch); err == nil && (svc.Name == "controller" || svc.Name == "router") {
			cl.dependency(svc.Namespace)
		}
	}
}

func (cl *cloud) onDeployment(o any) {
	d, ok := o.(*appsv1.Deployment)
	if !ok {
		return
	}
	replicas := int32(1)
	if d.Spec.Replicas != nil {
		replicas = *d.Spec.Replicas
	}
	if d.Status.ObservedGeneration == d.Generation && d.Status.AvailableReplicas == replicas && d.Status.UpdatedReplicas == replicas {
		return
	}
	d = d.DeepCopy()
	cl.work <- func() {
		now := metav1.Now()
		d.Status = appsv1.DeploymentStatus{
			ObservedGeneration: d.Generation, Replicas: replicas, UpdatedReplicas: replicas,
			ReadyReplicas: replicas, AvailableReplicas: replicas,
			Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable",
					Message: "Deployment has minimum availability.", LastUpdateTime: now, LastTransitionTime: now},
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable",
					Message: fmt.Sprintf("ReplicaSet %q has successfully progressed.", d.Name), LastUpdateTime: now, LastTransitionTime: now},
			},
		}
		if err := cl.c.Status().Update(context.Background(), d); err == nil && d.Name == "controller" {
			cl.dependency(d.Namespace)
		}
	}
}

func (cl *cloud) onStatefulSet(o any) {
	s, ok := o.(*appsv1.StatefulSet)
	if !ok {
		return
	}
	replicas := int32(1)
	if s.Spec.Replicas != nil {
		replicas = *s.Spec.Replicas
	}
	if s.Status.ObservedGeneration == s.Generation && s.Status.AvailableReplicas == replicas {
		return
	}
	s = s.DeepCopy()
	cl.work <- func() {
		rev := s.Name + "-bench"
		s.Status = appsv1.StatefulSetStatus{
			ObservedGeneration: s.Generation, Replicas: replicas, ReadyReplicas: replicas, CurrentReplicas: replicas,
			UpdatedReplicas: replicas, AvailableReplicas: replicas, CurrentRevision: rev, UpdateRevision: rev,
		}
		_ = cl.c.Status().Update(context.Background(), s)
	}
}

func (cl *cloud) onControlPlane(o any) {
	cp, ok := o.(*datasancev3.ControlPlane)
	if !ok || !isReady(cp) {
		return
	}
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if _, seen := cl.ready[cp.Namespace]; seen {
		return
	}
	cl.ready[cp.Namespace] = time.Now()
	if ch, ok := cl.waiters[cp.Namespace]; ok {
		close(ch)
		delete(cl.waiters, cp.Namespace)
	}
}

// isReady: the Ready condition is True for the current generation.
func isReady(cp *datasancev3.ControlPlane) bool {
	c := apimeta.FindStatusCondition(cp.Status.Conditions, datasancev3.ConditionReady)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == cp.Generation
}

// waitReady waits until the ControlPlane of ns is ready and returns when it turned ready and
// when the last dependency before that was written.
func (cl *cloud) waitReady(ctx context.Context, ns string, timeout time.Duration) (ready, lastDep time.Time, err error) {
	cl.mu.Lock()
	ch, ok := cl.waiters[ns]
	if !ok {
		ch = make(chan struct{})
		if _, done := cl.ready[ns]; done {
			close(ch)
		} else {
			cl.waiters[ns] = ch
		}
	}
	cl.mu.Unlock()
	select {
	case <-ch:
	case <-time.After(timeout):
		return time.Time{}, time.Time{}, fmt.Errorf("ControlPlane in %s not ready within %s", ns, timeout)
	case <-ctx.Done():
		return time.Time{}, time.Time{}, ctx.Err()
	}
	cl.mu.Lock()
	defer cl.mu.Unlock()
	ready = cl.ready[ns]
	for _, t := range cl.deps[ns] {
		if !t.After(ready) && t.After(lastDep) {
			lastDep = t
		}
	}
	return ready, lastDep, nil
}
