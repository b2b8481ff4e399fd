package controllers

import (
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
// authenticated. An allowed decision is kept for a minute; refusals are asked again each time.
func TestMetricsAuthReviewsEachScrapeAndKeepsOnlyAllowedDecisions(t *testing.T) {
	g := NewWithT(t)
	cs := fake.NewClientset()
	reviews := map[string]int{}
	cs.PrependReactor("create", "tokenreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
		reviews["token"]++
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
		reviews["access"]++
		sar := action.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		attrs := sar.Spec.NonResourceAttributes
		sar.Status.Allowed = sar.Spec.User == "reader" && sar.Spec.Groups[0] == "g" && attrs != nil && attrs.Path == "/metrics" && attrs.Verb == "get"
		return true, sar, nil
	})
	now := time.Unix(0, 0)
	a := &metricsAuth{tokens: cs.AuthenticationV1().TokenReviews(), access: cs.AuthorizationV1().SubjectAccessReviews(),
		allowed: map[[32]byte]time.Time{}, now: func() time.Time { return now }}
	h, err := a.filter(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("metrics")) }))
	g.Expect(err).NotTo(HaveOccurred())
	scrape := func(path, auth string) int {
		req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}

	g.Expect(scrape("/metrics", "")).To(Equal(http.StatusUnauthorized))
	g.Expect(scrape("/metrics", "Basic Z29vZA==")).To(Equal(http.StatusUnauthorized))
	g.Expect(scrape("/metrics", "Bearer ")).To(Equal(http.StatusUnauthorized))
	g.Expect(reviews).To(BeEmpty(), "a request without a bearer token is refused without asking")

	g.Expect(scrape("/metrics", "Bearer nobody")).To(Equal(http.StatusUnauthorized))
	g.Expect(scrape("/metrics", "Bearer other")).To(Equal(http.StatusForbidden))
	g.Expect(scrape("/metrics", "Bearer other")).To(Equal(http.StatusForbidden))
	g.Expect(reviews).To(Equal(map[string]int{"token": 3, "access": 2}), "refusals are asked again")

	g.Expect(scrape("/metrics", "bearer good")).To(Equal(http.StatusOK))
	g.Expect(scrape("/metrics", "Bearer good")).To(Equal(http.StatusOK))
	g.Expect(reviews).To(Equal(map[string]int{"token": 4, "access": 3}), "an allowed decision is kept")
	g.Expect(scrape("/debug/other", "Bearer good")).To(Equal(http.StatusForbidden), "the decision is per path")

	now = now.Add(metricsAuthAllowTTL)
	g.Expect(scrape("/metrics", "Bearer good")).To(Equal(http.StatusOK))
	g.Expect(reviews).To(Equal(map[string]int{"token": 6, "access": 5}), "a kept decision expires")
}
