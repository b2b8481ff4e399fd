package fake

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"mime"
	"net/http"
	"strings"
	"time"
)

// Access tokens live as long as the Controller's embedded default (900 s);
// the fake does not expire them by time, use RevokeTokens instead.
const accessTokenTTLSeconds = 900

// handleStatus answers GET /status as the next pod (SetPods), with that pod's uptime.
func (s *Server) handleStatus(w http.ResponseWriter) {
	s.mu.Lock()
	started := s.pods[s.nextPod%len(s.pods)]
	s.nextPod++
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{
		"status":    "online",
		"timestamp": time.Now().UnixMilli(),
		"uptimeSec": time.Since(started).Seconds(),
		"versions":  map[string]string{"controller": "3.7.3", "ecnViewer": "1.4.4"},
	})
}

// handleLogin is POST /user/login with the v3.8 embedded schema: email and
// password are required strings, email non-empty, extra fields allowed.
func (s *Server) handleLogin(w http.ResponseWriter, r *http.Request, body []byte) {
	obj, ok := readObject(w, r, body)
	if !ok {
		return
	}
	email, emailMsg := requiredString(obj, "email")
	password, passwordMsg := requiredString(obj, "password")
	var msg string
	switch {
	case emailMsg != "":
		msg = emailMsg
	case passwordMsg != "":
		msg = passwordMsg
	case email == "":
		msg = dumpMsg("email", "minLength", "does not meet minimum length of 1", 1)
	default:
		s.login(w, email, password)
		return
	}
	writeError(w, http.StatusBadRequest, "ValidationError", msg)
}

// The embedded Controller's login lockout (controller-api.md, "Login
// lockout"): after maxFailedAttempts wrong passwords an account is locked for
// lockoutDuration, the bootstrap admin included.
const (
	maxFailedAttempts = 5
	lockoutDuration   = 15 * time.Minute
)

// lockout is the failure record of one account.
type lockout struct {
	failures    int
	lockedUntil time.Time
}

// login checks the credentials of the one account (the bootstrap admin). A
// wrong password is counted against the account; the fifth in a row locks it
// for lockoutDuration, during which even the right password answers the same
// 401 (the real Controller does not tell a locked account apart). Only a
// successful login clears the count: the end of a lock does not, so the next
// wrong password locks the account again (Controller
// src/services/auth-policy-service.js, recordFailedLogin and isAccountLocked;
// src/services/auth-login-service.js, completeLogin and resetFailedLogin). An
// unknown email has no account to count against.
func (s *Server) login(w http.ResponseWriter, email, password string) {
	s.mu.Lock()
	known := secretEqual(email, s.username)
	valid := known && secretEqual(password, s.password)
	now := s.now()
	if known {
		rec := s.lockouts[email]
		if rec == nil {
			rec = &lockout{}
			s.lockouts[email] = rec
		}
		switch {
		case now.Before(rec.lockedUntil):
			valid = false
		case valid:
			rec.failures = 0
		default:
			rec.failures++
			if rec.failures >= maxFailedAttempts {
				rec.lockedUntil = now.Add(lockoutDuration)
			}
		}
	}
	s.mu.Unlock()
	if !valid {
		writeError(w, http.StatusUnauthorized, "InvalidCredentialsError", "Invalid credentials")
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{
		"accessToken":  s.IssueToken(),
		"refreshToken": randomToken(),
	})
}

// Locked reports whether the account username is locked out now.
func (s *Server) Locked(username string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.lockouts[username]
	return rec != nil && s.now().Before(rec.lockedUntil)
}

// FailedLogins returns the wrong passwords counted against username since
// its last successful login.
func (s *Server) FailedLogins(username string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.lockouts[username]
	if rec == nil {
		return 0
	}
	return rec.failures
}

// handleDiscovery serves the OpenID Provider metadata of the embedded issuer.
func (s *Server) handleDiscovery(w http.ResponseWriter) {
	issuer := s.IssuerURL()
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                issuer,
		"token_endpoint":                        issuer + "/token",
		"jwks_uri":                              issuer + "/jwks",
		"grant_types_supported":                 []string{"client_credentials", "password", "refresh_token"},
		"token_endpoint_auth_methods_supported": []string{"client_secret_post", "client_secret_basic"},
		"response_types_supported":              []string{"code"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
	})
}

// handleToken is the OAuth2 token endpoint for the client_credentials grant
// (RFC 6749 section 4.4), with client_secret_post or client_secret_basic.
func (s *Server) handleToken(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/x-www-form-urlencoded" || r.ParseForm() != nil {
		writeJSON(w, http.StatusBadRequest, oauthError{Error: "invalid_request", Description: "form body required"})
		return
	}
	if grant := r.PostForm.Get("grant_type"); grant != "client_credentials" {
		writeJSON(w, http.StatusBadRequest, oauthError{Error: "unsupported_grant_type"})
		return
	}
	id, secret, basic := r.BasicAuth()
	if !basic {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	s.mu.Lock()
	valid := secretEqual(id, s.clientID) && secretEqual(secret, s.clientSecret)
	s.mu.Unlock()
	if !valid {
		writeJSON(w, http.StatusUnauthorized, oauthError{Error: "invalid_client"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": s.IssueToken(),
		"token_type":   "Bearer",
		"expires_in":   accessTokenTTLSeconds,
	})
}

type oauthError struct {
	Error       string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

// protect runs next only for a request carrying a token this server issued,
// answering the authorization gate's 401 or 403 otherwise.
func (s *Server) protect(w http.ResponseWriter, r *http.Request, next func()) {
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	s.mu.Lock()
	_, known := s.tokens[token]
	forbidden := s.forbidden
	s.mu.Unlock()

	switch {
	case !strings.EqualFold(scheme, "Bearer") || token == "" || !known:
		writeJSON(w, http.StatusUnauthorized, map[string]string{
			"error": "Unauthorized: No authentication information found",
		})
	case forbidden != "":
		writeJSON(w, http.StatusForbidden, map[string]string{"error": "Forbidden", "message": forbidden})
	default:
		next()
	}
}

// IssueToken issues and returns a new valid bearer token, as a login would.
func (s *Server) IssueToken() string {
	token := randomToken()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[token] = struct{}{}
	return token
}

// RevokeTokens invalidates every issued token, as if they had expired.
func (s *Server) RevokeTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens = map[string]struct{}{}
}

// SetCredentials changes the embedded-mode bootstrap username and password POST /user/login
// accepts: an administrator changed the account's password in the Controller. The failed-login
// count and issued tokens stay.
func (s *Server) SetCredentials(username, password string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.username, s.password = username, password
}

// SetForbidden makes the authorization gate deny every valid token with 403
// {"error":"Forbidden","message":message}; an empty message turns it off.
func (s *Server) SetForbidden(message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forbidden = message
}

// randomToken returns an opaque token with 256 bits of entropy.
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails since Go 1.24
	return base64.RawURLEncoding.EncodeToString(b)
}

func secretEqual(got, want string) bool {
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}
