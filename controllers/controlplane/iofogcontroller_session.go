package controlplane

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
	"github.com/kubeopera/kubeopera-operator/internal/iofog"
	"github.com/kubeopera/kubeopera-operator/internal/outcome"
	"github.com/kubeopera/kubeopera-operator/internal/pki"
)

// controllerSession is the pass's one conversation with the in-cluster Controller API, shared by
// the NATS component (bootstrap) and the Controller component (registration): one client, one
// GET /status, at most one login per pass. A failure is remembered too, so the second component
// reports it without calling again.
type controllerSession struct {
	api     ControllerAPI
	baseURL string
	// status is the answer of GET /status; boot is the Controller process start it implies.
	status *iofog.ControllerStatus
	// opened: the client exists and /status answered (or did not: openErr).
	opened        bool
	openErr       error
	loggedIn      bool
	loginRejected bool
	// loginErr is the login's outcome for every component that asks (nil: logged in).
	loginErr         error
	closeConnections []func()
}

// controllerStatus returns the pass's Controller client after a successful GET /status, creating
// it on first use. Failures are a requeue (Controller unavailable, 3 s) or an error (certificate
// invalid, bad trust input).
func (r *Reconciler) controllerStatus(ctx context.Context, s *scope) (*controllerSession, error) {
	cs := &s.session
	if cs.opened {
		return cs, cs.openErr
	}
	cs.opened = true
	cs.baseURL = internalControllerURL(r.Options.ControllerEndpointTemplate, s.cp)
	names := internalServerNames(s.spec, cs.baseURL, s.cp.Status.Controller.PublicURL)
	ep := ControllerEndpoint{BaseURL: cs.baseURL, ServerNames: names}
	idpCAs, err := r.identityProviderTrust(ctx, s)
	if err != nil {
		cs.openErr = err
		return cs, err
	}
	ep.IdentityProviderCAs = idpCAs
	api, err := r.controllerClient(ctx, s, ep)
	if err != nil {
		cs.openErr = err
		return cs, err
	}
	cs.api = api
	st, err := api.Status(ctx)
	if err != nil {
		cs.openErr = s.controllerCallFailed(ctx, err, cs.baseURL, names,
			fmt.Sprintf("The Controller API at %s is not available", cs.baseURL))
		return cs, cs.openErr
	}
	cs.status = st
	return cs, nil
}

// controllerSession returns the pass's Controller client after GET /status and the login (spec
// docs/controlplane.md#login). Rejected credentials end the pass's use of the Controller: the
// result is login's LoginFailed requeue (or terminal error) for every component that asks, so
// nothing is called without a token, no CA is compared or imported, and the login gate
// (docs/controlplane.md#login-lockout) decides when the next login is tried.
func (r *Reconciler) controllerSession(ctx context.Context, s *scope) (*controllerSession, error) {
	cs, err := r.controllerStatus(ctx, s)
	if err != nil {
		return cs, err
	}
	if cs.loggedIn {
		return cs, cs.loginErr
	}
	cs.loggedIn = true
	if err := s.awaitOwnController(); err != nil {
		cs.loginErr = err
		return cs, err
	}
	resolved, err := r.credentials(ctx, s)
	if err != nil {
		cs.loginErr = err
		return cs, err
	}
	cs.loginRejected, cs.loginErr = r.login(ctx, s, cs.api, resolved)
	return cs, cs.loginErr
}

// awaitOwnController holds the login while pods of the Datasance operator's Controller may
// answer on Service controller (taking over: the Service selects both operators' pods until the
// old ones are gone). Such a pod runs another version with other accounts (a 3.7 Controller
// answers the embedded admin's login with 401), so a rejection from it says nothing about this
// ControlPlane's credentials: counting it would hold every login for loginRetryInterval and
// bring the account nearer the Controller's lockout. The components poll until the old pods are
// gone, which the Controller component's handover does without the Controller API.
func (s *scope) awaitOwnController() error {
	h := s.handover(resources.ComponentController)
	if h == nil || len(h.pods) == 0 {
		return nil
	}
	names := make([]string, 0, len(h.pods))
	for i := range h.pods {
		names = append(names, h.pods[i].Name)
	}
	return outcome.Wait(datasancev3.ReasonTakingOver, requeueTakeover, fmt.Sprintf(
		"Not logging in to the Controller while the Datasance operator's Controller pods %s may answer for it; "+
			"waiting for this operator's Controller.", strings.Join(names, ", ")))
}

