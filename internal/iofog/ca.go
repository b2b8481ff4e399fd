package iofog

import (
	"context"
	"errors"
	"fmt"
	"net/http"
)

// GetCA fetches a CA with GET /certificates/ca/{name}. A missing CA is an
// error matching ErrNotFound.
func (c *Client) GetCA(ctx context.Context, name string) (*CAInfo, error) {
	if err := checkCAName(name); err != nil {
		return nil, fmt.Errorf("get CA: %w", err)
	}
	cl := call{method: http.MethodGet, url: c.endpoint("certificates", "ca", name), authorize: true}
	var info CAInfo
	if err := c.doJSON(ctx, cl, nil, &info); err != nil {
		return nil, fmt.Errorf("get CA %q: %w", name, err)
	}
	return &info, nil
}

// CreateCA creates or imports a CA with POST /certificates/ca. It is not
// idempotent: a second call for the same name fails with an error matching
// ErrConflict (HTTP 500 ConflictError on Controller 3.7.x, 409 elsewhere).
func (c *Client) CreateCA(ctx context.Context, req CARequest) error {
	cl := call{method: http.MethodPost, url: c.endpoint("certificates", "ca"), authorize: true}
	if err := c.doJSON(ctx, cl, req, nil); err != nil {
		return fmt.Errorf("create CA %q: %w", req.Name, err)
	}
	return nil
}

// EnsureCA makes sure the Controller has a CA called name, importing it from
// the Kubernetes Secret secretName (in the Controller's namespace) when the
// lookup answers 404. created reports whether this call imported it. A
// duplicate answer to the import (a concurrent import won) counts as already
// imported. Existing CAs are never re-imported or refreshed.
func (c *Client) EnsureCA(ctx context.Context, name, secretName string) (created bool, err error) {
	_, err = c.GetCA(ctx, name)
	switch {
	case err == nil:
		return false, nil
	case !errors.Is(err, ErrNotFound):
		return false, err
	}

	err = c.CreateCA(ctx, CARequest{Name: name, Type: CATypeK8sSecret, SecretName: secretName})
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrConflict):
		return false, nil
	default:
		return false, err
	}
}

// DeleteCA removes a CA from the Controller's catalog with
// DELETE /certificates/ca/{name}. A missing CA is an error matching
// ErrNotFound.
func (c *Client) DeleteCA(ctx context.Context, name string) error {
	if err := checkCAName(name); err != nil {
		return fmt.Errorf("delete CA: %w", err)
	}
	cl := call{method: http.MethodDelete, url: c.endpoint("certificates", "ca", name), authorize: true}
	if err := c.doJSON(ctx, cl, nil, nil); err != nil {
		return fmt.Errorf("delete CA %q: %w", name, err)
	}
	return nil
}

// ReimportCA replaces the Controller's copy of CA name with the current
// content of the Kubernetes Secret secretName: DELETE /certificates/ca/{name}
// (a CA already gone is fine), then the import POST. The Controller has no
// update route for a CA, and a second POST for an existing name is a
// conflict, so a rotated CA needs both calls.
func (c *Client) ReimportCA(ctx context.Context, name, secretName string) error {
	if err := c.DeleteCA(ctx, name); err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	return c.CreateCA(ctx, CARequest{Name: name, Type: CATypeK8sSecret, SecretName: secretName})
}

// checkCAName rejects names that cannot be one path segment.
func checkCAName(name string) error {
	if name == "" || name == "." || name == ".." {
		return fmt.Errorf("invalid CA name %q", name)
	}
	return nil
}
