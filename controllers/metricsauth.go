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
// libraries, a third of the binary's code (text 28 MB against 19 MB without it, go1.26). The
// binary's code pages are part of the operator's resident set (make bench P3.rss-100: 49 MiB of
// the 125 MiB were file-backed pages of the binary), so the filter cost memory on every
// installation for a feature of two API calls (docs/operability.md, "Metrics").
//
// An allowed decision is kept for metricsAuthAllowTTL under a hash of the token, the verb and the
// path, so a scraper every 15 s costs the API server two reviews a minute; refusals are not kept.
type metricsAuth struct {
	tokens authenticationclient.TokenReviewInterface
	access authorizationclient.SubjectAccessReviewInterface

	mu      sync.Mutex
	allowed map[[sha256.Size]byte]time.Time
	now     func() time.Time
}

const (
	metricsAuthAllowTTL = time.Minute
	// metricsAuthMaxEntries bounds the allowed decisions kept (one per scraper token).
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
	a := &metricsAuth{tokens: authn.TokenReviews(), access: authz.SubjectAccessReviews(),
		allowed: map[[sha256.Size]byte]time.Time{}, now: time.Now}
	return a.filter, nil
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
	if a.isAllowed(key) {
		return http.StatusOK, "", nil
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
		return http.StatusForbidden, fmt.Sprintf("Authorization denied for user %s", user.Username), nil
	}
	a.allow(key)
	return http.StatusOK, "", nil
}

func (a *metricsAuth) isAllowed(key [sha256.Size]byte) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	until, ok := a.allowed[key]
	if ok && a.now().Before(until) {
		return true
	}
	delete(a.allowed, key)
	return false
}

func (a *metricsAuth) allow(key [sha256.Size]byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.allowed) >= metricsAuthMaxEntries {
		clear(a.allowed)
	}
	a.allowed[key] = a.now().Add(metricsAuthAllowTTL)
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
