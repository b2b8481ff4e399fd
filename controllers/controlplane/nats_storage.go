package controlplane

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
)

// natsStorage is the JetStream storage of a pass (docs/controlplane.md#jetstream-storage): what
// the spec asks, the js-data claim template to apply, and the file store in force, which is what
// server.conf's max_file_store says.
type natsStorage struct {
	// template is the claim template of StatefulSet nats: the live one once the StatefulSet
	// exists (it is immutable), else the spec's.
	template resources.NatsStorage
	// fileStore is the size JetStream may fill: the template's, or less when a js-data PVC holds
	// less (a volume created earlier, or one being expanded).
	fileStore resource.Quantity
	// specInForce is true when fileStore is what spec.nats.jetStream.storageSize asks.
	specInForce bool
	// refused explains why the spec's storage is not in force (nil when it is): the
	// ImmutableFieldChanged error.
	refused error
}

// planNatsStorage decides the storage in force from the spec, the live StatefulSet (nil when
// absent) and the JetStream PVCs. A spec that asks for another claim template than the live one,
// or for more than a PVC holds, is refused: server.conf keeps the storage in force, so that
// JetStream never counts on more disk than its volumes have.
func planNatsStorage(spec *datasancev3.ControlPlaneSpec, live *appsv1.StatefulSet, data natsData) natsStorage {
	desired := resources.DesiredNatsStorage(spec)
	st := natsStorage{template: desired}
	const howTo = "revert spec.nats.jetStream, or grow the volumes: expand the PVCs (a StorageClass with allowVolumeExpansion), " +
		"then delete StatefulSet %s with --cascade=orphan so that it is created again with the new claim template"
	if live != nil {
		if current, ok := liveNatsStorage(live); ok {
			st.template = current
			if !current.Equal(desired) {
				st.refused = fmt.Errorf("spec.nats.jetStream asks for storage %s, but StatefulSet %s keeps its claim template %s "+
					"(immutable): JetStream stays at %s; "+howTo,
					desired, resources.NatsStatefulSetName, current, current.Size.String(), resources.NatsStatefulSetName)
			}
		}
	}
	st.fileStore = st.template.Size
	if name, size, ok := data.smallest(); ok && size.Cmp(st.fileStore) < 0 {
		st.fileStore = size
		if st.refused == nil {
			st.refused = fmt.Errorf("spec.nats.jetStream asks for storage %s, but PVC %s holds %s: JetStream is limited to %s until "+
				"every js-data PVC holds the size asked; "+howTo,
				desired, name, size.String(), size.String(), resources.NatsStatefulSetName)
		}
	}
	st.specInForce = st.fileStore.Cmp(desired.Size) == 0
	return st
}

// serverConfFileStore is NatsConfInputs.FileStore: "" while the spec's size is in force (the
// spec's text is written as before), else the size in force.
func (st natsStorage) serverConfFileStore() string {
	if st.specInForce {
		return ""
	}
	return resources.NatsFileStoreSize(st.fileStore)
}
