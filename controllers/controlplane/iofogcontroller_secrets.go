package controlplane

import (
	"context"
	"crypto/rand"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
	"github.com/kubeopera/kubeopera-operator/internal/outcome"
)

// rolloutKey returns the key of the credentials hash: Secret controller-rollout-key, created once
// with random bytes (owned: a ControlPlane created again gets a new key, which rolls its pods
// once). Readers of the Deployment see only the HMAC.
func (r *Reconciler) rolloutKey(ctx context.Context, s *scope) ([]byte, error) {
	sec := &corev1.Secret{}
	found, err := r.getExisting(ctx, s, resources.RolloutKeySecretName, sec)
	if err != nil {
		return nil, err
	}
	if key := sec.Data["key"]; found && len(key) >= resources.RolloutKeyBytes {
		return key, nil
	}
	if found {
		return nil, outcome.Retry(datasancev3.ReasonInvalidConfiguration,
			fmt.Errorf("secret %s holds no %d-byte key; delete it to have a new one generated", resources.RolloutKeySecretName, resources.RolloutKeyBytes))
	}
	key := make([]byte, resources.RolloutKeyBytes)
	_, _ = rand.Read(key) // crypto/rand.Read never fails since Go 1.24
	m := resources.MetaFor(s.cp, resources.ComponentController, resources.RolloutKeySecretName)
	obj := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, Labels: m.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(s.cp, datasancev3.GroupVersion.WithKind("ControlPlane"))}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"key": key},
	}
	if err := r.createObject(ctx, obj); err != nil {
		return nil, err
	}
	return key, nil
}
