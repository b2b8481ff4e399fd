package iofog

import (
	"context"
	"fmt"
	"net/http"
)

// UpsertNatsHub registers or updates the default NATS hub with
// PUT /nats/hub. The call is idempotent. Zero ports are left to the
// Controller's defaults.
func (c *Client) UpsertNatsHub(ctx context.Context, hub NatsHub) error {
	cl := call{method: http.MethodPut, url: c.endpoint("nats", "hub"), authorize: true}
	if err := c.doJSON(ctx, cl, hub, nil); err != nil {
		return fmt.Errorf("register NATS hub: %w", err)
	}
	return nil
}

// GetNatsHub reads the default NATS hub's registration back with GET /nats/hub: host and the
// five ports, with the Controller's defaults applied (the JetStream sizes are not echoed). A
// Controller that holds none answers 404 (ErrNotFound).
func (c *Client) GetNatsHub(ctx context.Context) (*NatsHub, error) {
	cl := call{method: http.MethodGet, url: c.endpoint("nats", "hub"), authorize: true}
	var h NatsHub
	if err := c.doJSON(ctx, cl, nil, &h); err != nil {
		return nil, fmt.Errorf("get NATS hub: %w", err)
	}
	return &h, nil
}

// NatsBootstrap fetches the NATS operator and system account material with
// GET /nats/bootstrap. The Controller answers 403 when it does not run as
// the Kubernetes control plane and 404 (ErrNotFound) when one of its secrets
// is missing. An answer with an empty field wraps ErrInvalidResponse.
func (c *Client) NatsBootstrap(ctx context.Context) (*NatsBootstrap, error) {
	cl := call{method: http.MethodGet, url: c.endpoint("nats", "bootstrap"), authorize: true}
	var b NatsBootstrap
	if err := c.doJSON(ctx, cl, nil, &b); err != nil {
		return nil, fmt.Errorf("get NATS bootstrap: %w", err)
	}
	fields := []struct{ name, value string }{
		{"operatorJwt", b.OperatorJwt},
		{"operatorPublicKey", b.OperatorPublicKey},
		{"operatorSeed", b.OperatorSeed},
		{"systemAccountJwt", b.SystemAccountJwt},
		{"systemAccountPublicKey", b.SystemAccountPublicKey},
		{"sysUserCredsBase64", b.SysUserCredsBase64},
	}
	for _, f := range fields {
		if f.value == "" {
			return nil, fmt.Errorf("get NATS bootstrap: %w: empty %s", ErrInvalidResponse, f.name)
		}
	}
	return &b, nil
}

// NatsAccounts lists the Controller's NATS accounts with GET /nats/accounts (every role may
// list them). An account without a public key or JWT wraps ErrInvalidResponse.
func (c *Client) NatsAccounts(ctx context.Context) ([]NatsAccount, error) {
	cl := call{method: http.MethodGet, url: c.endpoint("nats", "accounts"), authorize: true}
	var body struct {
		Accounts []NatsAccount `json:"accounts"`
	}
	if err := c.doJSON(ctx, cl, nil, &body); err != nil {
		return nil, fmt.Errorf("list NATS accounts: %w", err)
	}
	if body.Accounts == nil {
		return nil, fmt.Errorf("list NATS accounts: %w: no accounts list", ErrInvalidResponse)
	}
	for i, a := range body.Accounts {
		if a.PublicKey == "" || a.JWT == "" {
			return nil, fmt.Errorf("list NATS accounts: %w: account %d (%q) has no public key or JWT", ErrInvalidResponse, i, a.Name)
		}
	}
	return body.Accounts, nil
}

// NatsOperator reads the NATS operator the Controller holds with GET /nats/operator: its name,
// public key and JWT. The Controller creates one when its database has none, so the answer
// changes after the database is lost, and after POST /nats/operator/rotate. An answer without a
// public key or JWT wraps ErrInvalidResponse.
func (c *Client) NatsOperator(ctx context.Context) (*NatsOperator, error) {
	cl := call{method: http.MethodGet, url: c.endpoint("nats", "operator"), authorize: true}
	var o NatsOperator
	if err := c.doJSON(ctx, cl, nil, &o); err != nil {
		return nil, fmt.Errorf("get NATS operator: %w", err)
	}
	if o.PublicKey == "" || o.JWT == "" {
		return nil, fmt.Errorf("get NATS operator: %w: no public key or JWT", ErrInvalidResponse)
	}
	return &o, nil
}
