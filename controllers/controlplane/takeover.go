package controlplane

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
	"github.com/kubeopera/kubeopera-operator/internal/outcome"
	"github.com/kubeopera/kubeopera-operator/internal/scheme"
)

// Taking over from the Datasance iofog-operator (docs/controlplane.md#taking-over-from-the-datasance-operator).
// Its Deployments and StatefulSet have the names this operator's have but other selectors, which are
// immutable: applying this operator's over them fails forever. So a pass first looks at the three workloads
// (takeOver): one of the Datasance operator's is deleted with its pods orphaned, so they keep
// serving; anything else that is not this operator's stops the pass before it writes anything
// (ForeignWorkload). Once the garbage collector has released the pods, the components create
// their workloads, and each hands over from the orphaned pods: its Services select the pods of
// both operators, and the old pods are retired once new ones can take their place (a Deployment
// available; for NATS one server at a time, each new one on its predecessor's volume). Nothing
// is remembered between passes but what the cluster shows: the old pods themselves, found by
// their labels, resources.AnnotationTakingOver on a workload created while they ran, and the
// Datasance operator's label on the Services it created.

// handover is what the Datasance operator's workload of a component left running: its pods and,
// for a Deployment, the ReplicaSets that keep them.
type handover struct {
	pods        []corev1.Pod
	replicaSets []appsv1.ReplicaSet
}

// workloadSlot is the Deployment or StatefulSet of a component, and the Service that selects
// its pods.
type workloadSlot struct {
	component, kind, name, service string
	newObject                      func() client.Object
}

func (w workloadSlot) String() string { return w.kind + " " + w.name }

// workloadSlots are the workloads of the components that run.
func (s *scope) workloadSlots() []workloadSlot {
	deployment := func() client.Object { return &appsv1.Deployment{} }
	slots := []workloadSlot{
		{component: resources.ComponentRouter, kind: "Deployment", name: resources.RouterName, service: resources.RouterName, newObject: deployment},
		{component: resources.ComponentController, kind: "Deployment", name: resources.ControllerName, service: resources.ControllerName, newObject: deployment},
	}
	if s.natsEnabled() {
		slots = append(slots, workloadSlot{component: resources.ComponentNats, kind: "StatefulSet", name: resources.NatsStatefulSetName,
			service: resources.NatsHeadlessServiceName, newObject: func() client.Object { return &appsv1.StatefulSet{} }})
	}
	return slots
}

// takeOver runs before the components. Every workload that is neither this operator's nor the
// Datasance operator's is refused (terminal ForeignWorkload, nothing written); otherwise every
// one of the Datasance operator's is deleted with propagation Orphan, and the pass waits
// (TakingOver) until the garbage collector has removed them. Then it records, for each component
// whose workload is marked resources.AnnotationTakingOver, or is missing where the Datasance
// operator ran (datasanceRan), the pods of the Datasance operator still there (s.handovers). A
// workload of this operator's without the mark costs nothing more than the cached read.
func (r *Reconciler) takeOver(ctx context.Context, s *scope) error {
	var legacy []client.Object
	var legacySlots, foreign, observe []workloadSlot
	for _, w := range s.workloadSlots() {
		live := w.newObject()
		found, err := r.getExisting(ctx, s, w.name, live)
		if err != nil {
			return err
		}
		if !found {
			ran, err := r.datasanceRan(ctx, s, w)
			if err != nil {
				return err
			}
			if ran {
				observe = append(observe, w)
			}
			continue
		}
		switch resources.ClassifyWorkload(s.cp, w.component, workloadSelector(live), metav1.GetControllerOf(live)) {
		case resources.WorkloadOurs:
			if _, marked := live.GetAnnotations()[resources.AnnotationTakingOver]; marked {
				observe = append(observe, w)
			}
		case resources.WorkloadDatasance:
			legacy, legacySlots = append(legacy, live), append(legacySlots, w)
		default:
			foreign = append(foreign, w)
		}
	}
	if len(foreign) > 0 {
		return outcome.Stop(datasancev3.ReasonForeignWorkload, fmt.Errorf(
			"%s in namespace %s: selected neither by this operator's labels nor by the Datasance operator's, or controlled by "+
				"another object; nothing is written until it is deleted or renamed", joinSlots(foreign), s.namespace()))
	}
	if len(legacy) > 0 {
		if err := checkDatasanceSQLite(s, legacy, legacySlots); err != nil {
			return err
		}
		if err := r.releaseNatsJetStreamKey(ctx, s); err != nil {
			return err
		}
		return r.replaceDatasanceWorkloads(ctx, s, legacy, legacySlots)
	}
	for _, w := range observe {
		h, err := r.observeHandover(ctx, s, w)
		if err != nil {
			return err
		}
		if h != nil {
			if s.handovers == nil {
				s.handovers = map[string]*handover{}
			}
			s.handovers[w.component] = h
		}
	}
	return nil
}

