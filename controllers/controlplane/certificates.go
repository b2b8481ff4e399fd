package controlplane

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
	"github.com/kubeopera/kubeopera-operator/internal/outcome"
	"github.com/kubeopera/kubeopera-operator/internal/pki"
)

// eventCertificateIssued is the reason of the Normal Event for a certificate the operator created
// or renewed (failures use the condition reason InvalidCertificate).
const eventCertificateIssued = "CertificateIssued"

// notSignedError: a brought leaf certificate was not issued by the CA Secret it belongs to.
type notSignedError struct{ ca string }

func (e *notSignedError) Error() string {
	return "holds a certificate that is not signed by CA Secret " + e.ca
}

// ensureCertificates is the one lookup-or-generate path of every TLS Secret the ControlPlane
// issues (router and NATS, CAs and leaves; docs/controlplane.md#tls). certs lists CAs
// before the leaves they sign. It returns the data of every Secret, by name, or the wait or failure
// that stops the component before any leaf is issued.
//
//   - A CA Secret that exists, brought by the user, generated or restored earlier, is parsed
//     and never written; before a leaf is issued under it, the Controller's copy must hold the
//     same CA (agreeOnCA, ca_sync.go). A missing one is restored from the Controller's copy,
//     or generated and imported when the Controller has none. The CAs are long-lived: they are
//     not renewed, and not owned (they outlive the ControlPlane with the Controller's database).
//   - A missing leaf is issued by its CA. A leaf the operator issued (controlled by the
//     ControlPlane) is issued again, in place and under the same CA, when pki.CheckLeaf says so:
//     its CA changed, its hosts changed, or two thirds of its lifetime passed. Otherwise its
//     renewal time is noted in the scope, which requeues the ready ControlPlane for it.
//   - A leaf the user brought is checked, never rewritten: it must parse and be signed by its CA.
//
// A brought CA or leaf that cannot be used is InvalidCertificate: a terminal error and one
// Warning Event per cause (badCertificate). A stale cache never makes it overwrite a Secret:
// creates are Create (AlreadyExists) and renewals carry the resourceVersion read (Conflict); both
// are a short requeue.
func (r *Reconciler) ensureCertificates(ctx context.Context, s *scope, conv controllerConversation, component string, certs []resources.TLSSecretSpec) (map[string]map[string][]byte, error) {
	data := make(map[string]map[string][]byte, len(certs))
	cas := make(map[string]*pki.KeyPair, 2)
	for _, c := range certs {
		live := &corev1.Secret{}
		found, err := r.getExisting(ctx, s, c.Name, live)
		if err != nil {
			return nil, err
		}
		if c.IsCA() {
			ca, secretData, err := r.ensureCA(ctx, s, conv, component, c, live, found)
			if err != nil {
				if err != nil {
					err = requeueIfStale(err)
				}
				return nil, err
			}
			cas[c.Name], data[c.Name] = ca, secretData
			continue
		}
		ca, ok := cas[c.CAName]
		if !ok {
			return nil, fmt.Errorf("issue %s: CA Secret %s is not listed before it", c.Name, c.CAName)
		}
		secretData, err := r.ensureLeaf(ctx, s, component, c, ca, live, found)
		if err != nil {
			err := requeueIfStale(err)
			return nil, err
		}
		data[c.Name] = secretData
	}
	return data, nil
}

