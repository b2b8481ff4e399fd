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
