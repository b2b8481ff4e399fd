package controlplane

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
)

// applyNatsStatefulSet creates or updates StatefulSet nats (docs/controlplane.md#nats-pass-order step 11); live is the
// StatefulSet as read this pass (nil when absent). A scale-down restarts every pod
// (natsPodAnnotations). The image reloads the config file and the TLS directory when the
// kubelet updates their volumes (docs/controlplane.md#nats-reloads), so a renewed certificate, a
// SAN change and new routes roll no pod; what nats-server does not take over by a reload rolls
// the pods: the settings of server.conf in restart (AnnotationNatsConfigHash) and the template
// itself (image, environment, volumes). The js-data claim template
// is storage.template: the live one once the StatefulSet exists, since it cannot change. A
// storage the spec asks for but the volumes cannot give (storage.refused) is surfaced as
// ImmutableFieldChanged after the rest applied (terminal: it needs the spec reverted or the
// volumes grown; docs/controlplane.md#jetstream-storage). While pods of the Datasance operator's
// StatefulSet remain, the replicas are those the handover allows (natsHandoverReplicas) and the
// result is the handover's (handOverNats).
func (r *Reconciler) applyNatsStatefulSet(ctx context.Context, s *scope, live *appsv1.StatefulSet, storage natsStorage, restart natsRestartKeys) error {
	exists := live != nil
	replicas := s.spec.NatsReplicas()
	w := resources.NatsWorkload{Image: s.images.Nats, Storage: storage.template}
	if exists {
		w.PodAnnotations = natsPodAnnotations(live, replicas, s.now, restart)
	} else if restart.desired != "" {
		w.PodAnnotations = map[string]string{resources.AnnotationNatsConfigHash: restart.desired}
	}
	desired := resources.NatsStatefulSet(s.cp, w)
	if exists {
		keepLiveClaimTemplates(desired, live)
	}
	h := s.handover(resources.ComponentNats)
	handoverReplicas := replicas
	if h != nil {
		handoverReplicas = natsHandoverReplicas(replicas, h.pods)
		desired.Spec.WithReplicas(handoverReplicas)
		resources.MarkStatefulSetTakingOver(desired)
	}
	changed, err := applyIfChanged(ctx, r, s, desired, &appsv1.StatefulSet{}, appsv1ac.ExtractStatefulSet)
	if err != nil {
		return err
	}
	if changed {
		ctrl.LoggerFrom(ctx).Info("Applied NATS StatefulSet", "replicas", replicas, "created", !exists)
	}
	if _, restart := w.PodAnnotations[resources.AnnotationRestartedAt]; restart && exists && ptr.Deref(live.Spec.Replicas, 1) > replicas {
		r.event(s.cp, corev1.EventTypeNormal, eventNatsRestarted,
			fmt.Sprintf("NATS scaled down from %d to %d replicas; restarting the pods so they drop the removed routes.", ptr.Deref(live.Spec.Replicas, 1), replicas))
	}
	if storage.refused != nil {
		return r.refuse(s, resources.ComponentNats, datasancev3.ReasonImmutableFieldChanged, storage.refused)
	}
	if h != nil {
		return r.handOverNats(ctx, s, h, live, changed, handoverReplicas)
	}
	return r.awaitStatefulSet(ctx, s, resources.ComponentNats, live, changed)
}

// natsPodAnnotations are the pod template annotations of a live StatefulSet scaled to replicas
// (docs/controlplane.md#nats-statefulset): a new restartedAt (now, RFC 3339) on a scale-down, so that every pod restarts and
// forgets the removed routes; otherwise the live restartedAt, carried over so that a previous
// restart does not roll the pods again (and a kubectl rollout restart or the Controller's own
// restart is not undone). Scale-up never restarts. The config hash is the restart key of the
// server.conf written (a new one restarts the pods); a template an earlier version wrote has
// none, and gets one only when the key changes, as does the file the pods run on (restart.live):
// adding it for nothing would roll the pods once. The TLS hash an earlier version put on the
// template is carried over unchanged, for the same reason. Other template annotations belong to
// whoever set them and are left to server-side apply.
func natsPodAnnotations(live *appsv1.StatefulSet, replicas int32, now time.Time, restart natsRestartKeys) map[string]string {
	out := map[string]string{}
	if v, ok := live.Spec.Template.Annotations[resources.AnnotationTLSHash]; ok {
		out[resources.AnnotationTLSHash] = v
	}
	if _, ok := live.Spec.Template.Annotations[resources.AnnotationNatsConfigHash]; (ok || restart.desired != restart.live) && restart.desired != "" {
		out[resources.AnnotationNatsConfigHash] = restart.desired
	}
	if live.Spec.Replicas != nil && *live.Spec.Replicas > replicas {
		out[resources.AnnotationRestartedAt] = now.UTC().Format(time.RFC3339)
	} else if v, ok := live.Spec.Template.Annotations[resources.AnnotationRestartedAt]; ok {
		out[resources.AnnotationRestartedAt] = v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// keepLiveClaimTemplates replaces the claim templates of desired by the live ones as this field
// manager applied them. The list is atomic and immutable, and the API server stores it with its
// defaults (volumeMode, status): re-sending exactly what is stored keeps the apply valid and
// lets an unchanged StatefulSet compare equal, so that no write is sent.
func keepLiveClaimTemplates(desired *appsv1ac.StatefulSetApplyConfiguration, live *appsv1.StatefulSet) {
	applied, err := appsv1ac.ExtractStatefulSet(live, FieldOwner)
	if err != nil || applied.Spec == nil || len(applied.Spec.VolumeClaimTemplates) == 0 {
		return
	}
	desired.Spec.VolumeClaimTemplates = applied.Spec.VolumeClaimTemplates
}

// liveNatsStorage is the js-data claim template of a live StatefulSet.
func liveNatsStorage(live *appsv1.StatefulSet) (resources.NatsStorage, bool) {
	for _, t := range live.Spec.VolumeClaimTemplates {
		if t.Name != resources.NatsDataVolume {
			continue
		}
		size, ok := t.Spec.Resources.Requests[corev1.ResourceStorage]
		if !ok {
			return resources.NatsStorage{}, false
		}
		return resources.NatsStorage{Size: size, ClassName: ptr.Deref(t.Spec.StorageClassName, "")}, true
	}
	return resources.NatsStorage{}, false
}