// ensureCA returns the CA of Secret c.Name once the Controller's copy agrees with it: the
// Secret's CA (compared with the Controller's unless it was last seen to match), the
// Controller's copy when the Secret is missing (restored), or a new CA when neither exists
// (generated, created, imported). A CA Secret an earlier version created owned is released,
// so that deleting the ControlPlane keeps it.
func (r *Reconciler) ensureCA(ctx context.Context, s *scope, conv controllerConversation, component string, c resources.TLSSecretSpec, live *corev1.Secret, found bool) (*pki.KeyPair, map[string][]byte, error) {
	if found {
		ca, err := pki.ParseCA(live.Data[pki.TLSCertKey], live.Data[pki.TLSPrivateKeyKey])
		if err != nil {
			return nil, nil, r.badCertificate(s, component, c.Name, true, err)
		}
		if err := r.releaseDataStore(ctx, s, component, live); err != nil {
			return nil, nil, err
		}
		if err := r.agreeOnCA(ctx, s, conv, component, live, ca, false); err != nil {
			return nil, nil, err
		}
		return ca, live.Data, nil
	}
	restored, err := r.missingCA(ctx, s, conv, component, c)
	switch {
	case err != nil:
		return nil, nil, err
	case restored != nil:
		return restored, pki.SecretData(restored, nil), nil
	}
	ca, err := pki.GenerateCA(c.CommonName, s.now, 0, pki.WithKeyGenerator(r.KeyGenerator))
	if err != nil {
		return nil, nil, fmt.Errorf("generate CA %s: %w", c.Name, err)
	}
	secretData := pki.SecretData(ca, nil)
	if err := r.createOnce(ctx, resources.TLSSecret(s.cp, component, c, secretData), &corev1.Secret{}); err != nil {
		return nil, nil, err
	}
	ctrl.LoggerFrom(ctx).Info("Created CA", "Secret", klog.KRef(s.namespace(), c.Name))
	r.event(s.cp, corev1.EventTypeNormal, eventCertificateIssued, fmt.Sprintf("Created CA Secret %s.", c.Name))
	if err := importCA(ctx, s, conv, c.Name, ca); err != nil {
		return nil, nil, err
	}
	return ca, secretData, nil
}

// ensureLeaf returns the data of leaf Secret c.Name after issuing or renewing it as needed.
func (r *Reconciler) ensureLeaf(ctx context.Context, s *scope, component string, c resources.TLSSecretSpec, ca *pki.KeyPair, live *corev1.Secret, found bool) (map[string][]byte, error) {
	if !found {
		return r.issueLeaf(ctx, s, component, c, ca, nil, "created")
	}
	kp, parseErr := pki.ParseKeyPair(live.Data[pki.TLSCertKey], live.Data[pki.TLSPrivateKeyKey])
	if !isControlledBy(live, s.cp.UID) {
		// Brought by the user: checked, never rewritten, not renewed (its expiry is a metric).
		switch {
		case parseErr != nil:
			return nil, r.badCertificate(s, component, c.Name, false, parseErr)
		case !pki.SignedBy(kp.Cert, ca.Cert):
			return nil, r.badCertificate(s, component, c.Name, false, &notSignedError{ca: c.CAName})
		}
		return live.Data, nil
	}
	if parseErr != nil {
		// The operator's own but damaged (edited by hand): issue it again rather than mount garbage.
		return r.issueLeaf(ctx, s, component, c, ca, live, "unreadable")
	}
	renewal := pki.CheckLeaf(kp.Cert, ca.Cert, c.Hosts, s.now)
	if renewal.Needed() {
		return r.issueLeaf(ctx, s, component, c, ca, live, renewalCause(renewal.Reason))
	}
	s.renewBy(renewal.At)
	return live.Data, nil
}

// issueLeaf signs a new leaf for c with ca and writes it: a Create when live is nil, otherwise a
// server-side apply of the whole Secret under the resourceVersion read, so that a renewal based
// on a stale read fails with a conflict instead of replacing a newer certificate. The new leaf's
// renewal time is noted in the scope.
func (r *Reconciler) issueLeaf(ctx context.Context, s *scope, component string, c resources.TLSSecretSpec, ca *pki.KeyPair, live *corev1.Secret, cause string) (map[string][]byte, error) {
	leaf, err := pki.GenerateLeaf(ca, c.CommonName, c.Hosts, s.now, 0, pki.WithKeyGenerator(r.KeyGenerator))
	if err != nil {
		return nil, fmt.Errorf("issue certificate %s: %w", c.Name, err)
	}
	secretData := pki.SecretData(leaf, ca.CertPEM)
	desired := resources.TLSSecret(s.cp, component, c, secretData)
	if live == nil {
		err = r.createOnce(ctx, desired, &corev1.Secret{})
	} else {
		err = r.Apply(ctx, desired.WithResourceVersion(live.ResourceVersion), client.FieldOwner(FieldOwner), client.ForceOwnership)
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			err = fmt.Errorf("renew Secret %s: %w", c.Name, errCacheStale)
		} else if err != nil {
			err = outcome.Retry(datasancev3.ReasonApplyFailed, fmt.Errorf("renew Secret %s: %w", c.Name, err))
		}
	}
	if err != nil {
		return nil, err
	}
	s.renewBy(pki.RenewalTime(leaf.Cert.NotBefore, leaf.Cert.NotAfter))
	ctrl.LoggerFrom(ctx).Info("Issued certificate", "Secret", klog.KRef(s.namespace(), c.Name), "cause", cause, "notAfter", leaf.Cert.NotAfter)
	r.event(s.cp, corev1.EventTypeNormal, eventCertificateIssued,
		fmt.Sprintf("Issued the certificate in Secret %s (%s), signed by CA Secret %s, valid until %s.",
			c.Name, cause, c.CAName, leaf.Cert.NotAfter.UTC().Format(time.RFC3339)))
	return secretData, nil
}

