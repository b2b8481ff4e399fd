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
	if err := checkName("CA", name); err != nil {
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

// ImportCA imports the CA of the Kubernetes Secret name (tls.crt and tls.key, in
// the Controller's namespace) under the same name: POST /certificates/ca of type
// k8s-secret. A CA of that name already in the Controller is an error matching
// ErrConflict.
func (c *Client) ImportCA(ctx context.Context, name string) error {
	return c.CreateCA(ctx, CARequest{Name: name, Type: CATypeK8sSecret, SecretName: name})
}

// DeleteCA removes a CA from the Controller's catalog with
// DELETE /certificates/ca/{name}. A missing CA is an error matching
// ErrNotFound. A CA the Controller has signed certificates with (an agent's
// router or NATS certificate) is refused with an error matching ErrCAInUse.
func (c *Client) DeleteCA(ctx context.Context, name string) error {
	if err := checkName("CA", name); err != nil {
		return fmt.Errorf("delete CA: %w", err)
	}
	cl := call{method: http.MethodDelete, url: c.endpoint("certificates", "ca", name), authorize: true}
	if err := c.doJSON(ctx, cl, nil, nil); err != nil {
		var apiErr *APIError
		if errors.As(err, &apiErr) && apiErr.Name == validationErrorName {
			return fmt.Errorf("delete CA %q: %w: %w", name, ErrCAInUse, err)
		}
		return fmt.Errorf("delete CA %q: %w", name, err)
	}
	return nil
}

// checkName rejects a CA or certificate name that cannot be one path segment.
func checkName(kind, name string) error {
	if name == "" || name == "." || name == ".." {
		return fmt.Errorf("invalid %s name %q", kind, name)
	}
	return nil
}

// ListCertificates lists the certificates and CAs the Controller holds with GET /certificates,
// each with the CA that signed it (CAName, empty for a CA or a self-signed certificate). An
// answer without a list, or an entry without a name, wraps ErrInvalidResponse.
func (c *Client) ListCertificates(ctx context.Context) ([]Certificate, error) {
	cl := call{method: http.MethodGet, url: c.endpoint("certificates"), authorize: true}
	var body struct {
		Certificates []Certificate `json:"certificates"`
	}
	if err := c.doJSON(ctx, cl, nil, &body); err != nil {
		return nil, fmt.Errorf("list certificates: %w", err)
	}
	if body.Certificates == nil {
		return nil, fmt.Errorf("list certificates: %w: no certificates list", ErrInvalidResponse)
	}
	for i, cert := range body.Certificates {
		if cert.Name == "" {
			return nil, fmt.Errorf("list certificates: %w: entry %d has no name", ErrInvalidResponse, i)
		}
	}
	return body.Certificates, nil
}

// DeleteCertificate deletes a certificate the Controller issued with
// DELETE /certificates/{name}, which releases the CA that signed it. A missing certificate is an
// error matching ErrNotFound.
func (c *Client) DeleteCertificate(ctx context.Context, name string) error {
	if err := checkName("certificate", name); err != nil {
		return fmt.Errorf("delete certificate: %w", err)
	}
	cl := call{method: http.MethodDelete, url: c.endpoint("certificates", name), authorize: true}
	if err := c.doJSON(ctx, cl, nil, nil); err != nil {
		return fmt.Errorf("delete certificate %q: %w", name, err)
	}
	return nil
}
