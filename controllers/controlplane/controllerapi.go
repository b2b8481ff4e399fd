package controlplane

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/internal/iofog"
)

// ControllerAPI is the part of the Controller REST API the reconciler uses. *iofog.Client
// implements it; tests inject clients of the fake Controller through ControllerClientFactory.
type ControllerAPI interface {
	Status(ctx context.Context) (*iofog.ControllerStatus, error)
	Login(ctx context.Context, username, password string) (*iofog.Tokens, error)
	LoginClientCredentials(ctx context.Context, issuerURL, clientID, clientSecret string) (string, error)
	SetToken(token string)
	PutDefaultRouter(ctx context.Context, router iofog.Router) error
	UpsertNatsHub(ctx context.Context, hub iofog.NatsHub) error
	NatsBootstrap(ctx context.Context) (*iofog.NatsBootstrap, error)
	EnsureCA(ctx context.Context, name, secretName string) (created bool, err error)
}

var _ ControllerAPI = (*iofog.Client)(nil)

// ControllerClientFactory returns a client for the Controller API at baseURL
// (scheme://host:port, without /api/v3). It does no I/O.
type ControllerClientFactory func(baseURL string) (ControllerAPI, error)

// NewControllerClientFactory is the production factory: iofog clients with the default timeout
// that trust the system roots plus the PEM bundle in caFile (if any). The file is read for each
// client, so a rotated bundle is picked up without a restart.
func NewControllerClientFactory(caFile string) ControllerClientFactory {
	return func(baseURL string) (ControllerAPI, error) {
		var opts []iofog.Option
		if caFile != "" {
			pool, err := certPoolWithFile(caFile)
			if err != nil {
				return nil, err
			}
			opts = append(opts, iofog.WithRootCAs(pool))
		}
		c, err := iofog.New(baseURL, opts...)
		if err != nil {
			return nil, fmt.Errorf("create controller client: %w", err)
		}
		return c, nil
	}
}

// certPoolWithFile returns the system roots plus the certificates of a PEM file.
func certPoolWithFile(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path) //nolint:gosec // The path is an operator flag, not user input.
	if err != nil {
		return nil, fmt.Errorf("read controller CA file: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("read controller CA file: no PEM certificate found")
	}
	return pool, nil
}

// controllerScheme is https when the Controller pod serves TLS (spec.controller.https).
func controllerScheme(spec *datasancev3.ControlPlaneSpec) string {
	if spec.ControllerHTTPS() {
		return "https"
	}
	return "http"
}

// internalControllerURL is where the operator reaches a ControlPlane's Controller API: the
// endpoint template (default controller.{namespace}.svc.cluster.local:51121) with {namespace}
// and {name} replaced, and the scheme of spec.controller.https. It never uses the public URL.
func internalControllerURL(template string, cp *datasancev3.ControlPlane) string {
	if template == "" {
		template = DefaultControllerEndpointTemplate
	}
	host := strings.NewReplacer("{namespace}", cp.Namespace, "{name}", cp.Name).Replace(template)
	return controllerScheme(&cp.Spec) + "://" + host
}