// renewalCause is the Event and log wording of a renewal reason.
func renewalCause(r pki.RenewalReason) string {
	switch r {
	case pki.RenewalIssuerChanged:
		return "its CA changed"
	case pki.RenewalHostsChanged:
		return "its hosts changed"
	case pki.RenewalDue:
		return "two thirds of its lifetime passed"
	}
	return string(r)
}

// badCertificate is the one handling of a brought CA or leaf that cannot be used: a terminal
// InvalidCertificate error naming the Secret and the kind of problem (never its content), and a
// Warning Event once per cause (warnOnce).
func (r *Reconciler) badCertificate(s *scope, component, secret string, isCA bool, err error) error {
	bad := invalidCertificate(secret, isCA, err)
	r.warnOnce(s, component, datasancev3.ReasonInvalidCertificate, bad.Error())
	return bad
}

// warnOnce emits the Warning Event of a component's failure once per cause: not again while
// the component's status from the previous pass already reports the same reason and message.
// The message is marked as announced, so the pass does not repeat it as the state-change Event.
func (r *Reconciler) warnOnce(s *scope, component, reason, msg string) {
	if st := s.componentStatus(component); st == nil || st.Reason != reason || st.Message != msg {
		r.event(s.cp, corev1.EventTypeWarning, reason, msg)
	}
	s.announce(msg)
}

// invalidCertificate is the terminal error for a brought CA or leaf Secret that cannot be used.
func invalidCertificate(secret string, isCA bool, err error) error {
	what, kind := "TLS Secret", "is invalid"
	if isCA {
		what = "CA Secret"
	}
	var notSigned *notSignedError
	switch {
	case errors.As(err, &notSigned):
		kind = notSigned.Error()
	case errors.Is(err, pki.ErrInvalidPEM):
		kind = "does not hold a PEM certificate and private key in tls.crt and tls.key"
	case errors.Is(err, pki.ErrNotCA):
		kind = "holds a certificate that is not a CA (no CA basic constraint or no certSign usage)"
	case errors.Is(err, pki.ErrKeyMismatch):
		kind = "holds a private key that does not match its certificate"
	case errors.Is(err, pki.ErrUnsupportedKey):
		kind = "holds a key that is not an unencrypted RSA key"
	}
	return outcome.Stop(datasancev3.ReasonInvalidCertificate, fmt.Errorf("%s %s %s: fix or delete it", what, secret, kind))
}

// renewBy notes that a certificate falls due at t: the scope keeps the earliest such time.
func (s *scope) renewBy(t time.Time) {
	if s.renewAt.IsZero() || t.Before(s.renewAt) {
		s.renewAt = t
	}
}

// untilRenewal is how long a ready ControlPlane may wait before the next certificate falls due:
// at most limit, at least one second (a renewal that is due now happened in this pass).
func (s *scope) untilRenewal(limit time.Duration) time.Duration {
	if s.renewAt.IsZero() {
		return limit
	}
	return min(limit, max(s.renewAt.Sub(s.now), time.Second))
}

// announce records that msg was reported with its own Warning Event.
func (s *scope) announce(msg string) {
	if s.announced == nil {
		s.announced = map[string]bool{}
	}
	s.announced[msg] = true
}

// componentStatus is the status block of component as the previous pass left it (the pass sets
// it only after the component ran), or nil for an unknown component.
func (s *scope) componentStatus(component string) *datasancev3.ComponentStatus {
	switch component {
	case resources.ComponentRouter:
		return &s.cp.Status.Router.ComponentStatus
	case resources.ComponentNats:
		return &s.cp.Status.Nats.ComponentStatus
	case resources.ComponentController:
		return &s.cp.Status.Controller.ComponentStatus
	}
	return nil
}
