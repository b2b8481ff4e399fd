package fake

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// KubernetesSecrets is the SecretReader of a Controller running in namespace: it reads the
// Secrets of that namespace from the API server c talks to, as the Controller reads them with
// its ServiceAccount when it imports a CA of type k8s-secret.
func KubernetesSecrets(c client.Reader, namespace string) SecretReader {
	return func(ctx context.Context, name string) (map[string][]byte, bool, error) {
		sec := &corev1.Secret{}
		err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, sec)
		switch {
		case apierrors.IsNotFound(err):
			return nil, false, nil
		case err != nil:
			return nil, false, err
		}
		return sec.Data, true, nil
	}
}
