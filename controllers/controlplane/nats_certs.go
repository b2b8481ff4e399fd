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
	"github.com/kubeopera/kubeopera-operator/internal/pki"
)

// Common names of the NATS server certificates (spec §6.6); the CAs are named after their Secret.
const (
	natsSiteServerCN = "iofog-nats"
	natsMQTTServerCN = "iofog-nats-mqtt"
)

// natsCert is one server certificate and the CA Secret that signs it.
type natsCert struct {
	secret, caSecret, commonName string
}

var natsServerCerts = []natsCert{
	{secret: natsSiteServerSecretName, caSecret: natsSiteCASecretName, commonName: natsSiteServerCN},
	{secret: natsMQTTServerSecretName, caSecret: natsLocalCASecretName, commonName: natsMQTTServerCN},
}

// natsServerHosts are the SANs of both server certificates (spec §6.6): every pod's headless
// name, the headless wildcard, the two Service names and the external address when known.
func natsServerHosts(namespace string, replicas int32, externalAddress string) []string {
	hosts := make([]string, 0, replicas+4)
	for i := range replicas {
		hosts = append(hosts, fmt.Sprintf("%s-%d.%s", natsStatefulSetName, i, natsHeadlessServiceName))
	}
	hosts = append(hosts,
		fmt.Sprintf("*.%s.%s.svc.cluster.local", natsHeadlessServiceName, namespace),
		fmt.Sprintf("%s.%s.svc.cluster.local", natsServiceName, namespace),
		fmt.Sprintf("%s.%s.svc.cluster.local", natsServerServiceName, namespace),
	)
	if externalAddress != "" {
		hosts = append(hosts, externalAddress)
	}
	return hosts
}

// ensureNatsCertificates makes the four NATS TLS Secrets exist (spec §6.6, steps 7–8): server
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
	cas := make(map[string]*pki.KeyPair, len(natsCASecrets))
	for _, name := range natsCASecrets {
		kp, err := ensureNatsCA(ctx, s, name)
		if err != nil {
			return err
		}
		cas[name] = kp
	}
	hosts := natsServerHosts(s.namespace(), replicas, externalAddress)
	for _, c := range natsServerCerts {
		if !absent[c.secret] {
			exists, err := s.getExisting(ctx, c.secret, &corev1.Secret{})
			if err != nil {
				return err
			}
			if exists {
				continue
			}
		}
		leaf, err := pki.GenerateLeaf(cas[c.caSecret], c.commonName, hosts, s.now, 0, pki.WithKeyGenerator(s.r.KeyGenerator))
		if err != nil {
			return fmt.Errorf("generate NATS certificate %s: %w", c.secret, err)
		}
		if err := createObject(ctx, s, natsTLSSecret(s.cp, c.secret, pki.SecretData(leaf, cas[c.caSecret].CertPEM), replicas)); err != nil {
			return err
		}
		ctrl.LoggerFrom(ctx).Info("Created NATS server certificate", "secret", c.secret, "replicas", replicas)
		s.r.event(s.cp, corev1.EventTypeNormal, eventNatsCertificateCreated,
			fmt.Sprintf("Created NATS server certificate Secret %s for %d replicas.", c.secret, replicas))
	}
	return nil
}

// rotateNatsServerSecrets deletes the server Secrets whose replica annotation differs from
// replicas, so they are regenerated with the new SANs (spec §6.6). Only Secrets carrying the
// annotation — those the operator generated — are rotated: a brought server certificate has
// none and is kept. It returns the names it deleted, which a stale cache may still show.
func rotateNatsServerSecrets(ctx context.Context, s *scope, replicas int32) (map[string]bool, error) {
	deleted := map[string]bool{}
	want := strconv.Itoa(int(replicas))
	for _, c := range natsServerCerts {
		var sec corev1.Secret
		found, err := s.getExisting(ctx, c.secret, &sec)
		if err != nil {
			return nil, err
		}
		got, ok := sec.Annotations[annotationNatsReplicas]
		if !found || !ok || got == want {
			continue
		}
		err = s.r.Delete(ctx, &sec, client.Preconditions{UID: ptr.To(sec.UID)})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return nil, withReason(datasancev3.ReasonApplyFailed, fmt.Errorf("delete Secret %s: %w", c.secret, err))
		}
		if err == nil || apierrors.IsNotFound(err) {
			deleted[c.secret] = true
			ctrl.LoggerFrom(ctx).Info("Deleted NATS server certificate made for another replica count", "secret", c.secret, "from", got, "to", want)
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
	if err := createObject(ctx, s, natsTLSSecret(s.cp, name, pki.SecretData(kp, nil), 0)); err != nil {
		return nil, err
	}
	ctrl.LoggerFrom(ctx).Info("Created NATS CA", "secret", name)
	s.r.event(s.cp, corev1.EventTypeNormal, eventNatsCertificateCreated, fmt.Sprintf("Created NATS CA Secret %s.", name))
	return kp, nil
}
