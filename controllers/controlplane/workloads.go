package controlplane

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
	"github.com/kubeopera/kubeopera-operator/internal/outcome"
)

// A component is done only when its workload runs: the Deployment (Controller, router) or the
// StatefulSet (NATS) has every replica of its current generation available. Until then the
// component waits with reason WorkloadUnavailable and a message that names the workload and what
// its pods say: the FailedCreate of their controller (admission, quota), a container that cannot
// pull its image or crash-loops, a pod the scheduler cannot place or that is not ready
// (docs/controlplane.md#ready-means-running). The Deployment and StatefulSet watches bring the
// ControlPlane back as soon as their status changes; requeueWorkload is only the fallback.

// requeueWorkload is how long a component waits for its workload before it looks again.
const requeueWorkload = 5 * time.Second

// componentTitle names a component in messages.
var componentTitle = map[string]string{
	resources.ComponentController: "Controller",
	resources.ComponentRouter:     "Router",
	resources.ComponentNats:       "NATS",
}

// deploymentAvailable reports whether a Deployment's controller has seen its current generation
// and runs every replica of the current template available, with no pod of an older template left
// (a rollout stuck on a failing new pod keeps the old one available: that is not done).
func deploymentAvailable(d *appsv1.Deployment) bool {
	replicas := ptr.Deref(d.Spec.Replicas, 1)
	st := d.Status
	return st.ObservedGeneration >= d.Generation && st.UpdatedReplicas >= replicas && st.AvailableReplicas >= replicas &&
		st.Replicas <= st.UpdatedReplicas
}

// statefulSetAvailable reports whether a StatefulSet's controller has seen its current generation
// and every replica runs the update revision, ready and available.
func statefulSetAvailable(sts *appsv1.StatefulSet) bool {
	replicas := ptr.Deref(sts.Spec.Replicas, 1)
	st := sts.Status
	return st.ObservedGeneration >= sts.Generation && st.UpdatedReplicas >= replicas && st.ReadyReplicas >= replicas &&
		st.AvailableReplicas >= replicas && (st.UpdateRevision == "" || st.CurrentRevision == st.UpdateRevision)
}

// awaitDeployment returns nil when the component's Deployment name is available; live is the
// Deployment as read before this pass's apply and changed whether the apply wrote it (a
// Deployment just written has not been observed by its controller yet, so there is nothing to
// read from its pods).
func (r *Reconciler) awaitDeployment(ctx context.Context, s *scope, component, name string, live *appsv1.Deployment, changed bool) error {
	if live.UID != "" && !changed && deploymentAvailable(live) {
		return nil
	}
	if live.UID == "" || changed || live.Status.ObservedGeneration < live.Generation {
		return rollingOut(component, "Deployment "+name)
	}
	var failedCreate string
	for _, c := range live.Status.Conditions {
		if c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue {
			failedCreate = c.Message
		}
	}
	return r.awaitPods(ctx, s, component, fmt.Sprintf("Deployment %s has %d of %d replicas available",
		name, live.Status.AvailableReplicas, ptr.Deref(live.Spec.Replicas, 1)), failedCreate)
}

// awaitStatefulSet returns nil when the component's StatefulSet is available (see awaitDeployment
// for live, nil when there was none, and changed).
func (r *Reconciler) awaitStatefulSet(ctx context.Context, s *scope, component string, live *appsv1.StatefulSet, changed bool) error {
	if live != nil && !changed && statefulSetAvailable(live) {
		return nil
	}
	if live == nil || changed || live.Status.ObservedGeneration < live.Generation {
		return rollingOut(component, "StatefulSet "+resources.NatsStatefulSetName)
	}
	// A StatefulSet has no condition for pods it cannot create: its controller says so in an
	// Event only.
	failedCreate, err := r.lastFailedCreate(ctx, s, live)
	if err != nil {
		return err
	}
	return r.awaitPods(ctx, s, component, fmt.Sprintf("StatefulSet %s has %d of %d replicas ready",
		live.Name, live.Status.ReadyReplicas, ptr.Deref(live.Spec.Replicas, 1)), failedCreate)
}

