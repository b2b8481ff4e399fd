package iofog_test

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/kubeopera/kubeopera-operator/internal/iofog"
	"github.com/kubeopera/kubeopera-operator/internal/iofog/fake"
)

// newFake starts a fake Controller that is closed when the test ends.
func newFake(t *testing.T, opts ...fake.Option) *fake.Server {
	t.Helper()
	srv := fake.NewServer(opts...)
	t.Cleanup(srv.Close)
	return srv
}

// newClient returns a client for srv without a token.
func newClient(t *testing.T, srv *fake.Server, opts ...iofog.Option) *iofog.Client {
	t.Helper()
	c, err := iofog.New(srv.URL(), opts...)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return c
}

// loggedIn returns a client holding a token srv issued, and the token.
func loggedIn(t *testing.T, srv *fake.Server, opts ...iofog.Option) (*iofog.Client, string) {
	t.Helper()
	c := newClient(t, srv, opts...)
	token := srv.IssueToken()
	c.SetToken(token)
	return c, token
}

// apiError extracts the *iofog.APIError from err, failing the test if
// there is none.
func apiError(g Gomega, err error) *iofog.APIError {
	var apiErr *iofog.APIError
	g.ExpectWithOffset(1, errors.As(err, &apiErr)).To(BeTrue(), "want *iofog.APIError in %v", err)
	return apiErr
}
