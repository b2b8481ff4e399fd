package iofog

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// loginRequest is the body of POST /user/login. No totp: the embedded
// bootstrap admin is exempt from MFA, and an operator cannot answer one.
type loginRequest struct {
	Email    string `json:"email"`
	Password string `json:"password"`
}

// Login exchanges the embedded-mode bootstrap username and password for
// tokens at POST /user/login. It does not store the token; pass
// Tokens.AccessToken to SetToken.
//
// A 400 (schema) or 401 answer wraps ErrInvalidCredentials as well as the
// *APIError. The password never appears in the returned error.
func (c *Client) Login(ctx context.Context, username, password string) (*Tokens, error) {
	cl := call{method: http.MethodPost, url: c.endpoint("user", "login"), secrets: []string{password}}
	var tokens Tokens
	err := c.doJSON(ctx, cl, loginRequest{Email: username, Password: password}, &tokens)
	if err != nil {
		return nil, fmt.Errorf("log in to controller: %w", credentialsError(err))
	}
	if tokens.AccessToken == "" {
		return nil, fmt.Errorf("log in to controller: %w: empty accessToken", ErrInvalidResponse)
	}
	return &tokens, nil
}

// LoginClientCredentials obtains an access token for external auth mode with
// the OAuth2 client_credentials grant. It reads the token endpoint from
// {issuerURL}/.well-known/openid-configuration and posts the client id and
// secret in a form body (client_secret_post). The Controller's bearer token
// is not sent to the identity provider, and the token is not stored; pass it
// to SetToken.
//
// A 400 or 401 from the token endpoint wraps ErrInvalidCredentials as well
// as the *APIError. The client secret never appears in the returned error.
func (c *Client) LoginClientCredentials(ctx context.Context, issuerURL, clientID, clientSecret string) (string, error) {
	tokenURL, err := c.discoverTokenEndpoint(ctx, issuerURL)
	if err != nil {
		return "", fmt.Errorf("log in with client credentials: %w", err)
	}

	form := url.Values{
		"grant_type":    {"client_credentials"},
		"client_id":     {clientID},
		"client_secret": {clientSecret},
	}
	cl := call{
		method:           http.MethodPost,
		url:              tokenURL,
		body:             []byte(form.Encode()),
		contentType:      contentTypeForm,
		identityProvider: true,
		secrets:          []string{clientSecret, url.QueryEscape(clientSecret)},
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := c.do(ctx, cl, &tok); err != nil {
		return "", fmt.Errorf("log in with client credentials: %w", credentialsError(err))
	}
	if tok.AccessToken == "" {
		return "", fmt.Errorf("log in with client credentials: %w: empty access_token", ErrInvalidResponse)
	}
	return tok.AccessToken, nil
}

// discoverTokenEndpoint reads token_endpoint from the issuer's OpenID
// Provider metadata. The issuer value itself is not compared: the token is
// only used as a bearer credential, and the Controller validates its iss.
func (c *Client) discoverTokenEndpoint(ctx context.Context, issuerURL string) (*url.URL, error) {
	issuer, err := url.Parse(issuerURL)
	if err != nil {
		return nil, fmt.Errorf("parse issuer URL: %w", err)
	}
	if err := checkEndpointURL(issuer); err != nil {
		return nil, fmt.Errorf("check issuer URL: %w", err)
	}
	discovery := *issuer
	discovery.Path = strings.TrimSuffix(issuer.Path, "/") + "/.well-known/openid-configuration"
	discovery.RawPath = ""

	var meta struct {
		TokenEndpoint string `json:"token_endpoint"`
	}
	if err := c.do(ctx, call{method: http.MethodGet, url: &discovery, identityProvider: true}, &meta); err != nil {
		return nil, fmt.Errorf("discover token endpoint: %w", err)
	}
	if meta.TokenEndpoint == "" {
		return nil, fmt.Errorf("discover token endpoint: %w: empty token_endpoint", ErrInvalidResponse)
	}
	tokenURL, err := url.Parse(meta.TokenEndpoint)
	if err != nil {
		return nil, fmt.Errorf("discover token endpoint: %w: %w", ErrInvalidResponse, err)
	}
	if err := checkEndpointURL(tokenURL); err != nil {
		return nil, fmt.Errorf("discover token endpoint: %w: %w", ErrInvalidResponse, err)
	}
	if issuer.Scheme == "https" && tokenURL.Scheme != "https" {
		// The client secret must not leave TLS because of a metadata document.
		return nil, fmt.Errorf("discover token endpoint: %w: token endpoint is not https", ErrInvalidResponse)
	}
	return tokenURL, nil
}

// checkEndpointURL accepts absolute http(s) URLs without user info.
func checkEndpointURL(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("scheme must be http or https, got %q", u.Scheme)
	}
	if u.Host == "" {
		return errors.New("URL has no host")
	}
	if u.User != nil {
		return errors.New("URL must not contain user info")
	}
	return nil
}

// credentialsError adds ErrInvalidCredentials to a 400 or 401 *APIError.
func credentialsError(err error) error {
	var apiErr *APIError
	if errors.As(err, &apiErr) &&
		(apiErr.StatusCode == http.StatusBadRequest || apiErr.StatusCode == http.StatusUnauthorized) {
		return fmt.Errorf("%w: %w", ErrInvalidCredentials, err)
	}
	return err
}
