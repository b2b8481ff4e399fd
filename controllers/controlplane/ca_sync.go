package controlplane

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
	"github.com/kubeopera/kubeopera-operator/internal/iofog"
	"github.com/kubeopera/kubeopera-operator/internal/pki"
)

// The four CAs (router site and local, NATS site and local) live twice: in their Secrets and in
// the Controller's CA catalog, which signs every agent's router and NATS certificates with them
// and refuses to delete a CA once it has (docs/controlplane.md#cas-and-the-controller). The two
// copies must hold the same CA, so:
//
//   - a CA Secret the Controller's copy was last seen to match (annotationImportedCAs) is used
//     as it is, without a call;
//   - any other CA Secret is compared with the Controller's copy before a leaf is issued under
//     it: imported when the Controller has none, recorded when they match; when they differ
//     the Controller's copy is replaced only if this ControlPlane imported it and the
//     Controller lets it go (a rotation), otherwise nothing is signed under either;
//   - a missing CA Secret is restored from the Controller's copy (GET /certificates/ca/{name}
//     answers certificate and key), and generated only when the Controller has none.

// annotationImportedCAs on the ControlPlane records, for each CA Secret, a digest of the
// certificate the Controller was last seen to hold under its name: a JSON object from Secret name
// to digest. Earlier versions recorded a digest of the PEM text, which still matches.
const annotationImportedCAs = "kubeopera.io/imported-cas"

// Reasons of the Normal Events for the CAs (failures use the condition reasons).
const (
	// eventCAReimported: a CA Secret's new content replaced the Controller's copy (a rotation).
	eventCAReimported = "CAReimported"
	// eventCARestored: a missing CA Secret was restored from the Controller's copy.
	eventCARestored = "CARestored"
)

// requeueCARotation paces a rotation the Controller refuses: the fix (deleting the certificates
// the old CA signed) happens in the Controller, which sends no event, so the operator asks again.
const requeueCARotation = time.Minute

// caDigest identifies a certificate: the first 16 bytes of the SHA-256 of the DER of the first
// certificate in certPEM, in hex (of the bytes themselves when none parses). The certificate is
// public; no key is part of the digest. Comparing DER makes the Controller's copy, whose PEM
// line endings it normalises, equal to the Secret it was imported from.
func caDigest(certPEM []byte) string {
	raw := certPEM
	for rest := certPEM; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type == "CERTIFICATE" {
			if _, err := x509.ParseCertificate(block.Bytes); err == nil {
				raw = block.Bytes
			}
			break
		}
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:16])
}

// legacyCADigest is the digest earlier versions recorded: of the PEM text.
func legacyCADigest(certPEM []byte) string {
	sum := sha256.Sum256(certPEM)
	return hex.EncodeToString(sum[:16])
}

// recordedCA reports whether certPEM is the certificate annotationImportedCAs records for name.
func (s *scope) recordedCA(name string, certPEM []byte) bool {
	recorded, ok := importedCAs(s.cp)[name]
	return ok && (recorded == caDigest(certPEM) || recorded == legacyCADigest(certPEM))
}

// recordCA notes that the Controller holds certPEM under name; the deferred patch persists it.
func (s *scope) recordCA(name string, certPEM []byte) {
	imported := importedCAs(s.cp)
	imported[name] = caDigest(certPEM)
	raw, err := json.Marshal(imported) // map keys are sorted: a stable value
	if err != nil {
		return
	}
	if s.cp.Annotations == nil {
		s.cp.Annotations = map[string]string{}
	}
	s.cp.Annotations[annotationImportedCAs] = string(raw)
	s.rememberCA(name, caCheck{})
}

// caCheck is the outcome of comparing a CA Secret with the Controller's copy.
type caCheck struct {
	res result
	err error
}

// rememberCA keeps the outcome for name for the rest of the pass.
func (s *scope) rememberCA(name string, c caCheck) {
	if s.caChecks == nil {
		s.caChecks = map[string]caCheck{}
	}
	s.caChecks[name] = c
}

// importedCAs reads annotationImportedCAs; a missing or unreadable annotation is empty (every CA
// is then compared with the Controller's copy once).
func importedCAs(cp *datasancev3.ControlPlane) map[string]string {
	out := map[string]string{}
	if raw, ok := cp.Annotations[annotationImportedCAs]; ok {
		if err := json.Unmarshal([]byte(raw), &out); err != nil {
			return map[string]string{}
		}
	}
	return out
}

