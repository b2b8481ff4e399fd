package fake

import (
	"bytes"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
)

// IdentityProviderIssuerPath is the issuer path of an IdentityProvider (the shape of a
// Keycloak realm); its token endpoint is IdentityProviderIssuerPath + IdentityProviderTokenPath.
const (
	IdentityProviderIssuerPath = "/realms/kubeopera"
	IdentityProviderTokenPath  = "/protocol/openid-connect/token"
)

// IdentityProvider is an external OIDC identity provider for the Controller's external auth
// mode (controller-api.md, "External mode"), served over HTTPS with the certificate it is given,
// so a test decides who can trust it. It serves the discovery document
// ({issuer}/.well-known/openid-configuration) and the client_credentials grant at its token
// endpoint, for the client its Controller accepts (WithOIDCClient). The tokens it issues are
// tokens of that Controller: the real Controller accepts the provider's JWTs by the provider's
// keys, the fake by its list of issued tokens. Every request is recorded.
type IdentityProvider struct {
	controller *Server
	srv        *httptest.Server

	mu       sync.Mutex
	requests []Request
}

// NewIdentityProvider starts an identity provider for controller over HTTPS with cert.
func NewIdentityProvider(controller *Server, cert tls.Certificate) *IdentityProvider {
	p := &IdentityProvider{controller: controller}
	p.srv = httptest.NewUnstartedServer(p)
	p.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	p.srv.StartTLS()
	return p
}

// IssuerURL is the issuer, for spec.auth.issuerUrl.
func (p *IdentityProvider) IssuerURL() string { return p.srv.URL + IdentityProviderIssuerPath }

// Close shuts the provider down.
func (p *IdentityProvider) Close() { p.srv.Close() }

// Calls returns the recorded requests as "METHOD /path" strings, in order.
func (p *IdentityProvider) Calls() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, len(p.requests))
	for i, r := range p.requests {
		out[i] = r.Call()
	}
	return out
}

// ServeHTTP records the request and answers the two OIDC routes; anything else is a 404.
func (p *IdentityProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	p.mu.Lock()
	p.requests = append(p.requests, Request{
		Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Body: bytes.Clone(body),
	})
	p.mu.Unlock()
	if err != nil {
		writeJSON(w, http.StatusBadRequest, oauthError{Error: "invalid_request"})
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	issuer := p.IssuerURL()
	switch r.Method + " " + r.URL.Path {
	case "GET " + IdentityProviderIssuerPath + "/.well-known/openid-configuration":
		writeJSON(w, http.StatusOK, map[string]any{
			"issuer":                                issuer,
			"token_endpoint":                        issuer + IdentityProviderTokenPath,
			"jwks_uri":                              issuer + "/protocol/openid-connect/certs",
			"grant_types_supported":                 []string{"client_credentials"},
			"token_endpoint_auth_methods_supported": []string{"client_secret_post", "client_secret_basic"},
			"response_types_supported":              []string{"code"},
			"subject_types_supported":               []string{"public"},
			"id_token_signing_alg_values_supported": []string{"RS256"},
		})
	case "POST " + IdentityProviderIssuerPath + IdentityProviderTokenPath:
		p.controller.handleToken(w, r)
	default:
		writeJSON(w, http.StatusNotFound, oauthError{Error: "not_found"})
	}
}
