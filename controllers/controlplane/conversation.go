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
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/conversation"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
	"github.com/kubeopera/kubeopera-operator/internal/outcome"
	"github.com/kubeopera/kubeopera-operator/internal/pki"
)

// controllerConversation is what the components ask the ControlPlane's Controller, through the
// pass's conversation.Session (docs/architecture.md, "The Controller conversation"). The
// decisions that combine the answers with Kubernetes state are the components' own.
type controllerConversation interface {
	// VerificationDue reports whether the registration of a ready ControlPlane is due for a
	// check; it calls nothing.
	VerificationDue() bool
	// HoldsRegistration reports whether the Controller still holds reg.
	HoldsRegistration(ctx context.Context, reg conversation.Registration) (bool, error)
	// ProcessSeen reports whether the Controller process that answers was seen holding the
	// registration.
	ProcessSeen(ctx context.Context) (bool, error)
	// LogIn asks GET /status and logs in, once per pass.
	LogIn(ctx context.Context) error
	// Register tells the Controller the router and the NATS hub of reg.
	Register(ctx context.Context, reg conversation.Registration) error
	// RecordRegistration remembers that the Controller holds the registration.
	RecordRegistration()
	// Reachable reports whether the Controller answers at ep (its LoadBalancer address).
	Reachable(ctx context.Context, ep conversation.Endpoint) error

	// CA is the Controller's copy of a CA, nil when it has none.
	CA(ctx context.Context, name string) (*conversation.CA, error)
	// ImportCA has the Controller import the CA of the Secret name.
	ImportCA(ctx context.Context, name string) error
	// DeleteCA removes the Controller's copy of a CA no certificate depends on.
	DeleteCA(ctx context.Context, name string) error
	// CertificatesSignedBy lists the certificates the Controller's CA name signed: its own
	// exec-session certificates and the agents'.
	CertificatesSignedBy(ctx context.Context, name string) (own, agents []string, err error)
	// DeleteCertificates deletes certificates the Controller issued.
	DeleteCertificates(ctx context.Context, names []string) error
	// CAOutcome and RememberCA keep the pass's outcome of comparing each CA with the
	// Controller's copy, so a later step does not ask again, nor report a failure twice.
	CAOutcome(name string) (checked bool, err error)
	RememberCA(name string, err error)

	// NatsBootstrap is the NATS material the Controller generates.
	NatsBootstrap(ctx context.Context) (*conversation.NatsBootstrap, error)
	// NatsOperator is the public key of the NATS operator the Controller holds.
	NatsOperator(ctx context.Context) (string, error)
	// NatsAccounts lists the Controller's NATS accounts.
	NatsAccounts(ctx context.Context) (conversation.NatsAccounts, error)
}

var _ controllerConversation = (*conversation.Session)(nil)

// newSession is the conversation of one pass over s: it reads nothing until a component first
// asks the Controller something (controllerPeer).
func (r *Reconciler) newSession(s *scope) *conversation.Session {
	return conversation.NewSession(conversation.Config{
		ControlPlane:   s.cp,
		Now:            s.now,
		VerifyInterval: r.Options.controllerVerifyInterval(),
		NewClient:      r.NewControllerClient,
		Memory:         &r.conversations,
		Peer:           controllerPeer{r: r, s: s},
	})
}

// controllerPeer answers what the pass's Session needs from Kubernetes, when it first needs it.
type controllerPeer struct {
	r *Reconciler
	s *scope
}

// Endpoint is the in-cluster Controller API with the ControlPlane's trust: the identity
// provider's CA bundle (external mode), then, over https, the Controller's.
func (p controllerPeer) Endpoint(ctx context.Context) (conversation.Endpoint, error) {
	s := p.s
	baseURL := internalControllerURL(p.r.Options.ControllerEndpointTemplate, s.cp)
	ep := conversation.Endpoint{BaseURL: baseURL, ServerNames: internalServerNames(s.spec, baseURL, s.cp.Status.Controller.PublicURL)}
	idpCAs, err := p.r.identityProviderTrust(ctx, s)
	if err != nil {
		return ep, err
	}
	ep.IdentityProviderCAs = idpCAs
	if s.spec.ControllerHTTPS() {
		if ep.CAs, err = p.r.controllerTrust(ctx, s); err != nil {
			return ep, err
		}
	}
	return ep, nil
}

// HoldLogin holds the login while taking over (awaitOwnController).
func (p controllerPeer) HoldLogin() error { return p.s.awaitOwnController() }

// Credentials are the pass's resolved credentials, fingerprinted under the rollout key.
func (p controllerPeer) Credentials(ctx context.Context) (conversation.Credentials, error) {
	s := p.s
	resolved, err := p.r.credentials(ctx, s)
	if err != nil {
		return conversation.Credentials{}, err
	}
	key, err := p.r.rolloutKey(ctx, s)
	if err != nil {
		return conversation.Credentials{}, err
	}
	c := conversation.Credentials{Fingerprint: credentialsFingerprint(key, s.spec, resolved), Password: bootstrapPassword(resolved)}
	if b := s.spec.Auth.Bootstrap; b != nil {
		c.Username = b.Username
	}
	if cl := resolved.Auth.Client; cl != nil {
		c.ClientID, c.ClientSecret = cl.ID, cl.Secret
	}
	return c, nil
}

// LoginRejected emits one Warning Event per rejected login (at most
// conversation.MaxRejectedLogins in a row), not per pass, and marks the failure announced.
func (p controllerPeer) LoginRejected(refused error) {
	p.r.event(p.s.cp, corev1.EventTypeWarning, datasancev3.ReasonLoginFailed, refused.Error())
	p.s.announce(refused.Error())
}

// awaitOwnController holds the login while pods of the Datasance operator's Controller may
// answer on Service controller (taking over: the Service selects both operators' pods until the
// old ones are gone). Such a pod runs another version with other accounts (a 3.7 Controller
// answers the embedded admin's login with 401), so a rejection from it says nothing about this
// ControlPlane's credentials: counting it would hold every login for conversation.LoginRetryInterval and
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

// internalControllerURL is where the operator reaches a ControlPlane's Controller API: the
// endpoint template (default controller.{namespace}.svc.cluster.local:51121) with {namespace}
// and {name} replaced, and the scheme of spec.controller.https. It never uses the public URL.
func internalControllerURL(template string, cp *datasancev3.ControlPlane) string {
	if template == "" {
		template = DefaultControllerEndpointTemplate
	}
	host := strings.NewReplacer("{namespace}", cp.Namespace, "{name}", cp.Name).Replace(template)
	return resources.ControllerScheme(&cp.Spec) + "://" + host
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
	names := []string{conversation.HostOfURL(baseURL)}
	for _, n := range []string{conversation.HostOfURL(spec.Controller.PublicURL), conversation.HostOfURL(publicURL), ingressHost(spec)} {
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