// agreeOnCA makes the Controller's copy of CA name agree with ca, the CA its Secret holds, or
// says why it cannot: the Controller lacks it (imported), holds it (recorded), holds the one
// this ControlPlane imported before the Secret changed (replaced: DELETE, then the import; a
// refusal is CARotationBlocked), or holds another one (CAConflict). Nothing is called when the
// Controller was last seen to hold ca, unless force (a full registration: the Controller may
// have lost its database since).
func agreeOnCA(ctx context.Context, s *scope, component, name string, ca *pki.KeyPair, force bool) (result, error) {
	if c, ok := s.caChecks[name]; ok {
		return c.res, c.err
	}
	if !force && s.recordedCA(name, ca.CertPEM) {
		return proceed(), nil
	}
	// A failure is this pass's answer for the CA too: reported once, not asked again.
	res, err := compareCA(ctx, s, component, name, ca)
	if err != nil || !res.isContinue() {
		s.rememberCA(name, caCheck{res: res, err: err})
	}
	return res, err
}

// compareCA is agreeOnCA's call to the Controller.
func compareCA(ctx context.Context, s *scope, component, name string, ca *pki.KeyPair) (result, error) {
	cs, res, err := s.controllerSession(ctx)
	if err != nil || !res.isContinue() {
		return res, err
	}
	info, err := cs.api.GetCA(ctx, name)
	switch {
	case errors.Is(err, iofog.ErrNotFound):
		return importCA(ctx, s, cs, name, ca)
	case err != nil:
		return registrationFailure(ctx, err, cs.loginRejected)
	}
	theirs := []byte(info.Data.Certificate)
	switch {
	case caDigest(theirs) == caDigest(ca.CertPEM):
		s.recordCA(name, ca.CertPEM)
		return proceed(), nil
	case !s.recordedCA(name, theirs):
		return s.caFailure(component, terminal(datasancev3.ReasonCAConflict, fmt.Errorf(
			"CA Secret %s holds another CA than the Controller's CA %s, which this ControlPlane did not import: nothing is signed under either. "+
				"Delete Secret %s to restore the Controller's CA from its copy, or see docs/controlplane.md#ca-rotation", name, name, name)))
	}
	// The Secret changed since the Controller's copy was imported: a rotation.
	switch err := cs.api.DeleteCA(ctx, name); {
	case errors.Is(err, iofog.ErrCAInUse):
		return s.caWait(component, requeue(requeueCARotation, datasancev3.ReasonCARotationBlocked, fmt.Sprintf(
			"CA Secret %s holds a new CA, but the Controller has signed certificates with its copy and refuses to replace it; "+
				"no certificate is issued under the new CA. Delete those certificates in the Controller to finish the rotation, "+
				"or delete Secret %s to restore the Controller's CA (docs/controlplane.md#ca-rotation).", name, name)))
	case err != nil && !errors.Is(err, iofog.ErrNotFound):
		return registrationFailure(ctx, err, cs.loginRejected)
	}
	if res, err := importCA(ctx, s, cs, name, ca); err != nil || !res.isContinue() {
		return res, err
	}
	ctrl.LoggerFrom(ctx).Info("Replaced the Controller's copy of a rotated CA", "ca", name)
	s.r.event(s.cp, corev1.EventTypeNormal, eventCAReimported,
		fmt.Sprintf("The content of CA Secret %s changed; replaced the Controller's copy with it.", name))
	return proceed(), nil
}

// importCA imports CA Secret name into the Controller (which reads the Secret itself) and
// records ca. A CA of that name that appeared meanwhile is compared on the next pass.
func importCA(ctx context.Context, s *scope, cs *controllerSession, name string, ca *pki.KeyPair) (result, error) {
	if err := cs.api.ImportCA(ctx, name); err != nil {
		if errors.Is(err, iofog.ErrConflict) {
			return requeue(requeueRegistration, datasancev3.ReasonProgressing,
				fmt.Sprintf("The Controller got a CA %s meanwhile; comparing it with the Secret's.", name)), nil
		}
		return registrationFailure(ctx, err, cs.loginRejected)
	}
	ctrl.LoggerFrom(ctx).Info("Imported CA into the Controller", "ca", name)
	s.recordCA(name, ca.CertPEM)
	return proceed(), nil
}

