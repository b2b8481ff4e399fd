package controllers

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// metricsAuth authenticates and authorizes each scrape of the secure metrics endpoint with the
// API server: the bearer token by a TokenReview, then a SubjectAccessReview of the request's
// verb and path for that user (a non-resource URL: ClusterRole metrics-reader grants get on
// /metrics). No token is 401, a token the API server does not authenticate is 401, a user not
// allowed is 403, a review that fails is 500; nothing of the token is logged.
//
// Why not controller-runtime's filters.WithAuthenticationAndAuthorization, which does the same:
// it links k8s.io/apiserver's delegating authenticator and authorizer and with them the CEL
// libraries. Measured on 2026-12-07 with go1.26.10 linux/amd64 (`go build -o`, then `size -A`;
// docs/operability.md, "Metrics endpoint", has the commands and more figures): with this filter
// the manager's .text is 19.1 MB and the file 55.5 MB, with controller-runtime's 28.3 MB (+48 %)
// and 87.3 MB (+57 %). The binary's code pages are part of the operator's resident set (make
// bench P3.rss-100: 49 MiB of the 125 MiB were file-backed pages of the binary), so that filter
// would cost memory on every installation for a feature of two API calls.
//
// Decisions are kept under a hash of the token, the verb and the path, so that a scraper does not
// cost the API server two reviews per scrape: an allowed one for metricsAuthAllowTTL (a scraper
// every 15 s costs two reviews a minute), a refusal (403) for metricsAuthDenyTTL, so a scraper
// whose role binding is missing is not reviewed on every scrape either, yet is served soon after
// the binding is added. A token the API server does not authenticate (401) is not kept: its key is
// whatever an unauthenticated client sends, so keeping it would let any client fill a cache, and
// saves nothing for a client that sends a new token each time. (The API server's delegating
// authenticator, which controller-runtime's filter uses, keeps failed authentications too.)
type metricsAuth struct {
	tokens authenticationclient.TokenReviewInterface
	access authorizationclient.SubjectAccessReviewInterface

	mu sync.Mutex
	// allowed and denied are the kept decisions. They are apart so that refusals cannot push
	// allowed decisions out.
	allowed map[[sha256.Size]byte]keptDecision
	denied  map[[sha256.Size]byte]keptDecision
	now     func() time.Time
}

// keptDecision is a SubjectAccessReview's answer, valid until until.
type keptDecision struct {
	until time.Time
	// user is the name the TokenReview returned, for the message of a refusal.
	user string
}

const (
	metricsAuthAllowTTL = time.Minute
	// metricsAuthDenyTTL is the API server's own for refusals of delegated authorization: the
	// DenyCacheTTL default of NewDelegatingAuthorizationOptions in k8s.io/apiserver
	// (pkg/server/options/authorization.go, v0.37.2), short so that a user granted access is
	// served soon. controller-runtime's filter keeps refusals for 30 s.
	metricsAuthDenyTTL = 10 * time.Second
	// metricsAuthMaxEntries bounds the allowed decisions kept, and the refusals kept (one per
	// scraper token).
	metricsAuthMaxEntries = 256
	metricsAuthTimeout    = 10 * time.Second
)

// metricsAuthFilter is the metrics server's FilterProvider.
func metricsAuthFilter(cfg *rest.Config, hc *http.Client) (metricsserver.Filter, error) {
	authn, err := authenticationclient.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("metrics authentication client: %w", err)
	}
	authz, err := authorizationclient.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("metrics authorization client: %w", err)
	}
	return newMetricsAuth(authn.TokenReviews(), authz.SubjectAccessReviews(), time.Now).filter, nil
}

func newMetricsAuth(tokens authenticationclient.TokenReviewInterface, access authorizationclient.SubjectAccessReviewInterface, now func() time.Time) *metricsAuth {
	return &metricsAuth{tokens: tokens, access: access, now: now,
		allowed: map[[sha256.Size]byte]keptDecision{}, denied: map[[sha256.Size]byte]keptDecision{}}
}

func (a *metricsAuth) filter(log logr.Logger, next http.Handler) (http.Handler, error) {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		code, msg, err := a.check(req)
		switch {
		case err != nil:
			log.Error(err, "Metrics request not reviewed", "path", req.URL.Path)
			http.Error(w, msg, code)
		case code != http.StatusOK:
			log.V(4).Info("Metrics request refused", "path", req.URL.Path, "status", code, "reason", msg)
			http.Error(w, msg, code)
		default:
			next.ServeHTTP(w, req)
		}
	}), nil
}

// check returns http.StatusOK when the request may be served, otherwise the status and message
// to answer (and the error of a failed review).
func (a *metricsAuth) check(req *http.Request) (int, string, error) {
	token, ok := bearerToken(req)
	if !ok {
		return http.StatusUnauthorized, "Unauthorized", nil
	}
	verb := strings.ToLower(req.Method)
	key := sha256.Sum256([]byte(verb + "\x00" + req.URL.Path + "\x00" + token))
	if code, msg, ok := a.kept(key); ok {
		return code, msg, nil
	}
	ctx, cancel := context.WithTimeout(req.Context(), metricsAuthTimeout)
	defer cancel()
	review, err := a.tokens.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return http.StatusInternalServerError, "Authentication failed", fmt.Errorf("token review: %w", err)
	}
	if !review.Status.Authenticated {
		return http.StatusUnauthorized, "Unauthorized", nil
	}
	user := review.Status.User
	extra := make(map[string]authorizationv1.ExtraValue, len(user.Extra))
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar, err := a.access.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra,
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: req.URL.Path, Verb: verb},
	}}, metav1.CreateOptions{})
	if err != nil {
		return http.StatusInternalServerError, fmt.Sprintf("Authorization for user %s failed", user.Username), fmt.Errorf("subject access review: %w", err)
	}
	if !sar.Status.Allowed || sar.Status.Denied {
		a.keep(a.denied, key, metricsAuthDenyTTL, user.Username)
		return http.StatusForbidden, deniedMessage(user.Username), nil
	}
	a.keep(a.allowed, key, metricsAuthAllowTTL, user.Username)
	return http.StatusOK, "", nil
}

func deniedMessage(user string) string {
	return fmt.Sprintf("Authorization denied for user %s", user)
}

// kept returns the answer of a kept, unexpired decision for key; expired ones are dropped.
func (a *metricsAuth) kept(key [sha256.Size]byte) (code int, msg string, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	if d, found := a.allowed[key]; found {
		if now.Before(d.until) {
			return http.StatusOK, "", true
		}
		delete(a.allowed, key)
	}
	if d, found := a.denied[key]; found {
		if now.Before(d.until) {
			return http.StatusForbidden, deniedMessage(d.user), true
		}
		delete(a.denied, key)
	}
	return 0, "", false
}

// keep records a decision in decisions (a.allowed or a.denied) for ttl. A full map starts over:
// at most metricsAuthMaxEntries decisions of each kind are kept.
func (a *metricsAuth) keep(decisions map[[sha256.Size]byte]keptDecision, key [sha256.Size]byte, ttl time.Duration, user string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(decisions) >= metricsAuthMaxEntries {
		clear(decisions)
	}
	decisions[key] = keptDecision{until: a.now().Add(ttl), user: user}
}

// bearerToken returns the token of an "Authorization: Bearer <token>" header.
func bearerToken(req *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(req.Header.Get("Authorization")), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}
