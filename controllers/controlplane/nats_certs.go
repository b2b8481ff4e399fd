package controlplane

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
	"github.com/kubeopera/kubeopera-operator/internal/pki"
)

// ensureNatsCertificates makes the four NATS TLS Secrets exist (docs/controlplane.md#nats-tls-secrets, steps 7–8): server
// Secrets generated for another replica count are deleted first; then each missing CA is
// generated, and each missing server certificate is signed by its CA (generated or brought).
// Existing Secrets are never changed. A brought CA that does not parse is InvalidCertificate,
// terminal until the Secret is fixed (the Secret watch notices).
func ensureNatsCertificates(ctx context.Context, s *scope, externalAddress string) error {
	replicas := s.spec.NatsReplicas()
	absent, err := rotateNatsServerSecrets(ctx, s, replicas)
	if err != nil {
		return err
	}
	cas := make(map[string]*pki.KeyPair, len(resources.NatsCASecrets))
	for _, name := range resources.NatsCASecrets {
		kp, err := ensureNatsCA(ctx, s, name)
		if err != nil {
			return err
		}
		cas[name] = kp
	}
	hosts := resources.NatsServerHosts(s.namespace(), replicas, externalAddress)
	for _, c := range resources.NatsServerCerts {
		if !absent[c.Secret] {
			exists, err := s.getExisting(ctx, c.Secret, &corev1.Secret{})
			if err != nil {
				return err
			}
			if exists {
				continue
			}
		}
		leaf, err := pki.GenerateLeaf(cas[c.CASecret], c.CommonName, hosts, s.now, 0, pki.WithKeyGenerator(s.r.KeyGenerator))
		if err != nil {
			return fmt.Errorf("generate NATS certificate %s: %w", c.Secret, err)
		}
		if err := createObject(ctx, s, resources.NatsTLSSecret(s.cp, c.Secret, pki.SecretData(leaf, cas[c.CASecret].CertPEM), replicas)); err != nil {
			return err
		}
		ctrl.LoggerFrom(ctx).Info("Created NATS server certificate", "secret", c.Secret, "replicas", replicas)
		s.r.event(s.cp, corev1.EventTypeNormal, eventNatsCertificateCreated,
			fmt.Sprintf("Created NATS server certificate Secret %s for %d replicas.", c.Secret, replicas))
	}
	return nil
}

// rotateNatsServerSecrets deletes the server Secrets whose replica annotation differs from
// replicas, so they are regenerated with the new SANs (docs/controlplane.md#nats-tls-secrets). Only Secrets carrying the
// annotation — those the operator generated — are rotated: a brought server certificate has
// none and is kept. It returns the names it deleted, which a stale cache may still show.
func rotateNatsServerSecrets(ctx context.Context, s *scope, replicas int32) (map[string]bool, error) {
	deleted := map[string]bool{}
	want := strconv.Itoa(int(replicas))
	for _, c := range resources.NatsServerCerts {
		var sec corev1.Secret
		found, err := s.getExisting(ctx, c.Secret, &sec)
		if err != nil {
			return nil, err
		}
		got, ok := sec.Annotations[resources.AnnotationNatsReplicas]
		if !found || !ok || got == want {
			continue
		}
		err = s.r.Delete(ctx, &sec, client.Preconditions{UID: ptr.To(sec.UID)})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return nil, withReason(datasancev3.ReasonApplyFailed, fmt.Errorf("delete Secret %s: %w", c.Secret, err))
		}
		if err == nil || apierrors.IsNotFound(err) {
			deleted[c.Secret] = true
			ctrl.LoggerFrom(ctx).Info("Deleted NATS server certificate made for another replica count", "secret", c.Secret, "from", got, "to", want)
		}
	}
	return deleted, nil
}

// ensureNatsCA returns the CA of Secret name, generating and creating it when absent. An existing
// CA (generated earlier or brought by the user) is parsed, never changed.
func ensureNatsCA(ctx context.Context, s *scope, name string) (*pki.KeyPair, error) {
	var sec corev1.Secret
	if found, err := s.getExisting(ctx, name, &sec); err != nil {
		return nil, err
	} else if found {
		kp, err := pki.ParseCA(sec.Data[pki.TLSCertKey], sec.Data[pki.TLSPrivateKeyKey])
		if err != nil {
			err = invalidCertificate(name, err)
			s.r.event(s.cp, corev1.EventTypeWarning, datasancev3.ReasonInvalidCertificate, unwrapTerminal([]error{err})[0].Error())
			return nil, err
		}
		return kp, nil
	}
	kp, err := pki.GenerateCA(name, s.now, 0, pki.WithKeyGenerator(s.r.KeyGenerator))
	if err != nil {
		return nil, fmt.Errorf("generate NATS CA %s: %w", name, err)
	}
	if err := createObject(ctx, s, resources.NatsTLSSecret(s.cp, name, pki.SecretData(kp, nil), 0)); err != nil {
		return nil, err
	}
	ctrl.LoggerFrom(ctx).Info("Created NATS CA", "secret", name)
	s.r.event(s.cp, corev1.EventTypeNormal, eventNatsCertificateCreated, fmt.Sprintf("Created NATS CA Secret %s.", name))
	return kp, nil
}
