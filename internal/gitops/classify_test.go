package gitops

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	. "github.com/onsi/gomega"
)

// A Git host's refusal keeps its status and never its body (a proxy's error page, an internal
// endpoint's answer): 401 is refused credentials, 403 a refusal that says nothing certain about
// them (ErrForbidden, not ErrAuthFailed), 404 a missing repository, any other status just that.
func TestRefusalsKeepTheStatusNotTheBody(t *testing.T) {
	const body = "upstream 10.0.7.12:8443 said: internal-s3cret-page"
	w := newTestWriter(t)
	for _, tc := range []struct {
		code          int
		is, isNot     error
		wantInMessage string
	}{
		{http.StatusUnauthorized, ErrAuthFailed, ErrForbidden, "authentication required"},
		{http.StatusForbidden, ErrForbidden, ErrAuthFailed, "HTTP 403"},
		{http.StatusNotFound, ErrRepositoryNotFound, ErrAuthFailed, "repository not found"},
		{http.StatusBadGateway, nil, ErrAuthFailed, "HTTP 502 Bad Gateway"},
	} {
		t.Run(http.StatusText(tc.code), func(t *testing.T) {
			g := NewWithT(t)
			srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
				http.Error(rw, body, tc.code)
			}))
			t.Cleanup(srv.Close)
			repo := Repo{URL: srv.URL + "/apps.git", Branch: "main"}

			_, err := w.Apply(context.Background(), repo, appChange("web", map[string]string{"a.yaml": "1"}))

			g.Expect(err).To(HaveOccurred())
			if tc.is != nil {
				g.Expect(err).To(MatchError(tc.is))
			}
			g.Expect(err).NotTo(MatchError(tc.isNot))
			g.Expect(err.Error()).To(ContainSubstring(tc.wantInMessage))
			g.Expect(err.Error()).NotTo(ContainSubstring("internal-s3cret-page"))
			t.Log(err)
		})
	}
}