// controllerClient builds a client for ep with the ControlPlane's trust (https only).
func (r *Reconciler) controllerClient(ctx context.Context, s *scope, ep ControllerEndpoint) (ControllerAPI, error) {
	if s.spec.ControllerHTTPS() {
		cas, err := r.controllerTrust(ctx, s)
		if err != nil {
			return nil, err
		}
		ep.CAs = cas
	}
	api, err := r.NewControllerClient(ep)
	if err != nil {
		return nil, outcome.Retry(datasancev3.ReasonControllerUnavailable, err)
	}
	s.session.closeConnections = append(s.session.closeConnections, api.CloseIdleConnections)
	return api, nil
}

// closeSession releases the connections of every client the pass created.
func (s *scope) closeSession() {
	for _, f := range s.session.closeConnections {
		f()
	}
	s.session.closeConnections = nil
}

// controllerTrust is the PEM bundle trusted for this ControlPlane's Controller certificate: the
// ca.crt of spec.controller.secretName (the Secret the Controller serves from; a missing Secret
// or key is no error, the chain may be public) and the key spec.controller.caSecretRef names
// (caBundleFromRef). A ca.crt that holds no PEM certificate is InvalidCertificate (terminal: the
// Secret watch brings the ControlPlane back).
func (r *Reconciler) controllerTrust(ctx context.Context, s *scope) ([]byte, error) {
	var bundle []byte
	if name := s.spec.Controller.SecretName; name != "" {
		sec := &corev1.Secret{}
		found, err := r.getExisting(ctx, s, name, sec)
		if err != nil {
			return nil, err
		}
		if ca := sec.Data[pki.CACertKey]; found && len(ca) > 0 {
			if err := checkPEMCertificates(ca); err != nil {
				return nil, outcome.Stop(datasancev3.ReasonInvalidCertificate,
					fmt.Errorf("key %s of controller TLS Secret %s (spec.controller.secretName): %w", pki.CACertKey, name, err))
			}
			bundle = append(bundle, ca...)
		}
	}
	value, err := r.caBundleFromRef(ctx, s, s.spec.Controller.CASecretRef, "controller CA", "spec.controller.caSecretRef")
	if err != nil || len(value) == 0 {
		return bundle, err
	}
	return append(append(bundle, '\n'), value...), nil
}

// identityProviderTrust is the PEM bundle spec.auth.caSecretRef names, trusted for the external
// identity provider's discovery document and token endpoint (caBundleFromRef); nil in embedded
// mode, where the login goes to the Controller.
func (r *Reconciler) identityProviderTrust(ctx context.Context, s *scope) ([]byte, error) {
	if s.spec.Auth.Mode != datasancev3.AuthModeExternal {
		return nil, nil
	}
	return r.caBundleFromRef(ctx, s, s.spec.Auth.CASecretRef, "identity provider CA", "spec.auth.caSecretRef")
}

// caBundleFromRef reads the PEM CA bundle that ref (the spec field named field) selects from a
// Secret of the ControlPlane's namespace: nil for no reference, or for an optional one whose
// Secret or key is missing. A missing Secret is SecretNotFound, a missing key SecretKeyNotFound,
// a value that holds no PEM certificate InvalidCertificate, all terminal: the referenced-Secret
// watch brings the ControlPlane back when the Secret changes. Messages name the Secret, key and
// field, never the content.
func (r *Reconciler) caBundleFromRef(ctx context.Context, s *scope, ref *corev1.SecretKeySelector, what, field string) ([]byte, error) {
	if ref == nil {
		return nil, nil
	}
	sec := &corev1.Secret{}
	found, err := r.getExisting(ctx, s, ref.Name, sec)
	if err != nil {
		return nil, err
	}
	value, hasKey := sec.Data[ref.Key]
	switch {
	case found && hasKey:
	case ref.Optional != nil && *ref.Optional:
		return nil, nil
	case !found:
		return nil, outcome.Stop(datasancev3.ReasonSecretNotFound, fmt.Errorf(
			"%s Secret %s (%s) not found in namespace %s", what, ref.Name, field, s.namespace()))
	default:
		return nil, outcome.Stop(datasancev3.ReasonSecretKeyNotFound, fmt.Errorf(
			"%s Secret %s has no key %q (%s)", what, ref.Name, ref.Key, field))
	}
	if err := checkPEMCertificates(value); err != nil {
		return nil, outcome.Stop(datasancev3.ReasonInvalidCertificate,
			fmt.Errorf("key %s of %s Secret %s (%s): %w", ref.Key, what, ref.Name, field, err))
	}
	return value, nil
}

