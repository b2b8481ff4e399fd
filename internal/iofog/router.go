package iofog

import (
	"context"
	"fmt"
	"net/http"
)

// PutDefaultRouter registers or updates the default router with PUT /router.
// The call is idempotent. Zero ports are left to the Controller's defaults.
func (c *Client) PutDefaultRouter(ctx context.Context, router Router) error {
	cl := call{method: http.MethodPut, url: c.endpoint("router"), authorize: true}
	if err := c.doJSON(ctx, cl, router, nil); err != nil {
		return fmt.Errorf("register default router: %w", err)
	}
	return nil
}

// GetDefaultRouter reads the default router's registration back with GET /router: host and
// the three ports, with the Controller's defaults applied. A Controller that holds none
// answers 404 (ErrNotFound).
func (c *Client) GetDefaultRouter(ctx context.Context) (*Router, error) {
	cl := call{method: http.MethodGet, url: c.endpoint("router"), authorize: true}
	var r Router
	if err := c.doJSON(ctx, cl, nil, &r); err != nil {
		return nil, fmt.Errorf("get default router: %w", err)
	}
	return &r, nil
}