// checkDatasanceSQLite refuses to replace the Datasance operator's SQLite Controller whose
// Deployment mounts the claim at the 3.7 path (refuseLegacySQLiteMount): a 3.7 Controller wrote a
// database there that this operator's Controller (3.8 and later) cannot migrate, or a 3.8+ one
// left its database on the pod's filesystem. Nothing is deleted or written before the
// confirmation.
func checkDatasanceSQLite(s *scope, legacy []client.Object, slots []workloadSlot) error {
	if !s.spec.UsesSQLite() {
		return nil
	}
	for i, w := range slots {
		if d, ok := legacy[i].(*appsv1.Deployment); ok && w.component == resources.ComponentController {
			return refuseLegacySQLiteMount(s, d)
		}
	}
	return nil
}

// datasanceRan reports whether the Datasance operator ran w's component here, for a component
// whose workload is missing: its Service carries resources.LabelDatasanceComponent. A first
// install costs one cached read, and no list of pods.
func (r *Reconciler) datasanceRan(ctx context.Context, s *scope, w workloadSlot) (bool, error) {
	svc := &corev1.Service{}
	found, err := r.getExisting(ctx, s, w.service, svc)
	if err != nil || !found {
		return false, err
	}
	_, ran := svc.Labels[resources.LabelDatasanceComponent]
	return ran, nil
}

// replaceDatasanceWorkloads deletes the Datasance operator's workloads, orphaning their pods,
// and waits until the garbage collector has released the pods and removed the workloads.
func (r *Reconciler) replaceDatasanceWorkloads(ctx context.Context, s *scope, legacy []client.Object, slots []workloadSlot) error {
	for i, obj := range legacy {
		if !obj.GetDeletionTimestamp().IsZero() {
			continue
		}
		err := r.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationOrphan),
			client.Preconditions{UID: ptr.To(obj.GetUID()), ResourceVersion: ptr.To(obj.GetResourceVersion())})
		if client.IgnoreNotFound(err) != nil {
			return outcome.Retry(datasancev3.ReasonApplyFailed, fmt.Errorf("delete %s of the Datasance operator: %w", slots[i], err))
		}
		ctrl.LoggerFrom(ctx).Info("Deleted a workload of the Datasance operator, orphaning its pods", slots[i].kind, klog.KRef(s.namespace(), slots[i].name))
		r.event(s.cp, corev1.EventTypeNormal, datasancev3.ReasonTakingOver, fmt.Sprintf(
			"Deleted %s of the Datasance operator, orphaning its pods: they keep serving until this operator's replace them.", slots[i]))
	}
	return outcome.Wait(datasancev3.ReasonTakingOver, requeueTakeover, fmt.Sprintf(
		"Taking over from the Datasance operator: waiting for the garbage collector to release the pods of %s.", joinSlots(slots)))
}

// observeHandover lists what the Datasance operator's workload of w left (uncached: pods and
// ReplicaSets are read only while taking over). Nil when nothing is left.
func (r *Reconciler) observeHandover(ctx context.Context, s *scope, w workloadSlot) (*handover, error) {
	opts := []client.ListOption{client.InNamespace(s.namespace()), client.MatchingLabels(resources.DatasancePodLabels(s.cp.Name, w.component))}
	var pods corev1.PodList
	if err := r.List(ctx, &pods, opts...); err != nil {
		return nil, outcome.Retry(datasancev3.ReasonApplyFailed, fmt.Errorf("list the pods of the Datasance operator's %s: %w", w, err))
	}
	h := &handover{pods: pods.Items}
	if w.kind == "Deployment" {
		var sets appsv1.ReplicaSetList
		if err := r.List(ctx, &sets, opts...); err != nil {
			return nil, outcome.Retry(datasancev3.ReasonApplyFailed, fmt.Errorf("list the ReplicaSets of the Datasance operator's %s: %w", w, err))
		}
		h.replicaSets = sets.Items
	}
	if len(h.pods) == 0 && len(h.replicaSets) == 0 {
		return nil, nil
	}
	return h, nil
}