// rollingOut is the wait for a workload whose controller has not seen its current generation yet.
func rollingOut(component, workload string) error {
	return outcome.Wait(datasancev3.ReasonWorkloadUnavailable, requeueWorkload,
		fmt.Sprintf("%s is not available: %s is rolling out.", componentTitle[component], workload))
}

// awaitPods is the wait of a component whose workload's controller has seen the current generation
// and does not report it available, with what its pods say.
func (r *Reconciler) awaitPods(ctx context.Context, s *scope, component, what, failedCreate string) error {
	var pods corev1.PodList
	if err := r.List(ctx, &pods, client.InNamespace(s.namespace()), client.MatchingLabels(s.labels(component))); err != nil {
		return outcome.Retry(datasancev3.ReasonApplyFailed, fmt.Errorf("list the pods of %s: %w", componentTitle[component], err))
	}
	msg := fmt.Sprintf("%s is not available: %s", componentTitle[component], what)
	if detail := podTrouble(pods.Items, failedCreate); detail != "" {
		msg += "; " + detail
	}
	return outcome.Wait(datasancev3.ReasonWorkloadUnavailable, requeueWorkload, msg+".")
}

// lastFailedCreate is the message of the newest FailedCreate Event of a StatefulSet ("" when none).
func (r *Reconciler) lastFailedCreate(ctx context.Context, s *scope, sts *appsv1.StatefulSet) (string, error) {
	var events corev1.EventList
	if err := r.List(ctx, &events, client.InNamespace(s.namespace()), client.MatchingFieldsSelector{Selector: fields.SelectorFromSet(fields.Set{
		"involvedObject.uid": string(sts.UID), "reason": "FailedCreate",
	})}); err != nil {
		return "", outcome.Retry(datasancev3.ReasonApplyFailed, fmt.Errorf("list the events of StatefulSet %s: %w", sts.Name, err))
	}
	var newest *corev1.Event
	for i := range events.Items {
		e := &events.Items[i]
		if newest == nil || eventTime(e).After(eventTime(newest)) {
			newest = e
		}
	}
	if newest == nil {
		return "", nil
	}
	return newest.Message, nil
}

func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// podTrouble is what a workload's pods say about why it is not available, most telling first: its
// controller cannot create them (failedCreate), a container waits (image pull, crash loop), the
// scheduler cannot place a pod, a container runs but is not ready. Pods being deleted are left
// out. "" when no pod says anything.
func podTrouble(pods []corev1.Pod, failedCreate string) string {
	if failedCreate != "" {
		return "pods cannot be created: " + failedCreate
	}
	var waiting, unschedulable, unready []string
	for i := range pods {
		p := &pods[i]
		if !p.DeletionTimestamp.IsZero() {
			continue
		}
		for _, cs := range slices.Concat(p.Status.InitContainerStatuses, p.Status.ContainerStatuses) {
			if w := cs.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" && w.Reason != "PodInitializing" {
				line := fmt.Sprintf("pod %s: container %s is waiting: %s", p.Name, cs.Name, w.Reason)
				if cs.RestartCount > 0 {
					line += fmt.Sprintf(" (restarted %d times)", cs.RestartCount)
				}
				if w.Message != "" {
					line += ": " + w.Message
				}
				waiting = append(waiting, line)
			}
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running != nil && !cs.Ready {
				unready = append(unready, fmt.Sprintf("pod %s: container %s is running but not ready", p.Name, cs.Name))
			}
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
				unschedulable = append(unschedulable, fmt.Sprintf("pod %s cannot be scheduled: %s", p.Name, c.Message))
			}
		}
	}
	for _, list := range [][]string{waiting, unschedulable, unready} {
		if len(list) > 0 {
			out := list[0]
			if len(list) > 1 {
				out += fmt.Sprintf(" (and %d more)", len(list)-1)
			}
			return strings.TrimSuffix(out, ".")
		}
	}
	return ""
}
