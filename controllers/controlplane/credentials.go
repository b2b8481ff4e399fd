package controlplane

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/internal/outcome"
)

// resolvedCredentials is the outcome of reading the credential references of one pass.
type resolvedCredentials struct {
	done bool
	// spec is the ControlPlane's spec with every referenced value in its inline field
	// (datasancev3.ControlPlaneSpec.WithCredentials): what the credential Secrets and the login
	// are built from. Never written back.
	spec *datasancev3.ControlPlaneSpec
	err  error
}

// credentials returns the spec with the credential references resolved (docs/controlplane.md,
// "Credentials"), reading each referenced Secret once per pass, directly from the API server
// (the manager caches no Secret data the operator does not own). A missing Secret is
// SecretNotFound, a missing key SecretKeyNotFound, both terminal: the referenced-Secret watch
// starts the next pass when the Secret or key appears, so nothing retries in between. An
// optional reference whose Secret or key is missing keeps the inline value. The error names the
// field, Secret and key, never a value.
func (r *Reconciler) credentials(ctx context.Context, s *scope) (*datasancev3.ControlPlaneSpec, error) {
	if s.creds.done {
		return s.creds.spec, s.creds.err
	}
	s.creds.spec, s.creds.err = r.resolveCredentials(ctx, s)
	s.creds.done = true
	return s.creds.spec, s.creds.err
}

func (r *Reconciler) resolveCredentials(ctx context.Context, s *scope) (*datasancev3.ControlPlaneSpec, error) {
	values := map[string]string{}
	read := map[string]*corev1.Secret{} // by name; nil: not found
	for _, ref := range s.spec.CredentialRefs() {
		sec, seen := read[ref.Ref.Name]
		if !seen {
			sec = &corev1.Secret{}
			found, err := r.getExisting(ctx, s, ref.Ref.Name, sec)
			if err != nil {
				return nil, err
			}
			if !found {
				sec = nil
			}
			read[ref.Ref.Name] = sec
		}
		optional := ptr.Deref(ref.Ref.Optional, false)
		if sec == nil {
			if optional {
				continue
			}
			return nil, outcome.Stop(datasancev3.ReasonSecretNotFound, fmt.Errorf(
				"secret %s (%s) not found in namespace %s", ref.Ref.Name, ref.Field, s.namespace()))
		}
		value, ok := sec.Data[ref.Ref.Key]
		if !ok {
			if optional {
				continue
			}
			return nil, outcome.Stop(datasancev3.ReasonSecretKeyNotFound, fmt.Errorf(
				"secret %s has no key %q (%s)", ref.Ref.Name, ref.Ref.Key, ref.Field))
		}
		values[ref.Field] = string(value)
	}
	return s.spec.WithCredentials(values), nil
}
