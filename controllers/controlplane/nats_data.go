package controlplane

import (
	"context"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
	"github.com/kubeopera/kubeopera-operator/internal/outcome"
)

// natsDataClaimName matches the JetStream PVCs the StatefulSet makes from its js-data claim
// template: js-data-nats-<ordinal>. They are matched by name, not by label: a StatefulSet nats of
// any ControlPlane of the namespace mounts them.
var natsDataClaimName = regexp.MustCompile(`^` + resources.NatsDataVolume + `-` + resources.NatsStatefulSetName + `-([0-9]+)$`)

// natsData is the JetStream data of the namespace: the js-data-nats-<i> PVCs, by ordinal. The
// JetStream key and the JWT bundle guard it (docs/controlplane.md#data-on-deletion).
type natsData struct {
	claims []corev1.PersistentVolumeClaim
}

// observeNatsData lists the JetStream PVCs of the ControlPlane's namespace.
func (r *Reconciler) observeNatsData(ctx context.Context, s *scope) (natsData, error) {
	var list corev1.PersistentVolumeClaimList
	if err := r.List(ctx, &list, client.InNamespace(s.namespace())); err != nil {
		return natsData{}, outcome.Retry(datasancev3.ReasonApplyFailed, err)
	}
	var d natsData
	for _, pvc := range list.Items {
		if natsDataClaimName.MatchString(pvc.Name) {
			d.claims = append(d.claims, pvc)
		}
	}
	slices.SortFunc(d.claims, func(a, b corev1.PersistentVolumeClaim) int { return claimOrdinal(a.Name) - claimOrdinal(b.Name) })
	return d, nil
}

// exists reports whether any JetStream PVC exists.
func (d natsData) exists() bool { return len(d.claims) > 0 }

// names lists the PVCs, for messages.
func (d natsData) names() string {
	names := make([]string, len(d.claims))
	for i, c := range d.claims {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}

// smallest returns the PVC with the least storage and its size (claimSize).
func (d natsData) smallest() (name string, size resource.Quantity, ok bool) {
	for _, c := range d.claims {
		q, found := claimSize(&c)
		if found && (!ok || q.Cmp(size) < 0) {
			name, size, ok = c.Name, q, true
		}
	}
	return name, size, ok
}

// claimSize is what a PVC holds: its reported capacity once bound (a volume being expanded
// reports the old size until the file system grew), else its request.
func claimSize(pvc *corev1.PersistentVolumeClaim) (resource.Quantity, bool) {
	if q, ok := pvc.Status.Capacity[corev1.ResourceStorage]; ok {
		return q, true
	}
	q, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	return q, ok
}

// claimOrdinal is the ordinal of a js-data-nats-<i> name (-1 for another name).
func claimOrdinal(name string) int {
	m := natsDataClaimName.FindStringSubmatch(name)
	if m == nil {
		return -1
	}
	i, err := strconv.Atoi(m[1])
	if err != nil {
		return -1
	}
	return i
}