// handover returns what the Datasance operator left of component, nil when nothing.
func (s *scope) handover(component string) *handover { return s.handovers[component] }

// serviceFor makes svc, a Service of component, select the pods of both operators while a
// handover of the component is under way.
func (s *scope) serviceFor(component string, svc *corev1ac.ServiceApplyConfiguration) *corev1ac.ServiceApplyConfiguration {
	if s.handover(component) != nil {
		resources.SelectDuringHandover(svc, s.cp.Name, component)
	}
	return svc
}

// handOverDeployment retires the Datasance operator's pods of a component's Deployment once this
// operator's Deployment is available. live is the Deployment as read before this pass's apply
// (no UID: it did not exist) and changed whether the apply wrote it: a Deployment just written
// has not been observed by its controller yet. It returns nil without a handover, and a wait
// (or a failure) while one is under way.
func (r *Reconciler) handOverDeployment(ctx context.Context, s *scope, component, name string, live *appsv1.Deployment, changed bool) error {
	h := s.handover(component)
	if h == nil {
		return nil
	}
	if live.UID == "" || changed || !deploymentAvailable(live) {
		return outcome.Wait(datasancev3.ReasonTakingOver, requeueTakeover, fmt.Sprintf(
			"Taking over from the Datasance operator: %s of its Deployment %s keep serving until this operator's is available.",
			podCount(len(h.pods)), name))
	}
	if err := r.retireDeploymentPods(ctx, h); err != nil {
		return err
	}
	return outcome.Wait(datasancev3.ReasonTakingOver, requeueTakeover, fmt.Sprintf(
		"Taking over from the Datasance operator: Deployment %s is available; retiring %s of its predecessor.", name, podCount(len(h.pods))))
}

// retireBeforeStarting stops the Datasance operator's pods of a component before this operator
// starts its own: two Controllers must never open one SQLite database (the claim is mounted by
// both). The component waits, without its Deployment, until they are gone.
func (r *Reconciler) retireBeforeStarting(ctx context.Context, s *scope, component, name string) error {
	h := s.handover(component)
	if err := r.retireDeploymentPods(ctx, h); err != nil {
		return err
	}
	return outcome.Wait(datasancev3.ReasonTakingOver, requeueTakeover, fmt.Sprintf(
		"Taking over from the Datasance operator: waiting for %s of its Deployment %s to stop before this operator's Controller "+
			"opens the same SQLite volume.", podCount(len(h.pods)), name))
}

// retireDeploymentPods deletes what keeps the Datasance operator's pods of a Deployment running:
// its ReplicaSets (the garbage collector deletes their pods) and any pod no ReplicaSet controls.
// Each delete is preconditioned on the UID read, so an object created meanwhile is never hit.
func (r *Reconciler) retireDeploymentPods(ctx context.Context, h *handover) error {
	for i := range h.replicaSets {
		rs := &h.replicaSets[i]
		if rs.DeletionTimestamp.IsZero() {
			if err := r.deleteLegacy(ctx, rs, metav1.DeletePropagationBackground); err != nil {
				return err
			}
		}
	}
	for i := range h.pods {
		pod := &h.pods[i]
		if metav1.GetControllerOf(pod) == nil && pod.DeletionTimestamp.IsZero() {
			if err := r.deleteLegacy(ctx, pod, metav1.DeletePropagationBackground); err != nil {
				return err
			}
		}
	}
	return nil
}

// deleteLegacy deletes an object the Datasance operator's workload left, if it is still the one
// read.
func (r *Reconciler) deleteLegacy(ctx context.Context, obj client.Object, propagation metav1.DeletionPropagation) error {
	err := r.Delete(ctx, obj, client.PropagationPolicy(propagation), client.Preconditions{UID: ptr.To(obj.GetUID())})
	if client.IgnoreNotFound(err) != nil {
		return outcome.Retry(datasancev3.ReasonApplyFailed, fmt.Errorf("delete %T %s of the Datasance operator: %w", obj, obj.GetName(), err))
	}
	ctrl.LoggerFrom(ctx).Info("Retired an object of the Datasance operator", scheme.KindOf(obj), klog.KObj(obj))
	return nil
}

