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
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/conversation"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
	"github.com/kubeopera/kubeopera-operator/internal/outcome"
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
//     it: imported when the Controller has none, recorded when they match. When they differ,
//     what decides is whether agents depend on the Controller's copy (it signed their
//     certificates; decideCA): if none does, the Secret's CA replaces it (a rotation, or a CA
//     the Controller made itself); if some do, the Controller's copy is kept, and taken into
//     an operator-made Secret unless the Secret changed since it was imported (a rotation the
//     agents block) or the user brought it (a conflict a person decides);
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
	// eventCAReplaced: the Controller held another CA under the name that no agent depended on
	// (one it made itself); the Secret's replaced it.
	eventCAReplaced = "CAReplaced"
	// eventCAAdopted: the Controller's copy, which agents depend on, was taken into the
	// operator-made CA Secret; the Secret's earlier CA is kept in it under previous-tls.*.
	eventCAAdopted = "CAAdopted"
)

// Keys of a CA Secret that keep the CA it held before the Controller's copy was adopted.
const (
	previousCAKey        = "previous-tls.crt"
	previousCAPrivateKey = "previous-tls.key"
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
func recordCA(s *scope, conv controllerConversation, name string, certPEM []byte) {
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
	conv.RememberCA(name, nil)
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

// agreeOnCA makes the Controller's copy of CA name agree with ca, the CA its Secret sec holds,
// or says why it cannot (decideCA). Nothing is called when the Controller was last seen to hold
// ca, unless force (a full registration: the Controller may have lost its database since).
func (r *Reconciler) agreeOnCA(ctx context.Context, s *scope, conv controllerConversation, component string, sec *corev1.Secret, ca *pki.KeyPair, force bool) error {
	name := sec.Name
	if checked, err := conv.CAOutcome(name); checked {
		return err
	}
	if !force && s.recordedCA(name, ca.CertPEM) {
		return nil
	}
	// A failure is this pass's answer for the CA too: reported once, not asked again.
	err := r.compareCA(ctx, s, conv, component, sec, ca)
	if err != nil {
		conv.RememberCA(name, err)
	}
	return err
}

// compareCA is agreeOnCA's call to the Controller: the CA is imported when the Controller lacks
// it, recorded when it holds the same, and otherwise decided by decideCA.
func (r *Reconciler) compareCA(ctx context.Context, s *scope, conv controllerConversation, component string, sec *corev1.Secret, ca *pki.KeyPair) error {
	name := sec.Name
	theirs, err := conv.CA(ctx, name)
	switch {
	case err != nil:
		return err
	case theirs == nil:
		return importCA(ctx, s, conv, name, ca)
	}
	if caDigest(theirs.Certificate) == caDigest(ca.CertPEM) {
		recordCA(s, conv, name, ca.CertPEM)
		return nil
	}
	return r.decideCA(ctx, s, conv, component, sec, ca, theirs)
}

// decideCA settles a CA whose Secret and Controller copies differ (docs/controlplane.md#cas-the-controller-makes).
// The Controller signs with its copy (agents' router and NATS certificates, and the client
// certificate each of its own processes makes for exec sessions, controller-exec-session-client-*),
// refuses to delete it while such certificates exist, and makes router-site-ca and
// default-router-local-ca itself when an agent is provisioned and they are missing
// (Datasance/Controller src/services/iofog-service.js, _handleRouterCertificates;
// src/services/router-connection-service.js, _createControllerCertificate). So:
//
//   - No agent's certificate under the Controller's copy: the Secret's CA wins, as the hub's
//     router and NATS already use it. The Controller's own exec-session certificates are deleted
//     (its processes make new ones when they restart, which the Controller Deployment is rolled
//     for), then its copy, then the Secret is imported. This covers a rotation and a CA the
//     Controller made itself before the operator imported (a new database, 3.8.0 at boot).
//   - Agents' certificates under it and the Secret changed since the Controller's copy was
//     imported (a rotation): blocked, naming those certificates; a person decides.
//   - Agents' certificates under it otherwise: the Controller's copy wins (the agents trust it and
//     it cannot be replaced). An operator-made Secret takes it, keeping its own CA under
//     previous-tls.*; a Secret the user brought is a conflict a person decides.
func (r *Reconciler) decideCA(ctx context.Context, s *scope, conv controllerConversation, component string, sec *corev1.Secret, ca *pki.KeyPair, theirs *conversation.CA) error {
	name := sec.Name
	rotation := s.recordedCA(name, theirs.Certificate)
	own, agents, err := conv.CertificatesSignedBy(ctx, name)
	if err != nil {
		return err
	}
	switch {
	case len(agents) == 0:
		return r.replaceControllerCA(ctx, s, conv, name, ca, own, rotation)
	case rotation:
		return r.caWait(s, component, outcome.Wait(datasancev3.ReasonCARotationBlocked, requeueCARotation, fmt.Sprintf(
			"CA Secret %s holds a new CA, but agents' certificates signed by the Controller's copy (%s) keep the Controller from replacing it; "+
				"no certificate is issued under the new CA. Delete those certificates in the Controller (re-provisioning their agents) to finish the rotation, "+
				"or delete Secret %s to restore the Controller's CA (docs/controlplane.md#ca-rotation).", name, strings.Join(agents, ", "), name)))
	case sec.Labels[resources.LabelManagedBy] != resources.LabelManagedByValue:
		return r.caFailure(s, component, outcome.Stop(datasancev3.ReasonCAConflict, fmt.Errorf(
			"CA Secret %s, which you brought, holds another CA than the Controller's CA %s, which agents' certificates depend on (%s): nothing is signed under either. "+
				"Delete Secret %s to take the Controller's CA, or see docs/controlplane.md#ca-rotation", name, name, strings.Join(agents, ", "), name)))
	}
	return r.adoptControllerCA(ctx, s, conv, component, sec, ca, theirs, agents)
}

// replaceControllerCA replaces the Controller's copy of CA name, on which no agent depends, with
// the Secret's ca: its own exec-session certificates are deleted first (the Controller Deployment
// rolls, so that its processes make new ones under the new CA), then the CA, then the import.
func (r *Reconciler) replaceControllerCA(ctx context.Context, s *scope, conv controllerConversation, name string, ca *pki.KeyPair, own []string, rotation bool) error {
	if err := conv.DeleteCertificates(ctx, own); err != nil {
		return err
	}
	if len(own) > 0 {
		if err := r.restartControllerPods(ctx, s); err != nil {
			return err
		}
	}
	// A certificate signed between the list and the delete is a wait: decided again.
	if err := conv.DeleteCA(ctx, name); err != nil {
		return err
	}
	if err := importCA(ctx, s, conv, name, ca); err != nil {
		return err
	}
	log := ctrl.LoggerFrom(ctx)
	if rotation {
		log.Info("Replaced the Controller's copy of a rotated CA", "Secret", klog.KRef(s.namespace(), name), "controllerCertificatesDeleted", len(own))
		r.event(s.cp, corev1.EventTypeNormal, eventCAReimported,
			fmt.Sprintf("The content of CA Secret %s changed; replaced the Controller's copy with it.", name))
		return nil
	}
	log.Info("Replaced a CA the Controller held and no agent used with the Secret's", "Secret", klog.KRef(s.namespace(), name), "controllerCertificatesDeleted", len(own))
	r.event(s.cp, corev1.EventTypeNormal, eventCAReplaced, fmt.Sprintf(
		"The Controller held another CA %s, on which no agent depended (it makes one itself when it provisions an agent without it); "+
			"replaced it with the CA of Secret %s, which the hub uses.", name, name))
	return nil
}

// adoptControllerCA writes the Controller's copy of the CA into the operator-made Secret sec,
// keeping the Secret's CA under previous-tls.*, and ends the pass: the next one issues the leaves
// under the adopted CA. A copy the operator cannot use (pki.ParseCA) is CAConflict.
func (r *Reconciler) adoptControllerCA(ctx context.Context, s *scope, conv controllerConversation, component string, sec *corev1.Secret, ca *pki.KeyPair, theirs *conversation.CA, agents []string) error {
	name := sec.Name
	adopted, err := pki.ParseCA(theirs.Certificate, theirs.PrivateKey)
	if err != nil {
		return r.caFailure(s, component, outcome.Stop(datasancev3.ReasonCAConflict, fmt.Errorf(
			"CA Secret %s holds another CA than the Controller's CA %s, which agents' certificates depend on (%s), and the Controller's copy cannot be used (%s): "+
				"nothing is signed under either; see docs/controlplane.md#ca-rotation", name, name, strings.Join(agents, ", "), caProblem(err))))
	}
	// Under an optimistic lock: a Secret changed since it was read is a Conflict, decided again.
	updated := sec.DeepCopy()
	maps.Copy(updated.Data, pki.SecretData(adopted, nil))
	updated.Data[previousCAKey], updated.Data[previousCAPrivateKey] = ca.CertPEM, ca.KeyPEM
	if err := r.Patch(ctx, updated, client.MergeFromWithOptions(sec, client.MergeFromWithOptimisticLock{}), client.FieldOwner(FieldOwner)); err != nil {
		return requeueIfStale(fmt.Errorf("take the Controller's CA into Secret %s: %w", name, err))
	}
	recordCA(s, conv, name, adopted.CertPEM)
	ctrl.LoggerFrom(ctx).Info("Took the Controller's copy of a CA agents depend on into its Secret", "Secret", klog.KRef(s.namespace(), name), "agentCertificates", len(agents))
	r.event(s.cp, corev1.EventTypeNormal, eventCAAdopted, fmt.Sprintf(
		"The Controller holds another CA %s, which agents' certificates depend on (%s): CA Secret %s now holds it, "+
			"its earlier CA is kept under %s and %s, and the certificates under it are issued again.",
		name, strings.Join(agents, ", "), name, previousCAKey, previousCAPrivateKey))
	return outcome.Wait(datasancev3.ReasonProgressing, conversation.RequeueRegistration,
		fmt.Sprintf("CA Secret %s took the Controller's CA; issuing the certificates under it again.", name))
}

// importCA imports CA Secret name into the Controller (which reads the Secret itself) and
// records ca. A CA of that name that appeared meanwhile is compared on the next pass.
func importCA(ctx context.Context, s *scope, conv controllerConversation, name string, ca *pki.KeyPair) error {
	if err := conv.ImportCA(ctx, name); err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("Imported CA into the Controller", "Secret", klog.KRef(s.namespace(), name))
	recordCA(s, conv, name, ca.CertPEM)
	return nil
}

// missingCA decides what a missing CA Secret becomes: the Controller's copy when it has one
// (restored, never replaced by a new CA it does not hold), else nil, to be generated and
// imported.
func (r *Reconciler) missingCA(ctx context.Context, s *scope, conv controllerConversation, component string, c resources.TLSSecretSpec) (*pki.KeyPair, error) {
	theirs, err := conv.CA(ctx, c.Name)
	if err != nil || theirs == nil {
		return nil, err
	}
	ca, err := pki.ParseCA(theirs.Certificate, theirs.PrivateKey)
	if err != nil {
		err := r.caFailure(s, component, outcome.Stop(datasancev3.ReasonCARestoreFailed, fmt.Errorf(
			"CA Secret %s is missing and the Controller's copy of CA %s cannot be restored (%s): create Secret %s with the CA the Controller holds",
			c.Name, c.Name, caProblem(err), c.Name)))
		return nil, err
	}
	if err := r.createOnce(ctx, resources.TLSSecret(s.cp, component, c, pki.SecretData(ca, nil)), &corev1.Secret{}); err != nil {
		err := requeueIfStale(err)
		return nil, err
	}
	recordCA(s, conv, c.Name, ca.CertPEM)
	ctrl.LoggerFrom(ctx).Info("Restored a missing CA Secret from the Controller's copy", "Secret", klog.KRef(s.namespace(), c.Name))
	r.event(s.cp, corev1.EventTypeNormal, eventCARestored,
		fmt.Sprintf("CA Secret %s was missing; restored it from the Controller's copy of the CA.", c.Name))
	return ca, nil
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
func (r *Reconciler) caFailure(s *scope, component string, err error) error {
	r.warnOnce(s, component, reasonOf(err), err.Error())
	return err
}

// caWait reports a CA wait with one Warning Event per cause (warnOnce).
func (r *Reconciler) caWait(s *scope, component string, w *outcome.Error) error {
	r.warnOnce(s, component, w.Reason, w.Message)
	return w
}

// importCAs is the CA step of a full registration (deploying, updating, or a Controller that
// restarted): every CA Secret of names must exist, and is compared with the Controller's copy
// (agreeOnCA, forced: the Controller may have lost its database), unless the router or NATS
// component already did so in this pass. A CA Secret whose content the Controller was not seen
// to hold is left to its component, which compares it before it issues leaves under it (and
// alone replaces the Controller's copy in a rotation); the registration waits for it.
func (r *Reconciler) importCAs(ctx context.Context, s *scope, conv controllerConversation, names []string) error {
	for _, name := range names {
		sec := &corev1.Secret{}
		found, err := r.getExisting(ctx, s, name, sec)
		if err != nil {
			return err
		}
		if !found {
			return outcome.Wait(datasancev3.ReasonProgressing, conversation.RequeueRegistration,
				fmt.Sprintf("Waiting for CA Secret %s before importing it into the Controller.", name))
		}
		ca, valid := validCA(sec)
		if !valid {
			// Its component reports the Secret (InvalidCertificate); nothing to import.
			return outcome.Wait(datasancev3.ReasonProgressing, conversation.RequeueRegistration,
				fmt.Sprintf("Waiting for a valid CA in Secret %s before importing it into the Controller.", name))
		}
		if checked, _ := conv.CAOutcome(name); !checked && !s.recordedCA(name, ca.CertPEM) {
			return outcome.Wait(datasancev3.ReasonProgressing, conversation.RequeueRegistration,
				fmt.Sprintf("Waiting for CA Secret %s to be compared with the Controller's copy.", name))
		}
		if err := r.agreeOnCA(ctx, s, conv, resources.ComponentController, sec, ca, true); err != nil {
			return err
		}
	}
	return nil
}

// validCA is the CA Secret sec holds, and whether it holds a valid one.
func validCA(sec *corev1.Secret) (*pki.KeyPair, bool) {
	ca, err := pki.ParseCA(sec.Data[pki.TLSCertKey], sec.Data[pki.TLSPrivateKeyKey])
	return ca, err == nil
}
