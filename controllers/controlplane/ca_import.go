package controlplane

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/internal/pki"
)

// annotationImportedCAs on the ControlPlane records, for each CA imported into the Controller,
// a digest of the certificate (tls.crt) its Secret held at the import: a JSON object from Secret
// name to digest. A CA Secret whose content no longer matches is imported again (a rotated
// bring-your-own CA, or an operator CA deleted and generated anew), once per content.
const annotationImportedCAs = "kubeopera.io/imported-cas"

// eventCAReimported is the reason of the Normal Event for a CA imported again.
const eventCAReimported = "CAReimported"

// caDigest identifies a CA Secret's certificate: the first 16 bytes of its SHA-256, in hex. The
// certificate is public; the key is not part of the digest.
func caDigest(sec *corev1.Secret) string {
	sum := sha256.Sum256(sec.Data[pki.TLSCertKey])
	return hex.EncodeToString(sum[:16])
}

// importedCAs reads annotationImportedCAs; a missing or unreadable annotation is empty (every CA
// is then looked up with EnsureCA, which imports only what the Controller lacks).
func importedCAs(cp *datasancev3.ControlPlane) map[string]string {
	out := map[string]string{}
	if raw, ok := cp.Annotations[annotationImportedCAs]; ok {
		if err := json.Unmarshal([]byte(raw), &out); err != nil {
			return map[string]string{}
		}
	}
	return out
}

// recordImportedCAs writes annotationImportedCAs; the deferred patch persists it.
func recordImportedCAs(cp *datasancev3.ControlPlane, imported map[string]string) {
	raw, err := json.Marshal(imported) // map keys are sorted: a stable value
	if err != nil {
		return
	}
	if cp.Annotations == nil {
		cp.Annotations = map[string]string{}
	}
	cp.Annotations[annotationImportedCAs] = string(raw)
}

// importCAs is the CA step of a full registration: each CA Secret of names must exist (the
// Controller reads the CA from it); a CA whose content changed since its import is imported
// again (ReimportCA), every other one is ensured (EnsureCA: imported when the Controller lacks
// it). The digests are recorded as each import succeeds.
func importCAs(ctx context.Context, s *scope, api ControllerAPI, names []string, loginRejected bool) (result, error) {
	imported := importedCAs(s.cp)
	defer recordImportedCAs(s.cp, imported)
	for _, name := range names {
		sec := &corev1.Secret{}
		// Importing before the router or NATS component created the Secret would only earn a 500
		// from the Controller.
		if found, err := s.getExisting(ctx, name, sec); err != nil || !found {
			return requeue(requeueRegistration, datasancev3.ReasonProgressing,
				fmt.Sprintf("Waiting for CA Secret %s before importing it into the Controller.", name)), err
		}
		digest := caDigest(sec)
		if prev, known := imported[name]; known && prev != digest {
			if err := reimportCA(ctx, s, api, name); err != nil {
				return registrationFailure(ctx, err, loginRejected)
			}
		} else {
			created, err := api.EnsureCA(ctx, name, name)
			if err != nil {
				return registrationFailure(ctx, err, loginRejected)
			}
			if created {
				ctrl.LoggerFrom(ctx).Info("Imported CA into the Controller", "ca", name)
			}
		}
		imported[name] = digest
	}
	return proceed(), nil
}

// reimportRotatedCAs is the CA step of a pass whose registration is otherwise unchanged: it
// reads the CA Secrets (from the cache) and calls the Controller only when one changed since its
// import, to import that one again; nothing else is registered. A CA not recorded yet (a
// registration made before the digests existed) is recorded as it is, without a call.
func reimportRotatedCAs(ctx context.Context, s *scope, names []string) (result, error) {
	imported := importedCAs(s.cp)
	defer recordImportedCAs(s.cp, imported)
	var changed []string
	digests := map[string]string{}
	for _, name := range names {
		sec := &corev1.Secret{}
		found, err := s.getExisting(ctx, name, sec)
		if err != nil {
			return result{}, err
		}
		if !found {
			continue // its component creates it; the next full registration imports it
		}
		digest := caDigest(sec)
		switch prev, known := imported[name]; {
		case !known:
			imported[name] = digest
		case prev != digest:
			changed = append(changed, name)
			digests[name] = digest
		}
	}
	if len(changed) == 0 {
		return proceed(), nil
	}
	cs, res, err := s.controllerSession(ctx)
	if err != nil || !res.isContinue() {
		return res, err
	}
	for _, name := range changed {
		if err := reimportCA(ctx, s, cs.api, name); err != nil {
			return registrationFailure(ctx, err, cs.loginRejected)
		}
		imported[name] = digests[name]
	}
	return proceed(), nil
}

// reimportCA imports CA Secret name into the Controller again and says so.
func reimportCA(ctx context.Context, s *scope, api ControllerAPI, name string) error {
	if err := api.ReimportCA(ctx, name, name); err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("Imported a changed CA into the Controller again", "ca", name)
	s.r.event(s.cp, corev1.EventTypeNormal, eventCAReimported,
		fmt.Sprintf("The content of CA Secret %s changed; imported it into the Controller again.", name))
	return nil
}