// natsHandoverReplicas is the replica count of this operator's NATS StatefulSet while pods of the
// Datasance operator's remain: the ordinals below the lowest of theirs. Pods of a StatefulSet are
// named by ordinal, so the two cannot run an ordinal at once; the new nats-<i> is created only
// after the old one is gone, and starts on the same volume (js-data-nats-<i>).
func natsHandoverReplicas(desired int32, legacy []corev1.Pod) int32 {
	k := desired
	for i := range legacy {
		if o, ok := natsOrdinal(legacy[i].Name); ok && o < k {
			k = o
		}
	}
	return k
}

// natsOrdinal is the ordinal of a NATS pod's name (nats-<i>).
func natsOrdinal(name string) (int32, bool) {
	rest, ok := strings.CutPrefix(name, resources.NatsStatefulSetName+"-")
	if !ok {
		return 0, false
	}
	o, err := strconv.ParseInt(rest, 10, 32)
	if err != nil || o < 0 {
		return 0, false
	}
	return int32(o), true
}

// nextLegacyNatsPod is the Datasance operator's NATS pod to retire next: the lowest ordinal
// (names that carry none last). Nil when one is still terminating: one server at a time.
func nextLegacyNatsPod(legacy []corev1.Pod) *corev1.Pod {
	var next *corev1.Pod
	for i := range legacy {
		p := &legacy[i]
		if !p.DeletionTimestamp.IsZero() {
			return nil
		}
		if next == nil || legacyOrdinalLess(p.Name, next.Name) {
			next = p
		}
	}
	return next
}

func legacyOrdinalLess(a, b string) bool {
	oa, okA := natsOrdinal(a)
	ob, okB := natsOrdinal(b)
	switch {
	case okA && okB:
		return oa < ob
	case okA != okB:
		return okA
	default:
		return a < b
	}
}

// handOverNats retires the Datasance operator's NATS pods one at a time, the lowest ordinal
// first, each once every server of this operator's StatefulSet (live, read before this pass's
// apply; nil when it did not exist) is ready at the replica count k the handover allows.
func (r *Reconciler) handOverNats(ctx context.Context, s *scope, h *handover, live *appsv1.StatefulSet, changed bool, k int32) error {
	desired := s.spec.NatsReplicas()
	progress := fmt.Sprintf("Taking over from the Datasance operator: %d of %d NATS servers replaced", k, desired)
	next := nextLegacyNatsPod(h.pods)
	if next == nil {
		return outcome.Wait(datasancev3.ReasonTakingOver, requeueTakeover, progress+"; waiting for a pod of its StatefulSet nats to stop.")
	}
	ready := k == 0 || live != nil && !changed && ptr.Deref(live.Spec.Replicas, 1) == k &&
		live.Status.ObservedGeneration >= live.Generation && live.Status.ReadyReplicas >= k
	if !ready {
		return outcome.Wait(datasancev3.ReasonTakingOver, requeueTakeover, fmt.Sprintf(
			"%s; waiting for this operator's to be ready before replacing pod %s.", progress, next.Name))
	}
	if err := r.deleteLegacy(ctx, next, metav1.DeletePropagationBackground); err != nil {
		return err
	}
	return outcome.Wait(datasancev3.ReasonTakingOver, requeueTakeover, fmt.Sprintf(
		"%s; replacing pod %s, whose volume the new server takes over.", progress, next.Name))
}

// workloadSelector is the pod selector of a Deployment or StatefulSet.
func workloadSelector(obj client.Object) *metav1.LabelSelector {
	switch w := obj.(type) {
	case *appsv1.Deployment:
		return w.Spec.Selector
	case *appsv1.StatefulSet:
		return w.Spec.Selector
	}
	return nil
}

func joinSlots(slots []workloadSlot) string {
	names := make([]string, len(slots))
	for i, w := range slots {
		names[i] = w.String()
	}
	return strings.Join(slices.Compact(names), ", ")
}

func podCount(n int) string {
	if n == 1 {
		return "1 pod"
	}
	return strconv.Itoa(n) + " pods"
}