// checkPEMCertificates reports whether data holds at least one PEM certificate and every
// CERTIFICATE block parses.
func checkPEMCertificates(data []byte) error {
	n := 0
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return fmt.Errorf("invalid certificate: %w", err)
		}
		n++
	}
	if n == 0 {
		return errors.New("no PEM certificate found")
	}
	return nil
}

// controllerCallFailed classifies a failed call to the Controller. A certificate that does not
// verify is an error with reason ControllerCertificateInvalid naming the dialled name and the
// certificate's names (retried with backoff; the controller TLS Secret and the CA Secret are
// watched). Anything else is a requeue after requeueControllerStatus with reason
// ControllerUnavailable. The condition message is stable for the same cause (iofog.Cause); the
// full error goes to the log only, so a Controller that is down does not make every pass write
// a new message.
func (s *scope) controllerCallFailed(ctx context.Context, err error, baseURL string, serverNames []string, what string) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if m, ok := iofog.AsCertificateMismatch(err); ok {
		host := strings.Join(serverNames, " or ")
		if host == "" {
			host = hostOfURL(baseURL)
		}
		names := "no names"
		if len(m.Names) > 0 {
			names = strings.Join(m.Names, ", ")
		}
		if m.UnknownAuthority {
			return outcome.Retry(datasancev3.ReasonControllerCertificateInvalid, fmt.Errorf(
				"the Controller's certificate at %s (names: %s) is not signed by a trusted CA: put its CA in ca.crt of Secret %q (spec.controller.secretName) or reference it with spec.controller.caSecretRef",
				baseURL, names, s.spec.Controller.SecretName))
		}
		return outcome.Retry(datasancev3.ReasonControllerCertificateInvalid, fmt.Errorf(
			"the Controller's certificate at %s does not cover %s (names: %s)", baseURL, host, names))
	}
	ctrl.LoggerFrom(ctx).Info("Calling the Controller failed", "url", baseURL, "cause", iofog.Cause(err), "error", err.Error())
	return outcome.Wait(datasancev3.ReasonControllerUnavailable, requeueControllerStatus,
		fmt.Sprintf("%s (%s).", what, iofog.Cause(err)))
}

// internalServerNames are the names the in-cluster call accepts the Controller's certificate for
// over https (docs/controlplane.md#https-certificates): the host it dials (the Service name, or
// the endpoint template's host), the host of the public URL (spec.controller.publicUrl, and
// status.controller.publicUrl as the last pass resolved it) and the Ingress host, so a cert-manager or public certificate for
// the public host is accepted while the operator still dials the Service. None over http, and
// none when the dialled host is the only one (plain verification).
func internalServerNames(spec *datasancev3.ControlPlaneSpec, baseURL, publicURL string) []string {
	if !spec.ControllerHTTPS() {
		return nil
	}
	names := []string{hostOfURL(baseURL)}
	for _, n := range []string{hostOfURL(spec.Controller.PublicURL), hostOfURL(publicURL), ingressHost(spec)} {
		if n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	if len(names) == 1 {
		return nil
	}
	return names
}

// ingressHost is the Controller Ingress host in Ingress mode, else "".
func ingressHost(spec *datasancev3.ControlPlaneSpec) string {
	if !spec.ControllerIngressMode() || spec.Ingresses.Controller == nil {
		return ""
	}
	return spec.Ingresses.Controller.Host
}

func hostOfURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Hostname()
}

// controllerBoot is the Controller process start an answer of GET /status implies (its clock's
// timestamp minus its uptime), in Unix seconds. It identifies the process that answered, which
// through the Service may be any pod of the Controller.
func controllerBoot(st *iofog.ControllerStatus) float64 {
	return float64(st.Timestamp)/1000 - st.UptimeSec
}

