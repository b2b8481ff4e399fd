package controllers

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// The metrics filter's decisions, against a fake API that counts the reviews: the user "reader"
// (token "good") may get /metrics, "stranger" (token "other") may not, any other token is not
// authenticated. An allowed decision is kept for a minute, a refusal for ten seconds; a token the
// API server does not authenticate is asked about again each time.
func TestMetricsAuthReviewsEachScrapeAndKeepsDecisions(t *testing.T) {
	g := NewWithT(t)
	f := newFakeReviews(t)
	g.Expect(f.scrape("/metrics", "")).To(Equal(http.StatusUnauthorized))
	g.Expect(f.scrape("/metrics", "Basic Z29vZA==")).To(Equal(http.StatusUnauthorized))
	g.Expect(f.scrape("/metrics", "Bearer ")).To(Equal(http.StatusUnauthorized))
	g.Expect(f.reviews).To(BeEmpty(), "a request without a bearer token is refused without asking")

	g.Expect(f.scrape("/metrics", "Bearer nobody")).To(Equal(http.StatusUnauthorized))
	g.Expect(f.scrape("/metrics", "Bearer nobody")).To(Equal(http.StatusUnauthorized))
	g.Expect(f.reviews).To(Equal(map[string]int{"token": 2}), "an unauthenticated token is asked about again")

	g.Expect(f.scrape("/metrics", "bearer good")).To(Equal(http.StatusOK))
	g.Expect(f.scrape("/metrics", "Bearer good")).To(Equal(http.StatusOK))
	g.Expect(f.reviews).To(Equal(map[string]int{"token": 3, "access": 1}), "an allowed decision is kept")
	g.Expect(f.scrape("/debug/other", "Bearer good")).To(Equal(http.StatusForbidden), "the decision is per path")

	f.now = f.now.Add(metricsAuthAllowTTL)
	g.Expect(f.scrape("/metrics", "Bearer good")).To(Equal(http.StatusOK))
	g.Expect(f.reviews).To(Equal(map[string]int{"token": 5, "access": 3}), "a kept decision expires")
}

// A refusal is kept for metricsAuthDenyTTL, as the API server keeps those of delegated
// authorization: a scraper without the role costs one review per interval, not one per scrape,
// and answers the same while it is kept.
func TestMetricsAuthKeepsRefusalsForTheDenyTTL(t *testing.T) {
	g := NewWithT(t)
	f := newFakeReviews(t)
	g.Expect(f.scrape("/metrics", "Bearer other")).To(Equal(http.StatusForbidden))
	g.Expect(f.body).To(ContainSubstring("Authorization denied for user stranger"))
	f.now = f.now.Add(metricsAuthDenyTTL - time.Millisecond)
	g.Expect(f.scrape("/metrics", "Bearer other")).To(Equal(http.StatusForbidden))
	g.Expect(f.body).To(ContainSubstring("Authorization denied for user stranger"), "a kept refusal answers the same")
	g.Expect(f.reviews).To(Equal(map[string]int{"token": 1, "access": 1}), "two refused scrapes within the TTL make one review")

	f.now = f.now.Add(time.Millisecond)
	g.Expect(f.scrape("/metrics", "Bearer other")).To(Equal(http.StatusForbidden))
	g.Expect(f.reviews).To(Equal(map[string]int{"token": 2, "access": 2}), "after the TTL the refusal is asked again")

	// The refusals kept are bounded like the allowed decisions, and apart from them.
	g.Expect(f.scrape("/metrics", "Bearer good")).To(Equal(http.StatusOK))
	for i := range metricsAuthMaxEntries + 1 {
		g.Expect(f.scrape(fmt.Sprintf("/denied/%d", i), "Bearer other")).To(Equal(http.StatusForbidden))
	}
	g.Expect(len(f.auth.denied)).To(BeNumerically("<=", metricsAuthMaxEntries))
	before := f.reviews["access"]
	g.Expect(f.scrape("/metrics", "Bearer good")).To(Equal(http.StatusOK))
	g.Expect(f.reviews["access"]).To(Equal(before), "refusals do not push an allowed decision out")
}

// fakeReviews serves the metrics filter against a fake API server that counts the reviews.
type fakeReviews struct {
	t       *testing.T
	auth    *metricsAuth
	handler http.Handler
	reviews map[string]int
	now     time.Time
	// body is the last answer's body.
	body string
}

func newFakeReviews(t *testing.T) *fakeReviews {
	f := &fakeReviews{t: t, reviews: map[string]int{}, now: time.Unix(0, 0)}
	cs := fake.NewClientset()
	cs.PrependReactor("create", "tokenreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
		f.reviews["token"]++
		tr := action.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview)
		switch tr.Spec.Token {
		case "good":
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "reader", Groups: []string{"g"}}}
		case "other":
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "stranger"}}
		}
		return true, tr, nil
	})
	cs.PrependReactor("create", "subjectaccessreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
		f.reviews["access"]++
		sar := action.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		attrs := sar.Spec.NonResourceAttributes
		sar.Status.Allowed = sar.Spec.User == "reader" && sar.Spec.Groups[0] == "g" && attrs != nil && attrs.Path == "/metrics" && attrs.Verb == "get"
		return true, sar, nil
	})
	f.auth = newMetricsAuth(cs.AuthenticationV1().TokenReviews(), cs.AuthorizationV1().SubjectAccessReviews(), func() time.Time { return f.now })
	h, err := f.auth.filter(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("metrics")) }))
	if err != nil {
		t.Fatal(err)
	}
	f.handler = h
	return f
}

// scrape sends GET path with the Authorization header auth (none when empty) and returns the
// status.
func (f *fakeReviews) scrape(path, auth string) int {
	req := httptest.NewRequestWithContext(f.t.Context(), http.MethodGet, path, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	f.handler.ServeHTTP(rec, req)
	f.body = rec.Body.String()
	return rec.Code
}
