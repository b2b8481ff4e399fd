package controlplane

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
	"github.com/kubeopera/kubeopera-operator/internal/pki"
)

// ensureTLSSecrets makes every Secret of specs exist (docs/controlplane.md#router-tls-secrets, docs/controlplane.md#nats-tls-secrets) and returns the data of
// all of them, by name. Existing Secrets are never changed: missing CAs are generated first, then
// missing leaves signed by their CA as found in the cluster (brought by the user, or generated).
// Existing CA Secrets are validated; one that does not hold a usable CA certificate and RSA key
// fails with reason InvalidCertificate as a terminal error (the user must fix the Secret, whose
// change the Secret watch notices). A Secret that exists although the read missed it (a stale
// cache) is not overwritten: the error wraps errCacheStale.
func ensureTLSSecrets(ctx context.Context, s *scope, component string, specs []resources.TLSSecretSpec) (map[string]map[string][]byte, error) {
	data := make(map[string]map[string][]byte, len(specs))
	cas := map[string]*pki.KeyPair{}
	opts := []pki.Option{pki.WithKeyGenerator(s.r.KeyGenerator)}

	// Pass 1: read what exists and validate existing CAs.
	var missing []resources.TLSSecretSpec
	for _, spec := range specs {
		live := &corev1.Secret{}
		found, err := s.getExisting(ctx, spec.Name, live)
		if err != nil {
			return nil, err
		}
		if !found {
			missing = append(missing, spec)
			continue
		}
		data[spec.Name] = live.Data
		if spec.IsCA() {
			ca, err := pki.ParseCA(live.Data[pki.TLSCertKey], live.Data[pki.TLSPrivateKeyKey])
			if err != nil {
				return nil, invalidCertificate(spec.Name, err)
			}
			cas[spec.Name] = ca
		}
	}

	// Pass 2: generate what is missing, CAs first (specs list them first).
	for _, spec := range missing {
		var (
			kp   *pki.KeyPair
			caPE []byte
			err  error
		)
		if spec.IsCA() {
			kp, err = pki.GenerateCA(spec.CommonName, s.now, 0, opts...)
		} else {
			ca, ok := cas[spec.CAName]
			if !ok {
				return nil, fmt.Errorf("generate %s: CA Secret %s is not in the set", spec.Name, spec.CAName)
			}
			kp, err = pki.GenerateLeaf(ca, spec.CommonName, spec.Hosts, s.now, 0, opts...)
			caPE = ca.CertPEM
		}
		if err != nil {
			return nil, withReason(datasancev3.ReasonInvalidCertificate, fmt.Errorf("generate Secret %s: %w", spec.Name, err))
		}
		secretData := pki.SecretData(kp, caPE)
		if err := createOnce(ctx, s, resources.Secret(s.cp, component, spec.Name, corev1.SecretTypeTLS, secretData), &corev1.Secret{}); err != nil {
			return nil, err
		}
		ctrl.LoggerFrom(ctx).Info("Created TLS Secret", "secret", spec.Name)
		data[spec.Name] = secretData
		if spec.IsCA() {
			cas[spec.Name] = kp
		}
	}
	return data, nil
}

// invalidCertificate is the terminal error for a bring-your-own CA Secret that cannot be used.
// The message names the Secret and the kind of problem, never its content.
func invalidCertificate(secret string, err error) error {
	kind := "is invalid"
	switch {
	case errors.Is(err, pki.ErrInvalidPEM):
		kind = "does not hold a PEM certificate and private key in tls.crt and tls.key"
	case errors.Is(err, pki.ErrNotCA):
		kind = "holds a certificate that is not a CA (no CA basic constraint or no certSign usage)"
	case errors.Is(err, pki.ErrKeyMismatch):
		kind = "holds a private key that does not match its certificate"
	case errors.Is(err, pki.ErrUnsupportedKey):
		kind = "holds a key that is not an unencrypted RSA key"
	}
	return terminal(datasancev3.ReasonInvalidCertificate, fmt.Errorf("CA Secret %s %s: fix or delete it", secret, kind))
}