// bootTolerance absorbs rounding between the timestamp (milliseconds) and the uptime of one
// /status answer, which the Controller computes at the same instant; no Controller restarts
// faster.
const bootTolerance = time.Second

// maxKnownProcesses bounds the Controller processes remembered per ControlPlane: the pods of a
// replicated Controller and those of its last rollouts; the oldest is forgotten first (and read
// back again if it ever answers).
const maxKnownProcesses = 16

// registrations is the reconciler's memory of each ControlPlane's Controller: the processes
// (pods, by start time) seen to hold the registration, and when it was last verified. A
// Controller that loses its state does so by a process restart (SQLite on the pod's own
// filesystem, a wiped volume), so a process seen holding the registration needs no further
// check; a process not seen before is asked (the registration read back) once. It is memory
// only: no write in steady state; after an operator restart the first verification reads the
// registration back once.
type registrations struct {
	mu sync.Mutex
	m  map[types.NamespacedName]registrationRecord
}

type registrationRecord struct {
	uid types.UID
	// boots are the start times of the processes seen holding the registration, oldest first.
	boots    []float64
	verified time.Time
}

// due reports whether the ControlPlane's registration should be verified at now.
func (r *registrations) due(cp *datasancev3.ControlPlane, now time.Time, interval time.Duration) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, ok := r.m[client.ObjectKeyFromObject(cp)]
	return !ok || rec.uid != cp.UID || now.Sub(rec.verified) >= interval
}

// knownProcess reports whether st comes from a Controller process seen holding the
// registration, and if so records the verification.
func (r *registrations) knownProcess(cp *datasancev3.ControlPlane, st *iofog.ControllerStatus, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.seenLocked(cp, st) {
		return false
	}
	key := client.ObjectKeyFromObject(cp)
	rec := r.m[key]
	rec.verified = now
	r.m[key] = rec
	return true
}

// seen reports whether st comes from a Controller process seen holding the registration, without
// recording a verification (knownProcess does).
func (r *registrations) seen(cp *datasancev3.ControlPlane, st *iofog.ControllerStatus) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seenLocked(cp, st)
}

func (r *registrations) seenLocked(cp *datasancev3.ControlPlane, st *iofog.ControllerStatus) bool {
	rec, ok := r.m[client.ObjectKeyFromObject(cp)]
	return ok && rec.uid == cp.UID && slices.ContainsFunc(rec.boots, sameBoot(controllerBoot(st)))
}

// record remembers that the process that answered st holds the registration (it was just
// registered with, or read back from, the Controller).
func (r *registrations) record(cp *datasancev3.ControlPlane, st *iofog.ControllerStatus, now time.Time) {
	if st == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[types.NamespacedName]registrationRecord{}
	}
	key := client.ObjectKeyFromObject(cp)
	rec := r.m[key]
	if rec.uid != cp.UID {
		rec = registrationRecord{uid: cp.UID}
	}
	if boot := controllerBoot(st); !slices.ContainsFunc(rec.boots, sameBoot(boot)) {
		rec.boots = append(rec.boots, boot)
		if len(rec.boots) > maxKnownProcesses {
			rec.boots = slices.Delete(rec.boots, 0, len(rec.boots)-maxKnownProcesses)
		}
	}
	rec.verified = now
	r.m[key] = rec
}

func sameBoot(boot float64) func(float64) bool {
	return func(b float64) bool { return math.Abs(b-boot) <= bootTolerance.Seconds() }
}

// forget drops a deleted ControlPlane.
func (r *registrations) forget(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, key)
}

// The login lockout guard (docs/controlplane.md#login-lockout). The Controller locks an account
// for 15 minutes after 5 failed logins, the bootstrap admin included; the operator makes at most
// maxRejectedLogins rejected logins in a row (one below the Controller's limit) and at most one
// per loginRetryInterval while the credentials stay the same.
const (
	// loginRetryInterval is how long rejected, unchanged credentials wait before the one slow
	// retry (a Controller whose account was fixed out of band, or that created its bootstrap
	// admin late, is found again).
	loginRetryInterval = 10 * time.Minute
	// maxRejectedLogins bounds the rejected logins in a row that slow retries may reach; after
	// that only changed credentials are tried.
	maxRejectedLogins = 4
)

