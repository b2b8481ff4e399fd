package conversation

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"github.com/kubeopera/kubeopera-operator/internal/iofog"
)

// API is the part of the Controller REST API the operator uses. *iofog.Client implements it;
// tests substitute a client of the contract double (internal/iofog/fake).
type API interface {
	Status(ctx context.Context) (*iofog.ControllerStatus, error)
	Login(ctx context.Context, username, password string) (*iofog.Tokens, error)
	LoginClientCredentials(ctx context.Context, issuerURL, clientID, clientSecret string) (string, error)
	SetToken(token string)
	PutDefaultRouter(ctx context.Context, router iofog.Router) error
	UpsertNatsHub(ctx context.Context, hub iofog.NatsHub) error
	// GetDefaultRouter and GetNatsHub read a registration back (iofog.ErrNotFound: none).
	GetDefaultRouter(ctx context.Context) (*iofog.Router, error)
	GetNatsHub(ctx context.Context) (*iofog.NatsHub, error)
	NatsBootstrap(ctx context.Context) (*iofog.NatsBootstrap, error)
	// NatsOperator reads the NATS operator the Controller holds (GET /nats/operator).
	NatsOperator(ctx context.Context) (*iofog.NatsOperator, error)
	// NatsAccounts lists the Controller's NATS accounts (GET /nats/accounts).
	NatsAccounts(ctx context.Context) ([]iofog.NatsAccount, error)
	// GetCA reads the Controller's copy of a CA (certificate and private key).
	GetCA(ctx context.Context, name string) (*iofog.CAInfo, error)
	// ImportCA imports the CA of the Kubernetes Secret of that name (the Controller reads it).
	ImportCA(ctx context.Context, name string) error
	// DeleteCA removes a CA from the Controller; refused (iofog.ErrCAInUse) once it signed a
	// certificate.
	DeleteCA(ctx context.Context, name string) error
	// ListCertificates lists the Controller's certificates with the CA that signed each.
	ListCertificates(ctx context.Context) ([]iofog.Certificate, error)
	// DeleteCertificate deletes a certificate the Controller issued, releasing its CA.
	DeleteCertificate(ctx context.Context, name string) error
	// CloseIdleConnections releases the client's keep-alive connections at the end of a pass.
	CloseIdleConnections()
}

var _ API = (*iofog.Client)(nil)

// Endpoint says where one Controller API is and whom to trust for it.
type Endpoint struct {
	// BaseURL is scheme://host:port, without /api/v3: what the operator dials.
	BaseURL string
	// CAs is a PEM bundle trusted for this ControlPlane besides the system roots and
	// --controller-ca-file: the ca.crt of spec.controller.secretName and spec.controller.caSecretRef.
	CAs []byte
	// ServerNames, when set, are the names the certificate is verified against instead of the
	// host of BaseURL, one of which it must cover (the in-cluster call accepts the Service name
	// or the public host; the external check dials the LoadBalancer address and verifies the
	// public name).
	ServerNames []string
	// IdentityProviderCAs is a PEM bundle trusted for the external identity provider (its
	// discovery document and token endpoint) besides everything trusted for the Controller: the
	// key spec.auth.caSecretRef names. Empty: the provider gets the Controller's trust.
	IdentityProviderCAs []byte
}

// ClientFactory returns a client for one Controller endpoint. It does no I/O beyond reading the
// operator's CA file.
type ClientFactory func(Endpoint) (API, error)

// NewClientFactory is the production factory: iofog clients with the default timeout
// that trust the system roots, the PEM bundle in caFile (if any; read for each client, so a
// rotated bundle is picked up without a restart) and the endpoint's own CAs; the identity
// provider is trusted with all of that and the endpoint's IdentityProviderCAs. TLS verification
// is always on.
func NewClientFactory(caFile string) ClientFactory {
	return func(ep Endpoint) (API, error) {
		var opts []iofog.Option
		if caFile != "" || len(ep.CAs) > 0 {
			pool, err := controllerCertPool(caFile, ep.CAs)
			if err != nil {
				return nil, err
			}
			opts = append(opts, iofog.WithRootCAs(pool))
		}
		if len(ep.IdentityProviderCAs) > 0 {
			bundle := append(append(append([]byte(nil), ep.CAs...), '\n'), ep.IdentityProviderCAs...)
			pool, err := controllerCertPool(caFile, bundle)
			if err != nil {
				return nil, err
			}
			opts = append(opts, iofog.WithIdentityProviderRootCAs(pool))
		}
		if len(ep.ServerNames) > 0 {
			opts = append(opts, iofog.WithServerNames(ep.ServerNames...))
		}
		c, err := iofog.New(ep.BaseURL, opts...)
		if err != nil {
			return nil, fmt.Errorf("create controller client: %w", err)
		}
		return c, nil
	}
}

// controllerCertPool returns the system roots plus the certificates of caFile and of cas.
func controllerCertPool(caFile string, cas []byte) (*x509.CertPool, error) {
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if caFile != "" {
		pem, err := os.ReadFile(caFile) //nolint:gosec // The path is an operator flag, not user input.
		if err != nil {
			return nil, fmt.Errorf("read controller CA file: %w", err)
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, errors.New("read controller CA file: no PEM certificate found")
		}
	}
	if len(cas) > 0 && !pool.AppendCertsFromPEM(cas) {
		return nil, errors.New("controller CA bundle: no PEM certificate found")
	}
	return pool, nil
}