// missingCA decides what a missing CA Secret becomes: the Controller's copy when it has one
// (restored, never replaced by a new CA it does not hold), else nil, to be generated and
// imported.
func missingCA(ctx context.Context, s *scope, component string, c resources.TLSSecretSpec) (*pki.KeyPair, result, error) {
	cs, res, err := s.controllerSession(ctx)
	if err != nil || !res.isContinue() {
		return nil, res, err
	}
	info, err := cs.api.GetCA(ctx, c.Name)
	switch {
	case errors.Is(err, iofog.ErrNotFound):
		return nil, proceed(), nil
	case err != nil:
		res, err := registrationFailure(ctx, err, cs.loginRejected)
		return nil, res, err
	}
	ca, err := pki.ParseCA([]byte(info.Data.Certificate), []byte(info.Data.PrivateKey))
	if err != nil {
		_, err := s.caFailure(component, terminal(datasancev3.ReasonCARestoreFailed, fmt.Errorf(
			"CA Secret %s is missing and the Controller's copy of CA %s cannot be restored (%s): create Secret %s with the CA the Controller holds",
			c.Name, c.Name, caProblem(err), c.Name)))
		return nil, result{}, err
	}
	if err := createOnce(ctx, s, resources.TLSSecret(s.cp, component, c, pki.SecretData(ca, nil)), &corev1.Secret{}); err != nil {
		res, err := requeueIfStale(err)
		return nil, res, err
	}
	s.recordCA(c.Name, ca.CertPEM)
	ctrl.LoggerFrom(ctx).Info("Restored a missing CA Secret from the Controller's copy", "secret", c.Name)
	s.r.event(s.cp, corev1.EventTypeNormal, eventCARestored,
		fmt.Sprintf("CA Secret %s was missing; restored it from the Controller's copy of the CA.", c.Name))
	return ca, proceed(), nil
}

// caProblem is the kind of problem of a CA that does not parse, for a message.
func caProblem(err error) string {
	switch {
	case errors.Is(err, pki.ErrUnsupportedKey):
		return "its key is not an RSA key"
	case errors.Is(err, pki.ErrNotCA):
		return "its certificate is not a CA"
	case errors.Is(err, pki.ErrKeyMismatch):
		return "its key does not match its certificate"
	default:
		return "it is not a PEM certificate and key"
	}
}

// caFailure reports a terminal CA failure with one Warning Event per cause (warnOnce).
func (s *scope) caFailure(component string, err error) (result, error) {
	s.warnOnce(component, reasonOf(err), stripTerminal(err).Error())
	return result{}, err
}

// caWait reports a CA wait with one Warning Event per cause (warnOnce).
func (s *scope) caWait(component string, res result) (result, error) {
	s.warnOnce(component, res.reason, res.message)
	return res, nil
}

// importCAs is the CA step of a full registration (deploying, updating, or a Controller that
// restarted): every CA Secret of names must exist, and is compared with the Controller's copy
// (agreeOnCA, forced: the Controller may have lost its database), unless the router or NATS
// component already did so in this pass. A CA Secret whose content the Controller was not seen
// to hold is left to its component, which compares it before it issues leaves under it (and
// alone replaces the Controller's copy in a rotation); the registration waits for it.
func importCAs(ctx context.Context, s *scope, names []string) (result, error) {
	for _, name := range names {
		sec := &corev1.Secret{}
		if found, err := s.getExisting(ctx, name, sec); err != nil || !found {
			return requeue(requeueRegistration, datasancev3.ReasonProgressing,
				fmt.Sprintf("Waiting for CA Secret %s before importing it into the Controller.", name)), err
		}
		ca, valid := validCA(sec)
		if !valid {
			// Its component reports the Secret (InvalidCertificate); nothing to import.
			return requeue(requeueRegistration, datasancev3.ReasonProgressing,
				fmt.Sprintf("Waiting for a valid CA in Secret %s before importing it into the Controller.", name)), nil
		}
		if _, checked := s.caChecks[name]; !checked && !s.recordedCA(name, ca.CertPEM) {
			return requeue(requeueRegistration, datasancev3.ReasonProgressing,
				fmt.Sprintf("Waiting for CA Secret %s to be compared with the Controller's copy.", name)), nil
		}
		if res, err := agreeOnCA(ctx, s, resources.ComponentController, name, ca, true); err != nil || !res.isContinue() {
			return res, err
		}
	}
	return proceed(), nil
}

// validCA is the CA Secret sec holds, and whether it holds a valid one.
func validCA(sec *corev1.Secret) (*pki.KeyPair, bool) {
	ca, err := pki.ParseCA(sec.Data[pki.TLSCertKey], sec.Data[pki.TLSPrivateKeyKey])
	return ca, err == nil
}