// loginGate is the reconciler's record of rejected credentials, per ControlPlane: a fingerprint
// of the credentials tried (credentialsFingerprint), how many logins in a row the Controller
// rejected and when the last one was. It lives in memory, which is never stale within the
// process, and in status.controller.rejectedLogins, which survives an operator restart: a
// ControlPlane the memory knows nothing about starts from its status.
type loginGate struct {
	mu sync.Mutex
	m  map[types.NamespacedName]loginRecord
}

type loginRecord struct {
	uid types.UID
	// creds is the fingerprint of the credentials last rejected.
	creds string
	// inARow counts the rejected logins since the last successful one.
	inARow int32
	last   time.Time
}

// record is the memory of cp's rejected logins, from its status when the memory has none.
// The caller holds g.mu.
func (g *loginGate) record(cp *datasancev3.ControlPlane) (loginRecord, bool) {
	if rec, ok := g.m[client.ObjectKeyFromObject(cp)]; ok && rec.uid == cp.UID {
		return rec, true
	}
	if st := cp.Status.Controller.RejectedLogins; st != nil && st.Count > 0 {
		return loginRecord{uid: cp.UID, creds: st.Credentials, inARow: st.Count, last: st.LastRejection.Time}, true
	}
	return loginRecord{}, false
}

// held reports whether a login with creds must not be tried at now, and if so how long until
// the next slow retry (0: none left; only a change of the credentials is tried).
func (g *loginGate) held(cp *datasancev3.ControlPlane, creds string, now time.Time) (time.Duration, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	rec, ok := g.record(cp)
	if !ok || rec.creds != creds {
		return 0, false
	}
	if rec.inARow >= maxRejectedLogins {
		return 0, true
	}
	if wait := rec.last.Add(loginRetryInterval).Sub(now); wait > 0 {
		return wait, true
	}
	return 0, false
}

// rejected records a rejected login with creds, in memory and in cp's status, and returns the
// rejections in a row.
func (g *loginGate) rejected(cp *datasancev3.ControlPlane, creds string, now time.Time) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = map[types.NamespacedName]loginRecord{}
	}
	rec, _ := g.record(cp)
	rec.uid = cp.UID
	// The status keeps whole seconds: a restarted operator may retry up to a second early.
	rec.creds, rec.last = creds, now
	rec.inARow++
	g.m[client.ObjectKeyFromObject(cp)] = rec
	cp.Status.Controller.RejectedLogins = &datasancev3.RejectedLogins{
		Count: rec.inARow, LastRejection: metav1.Time{Time: rec.last}, Credentials: creds,
	}
	return int(rec.inARow)
}

// succeeded forgets the rejections of cp, in memory and in its status.
func (g *loginGate) succeeded(cp *datasancev3.ControlPlane) {
	g.forget(client.ObjectKeyFromObject(cp))
	cp.Status.Controller.RejectedLogins = nil
}

// forget drops a ControlPlane from the memory.
func (g *loginGate) forget(key types.NamespacedName) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.m, key)
}

// credentialsFingerprint identifies the credentials a login sends (auth mode, issuer, user or
// client and the resolved secrets), so that a change of the spec or of a referenced Secret is
// told apart from a retry of the same rejected values. It is an HMAC-SHA256 under key (Secret
// controller-rollout-key): it is kept in the status, and a plain hash of values mostly visible in
// the ControlPlane would let a reader guess the one that is not (the password) offline.
func credentialsFingerprint(key []byte, spec, resolved *datasancev3.ControlPlaneSpec) string {
	h := hmac.New(sha256.New, key)
	write := func(v string) { _, _ = fmt.Fprintf(h, "%d:%s;", len(v), v) }
	write(string(spec.Auth.Mode))
	switch spec.Auth.Mode {
	case datasancev3.AuthModeExternal:
		write(spec.Auth.IssuerURL)
		if c := resolved.Auth.Client; c != nil {
			write(c.ID)
			write(c.Secret)
		}
	default:
		if b := spec.Auth.Bootstrap; b != nil {
			write(b.Username)
		}
		write(bootstrapPassword(resolved))
	}
	return hex.EncodeToString(h.Sum(nil))
}
