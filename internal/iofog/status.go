package iofog

import (
	"context"
	"fmt"
	"net/http"
)

// Status calls GET /status, the unauthenticated health endpoint. An
// "offline" status is returned as a successful answer.
func (c *Client) Status(ctx context.Context) (*ControllerStatus, error) {
	var st ControllerStatus
	if err := c.doJSON(ctx, call{method: http.MethodGet, url: c.endpoint("status")}, nil, &st); err != nil {
		return nil, fmt.Errorf("get controller status: %w", err)
	}
	if st.Status == "" {
		return nil, fmt.Errorf("get controller status: %w: empty status", ErrInvalidResponse)
	}
	return &st, nil
}
