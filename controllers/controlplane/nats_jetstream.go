package controlplane

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
	"github.com/kubeopera/kubeopera-operator/internal/outcome"
)

// natsJetStreamKeyBytes is the size of the JetStream encryption key before base64 (docs/controlplane.md#jetstream-encryption-key).
const natsJetStreamKeyBytes = 32

// releaseNatsJetStreamKey releases the JetStream key Secret the Datasance operator created owned
// by the ControlPlane (releaseDataStore) before any of its workloads is replaced, so that where
// the release is refused (DataStoreOwned) nothing has been deleted yet.
func (r *Reconciler) releaseNatsJetStreamKey(ctx context.Context, s *scope) error {
	if !s.natsEnabled() {
		return nil
	}
	var sec corev1.Secret
	found, err := r.getExisting(ctx, s, resources.NatsJetStreamKeySecretName(s.cp.Name), &sec)
	if err != nil || !found {
		return err
	}
	return r.releaseDataStore(ctx, s, resources.ComponentNats, &sec)
}

// ensureNatsJetStreamKey returns the JetStream encryption key (docs/controlplane.md#jetstream-encryption-key, step 4): the jsk of
// Secret nats-jetstream-key-<name> when it is non-empty, else a new random key, written to the
// Secret (created, or filled in when its jsk is empty). A non-empty key is never replaced, and
// no key is generated while JetStream PVCs exist: a new key could not read their streams, so
// that is JetStreamKeyMissing (terminal; the Secret watch and the PVC watch bring the
// ControlPlane back when the key is restored or the PVCs are deleted).
func (r *Reconciler) ensureNatsJetStreamKey(ctx context.Context, s *scope, data natsData) (string, error) {
	name := resources.NatsJetStreamKeySecretName(s.cp.Name)
	var sec corev1.Secret
	found, err := r.getExisting(ctx, s, name, &sec)
	switch {
	case err != nil:
		return "", err
	case found && len(sec.Data[resources.NatsJetStreamKeyKey]) > 0:
		return string(sec.Data[resources.NatsJetStreamKeyKey]), r.releaseDataStore(ctx, s, resources.ComponentNats, &sec)
	case data.exists():
		state := "does not exist"
		if found {
			state = "holds no key " + resources.NatsJetStreamKeyKey
		}
		return "", r.refuse(s, resources.ComponentNats, datasancev3.ReasonJetStreamKeyMissing, fmt.Errorf(
			"secret %s %s while the JetStream PVCs %s exist: a new key could not read their streams, so none is generated; "+
				"restore the Secret (the running servers' key is jetstream.key in ConfigMap %s while that still exists), "+
				"or delete the PVCs to start with empty JetStream storage",
			name, state, data.names(), resources.NatsConfigMapName))
	}
	key := newNatsJetStreamKey()
	if !found {
		if err := r.createObject(ctx, resources.NatsJetStreamKeySecret(s.cp, key)); err != nil {
			return "", err
		}
		ctrl.LoggerFrom(ctx).Info("Created JetStream encryption key", "Secret", klog.KRef(s.namespace(), name))
		return key, nil
	}
	// The Secret exists without a key: fill it in, under an optimistic lock so that a key
	// written meanwhile is never replaced.
	base := sec.DeepCopy()
	if sec.Data == nil {
		sec.Data = map[string][]byte{}
	}
	sec.Data[resources.NatsJetStreamKeyKey] = []byte(key)
	if err := r.Patch(ctx, &sec, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}), client.FieldOwner(FieldOwner)); err != nil {
		return "", outcome.Retry(datasancev3.ReasonApplyFailed, fmt.Errorf("write JetStream key to Secret %s: %w", name, err))
	}
	ctrl.LoggerFrom(ctx).Info("Wrote JetStream encryption key into empty Secret", "Secret", klog.KRef(s.namespace(), name))
	return key, nil
}

// newNatsJetStreamKey returns base64 of 32 cryptographically random bytes.
func newNatsJetStreamKey() string {
	b := make([]byte, natsJetStreamKeyBytes)
	_, _ = rand.Read(b) // crypto/rand.Read never fails since Go 1.24
	return base64.StdEncoding.EncodeToString(b)
}
