package iofog

import (
	"encoding/base64"
	"fmt"
	"time"
)

// StatusOnline is the ControllerStatus.Status value of a serving Controller.
const StatusOnline = "online"

// ControllerStatus is the body of GET /status.
type ControllerStatus struct {
	// Status is "online" or "offline". Both count as a successful call.
	Status string `json:"status"`
	// Timestamp is the Controller's clock in epoch milliseconds.
	Timestamp int64 `json:"timestamp"`
	// UptimeSec is the Controller process uptime in seconds.
	UptimeSec float64 `json:"uptimeSec"`
	// Versions holds the component versions.
	Versions ControllerVersions `json:"versions"`
}

// ControllerVersions is the "versions" object of ControllerStatus.
type ControllerVersions struct {
	// Controller is the Controller version, e.g. "3.7.3".
	Controller string `json:"controller"`
	// EcnViewer is the bundled console version.
	EcnViewer string `json:"ecnViewer"`
}

// Tokens is the body of a successful POST /user/login. Both values are
// credentials: never log them.
type Tokens struct {
	// AccessToken is sent as "Authorization: Bearer <AccessToken>".
	AccessToken string `json:"accessToken"`
	// RefreshToken can be exchanged at POST /user/refresh.
	RefreshToken string `json:"refreshToken"`
}

// Router is the body of PUT /router, the default router registration.
//
// A zero port is omitted from the request, and the Controller then applies
// its default (5671, 45671, 55671). Sending 0 explicitly would fail the
// Controller's schema (ports are integers 1-65535).
type Router struct {
	// Host is the address agents use to reach the router. Required.
	Host string `json:"host"`
	// MessagingPort is the AMQP port (default 5671).
	MessagingPort int `json:"messagingPort,omitempty"`
	// EdgeRouterPort is the edge-router port (default 45671).
	EdgeRouterPort int `json:"edgeRouterPort,omitempty"`
	// InterRouterPort is the inter-router port (default 55671).
	InterRouterPort int `json:"interRouterPort,omitempty"`
}

// NatsHub is the body of PUT /nats/hub, the default NATS hub registration.
// Zero ports are omitted and defaulted by the Controller (4222, 6222, 7422,
// 8883, 8222), for the same reason as in Router.
type NatsHub struct {
	// Host is the address leaf nodes use to reach the hub. Required.
	Host string `json:"host"`
	// ServerPort is the client port (default 4222).
	ServerPort int `json:"serverPort,omitempty"`
	// ClusterPort is the cluster route port (default 6222).
	ClusterPort int `json:"clusterPort,omitempty"`
	// LeafPort is the leaf-node port (default 7422).
	LeafPort int `json:"leafPort,omitempty"`
	// MqttPort is the MQTT port (default 8883).
	MqttPort int `json:"mqttPort,omitempty"`
	// HTTPPort is the monitoring port (default 8222).
	HTTPPort int `json:"httpPort,omitempty"`
	// JsStorageSize is the JetStream file store size, e.g. "10G".
	JsStorageSize string `json:"jsStorageSize,omitempty"`
	// JsMemoryStoreSize is the JetStream memory store size, e.g. "1G".
	JsMemoryStoreSize string `json:"jsMemoryStoreSize,omitempty"`
}

// NatsBootstrap is the body of GET /nats/bootstrap: the NATS operator and
// system account material the Controller generated. OperatorSeed and the
// creds are secrets: never log them.
type NatsBootstrap struct {
	// OperatorJwt is the operator JWT.
	OperatorJwt string `json:"operatorJwt"`
	// OperatorPublicKey is the operator nkey public key (O...).
	OperatorPublicKey string `json:"operatorPublicKey"`
	// OperatorSeed is the operator nkey seed (SO...).
	OperatorSeed string `json:"operatorSeed"`
	// SystemAccountJwt is the system account JWT.
	SystemAccountJwt string `json:"systemAccountJwt"`
	// SystemAccountPublicKey is the system account public key (A...).
	SystemAccountPublicKey string `json:"systemAccountPublicKey"`
	// SysUserCredsBase64 is the hub system user's .creds file, base64
	// (standard, padded). Use SysUserCreds to decode it.
	SysUserCredsBase64 string `json:"sysUserCredsBase64"`
}

// NatsOperator is the answer of GET /nats/operator and POST /nats/operator/rotate: the NATS
// operator the Controller holds (Datasance/Controller src/services/nats-api-service.js,
// getOperator).
type NatsOperator struct {
	// Name is the operator's name ("<app name>-operator").
	Name string `json:"name"`
	// PublicKey is the operator nkey public key (O...).
	PublicKey string `json:"publicKey"`
	// JWT is the self-signed operator JWT.
	JWT string `json:"jwt"`
}

// NatsAccount is one entry of GET /nats/accounts: an account the Controller created (the system
// account, a leaf node's system account, or an application's account) with its JWT.
type NatsAccount struct {
	// ID is the Controller's record id.
	ID int `json:"id"`
	// Name is the account name: "SYS" (or the Controller's system account name), a leaf
	// system account's name, or the application's name.
	Name string `json:"name"`
	// PublicKey is the account nkey public key (A...); the JWT bundle key is <PublicKey>.jwt.
	PublicKey string `json:"publicKey"`
	// JWT is the account JWT signed by the NATS operator.
	JWT string `json:"jwt"`
	// IsSystem marks the hub's system account.
	IsSystem bool `json:"isSystem"`
	// IsLeafSystem marks the system account of one leaf node (an agent's NATS server).
	IsLeafSystem bool `json:"isLeafSystem"`
	// ApplicationID is the application of an application account, nil otherwise.
	ApplicationID *int `json:"applicationId"`
}

// InHubBundle reports whether the Controller puts the account into the hub's JWT bundle: the
// system account and every application account; a leaf node's system account belongs to that
// leaf's own bundle.
func (a NatsAccount) InHubBundle() bool {
	return a.IsSystem || (!a.IsLeafSystem && a.ApplicationID != nil)
}

// SysUserCreds returns the decoded .creds file of the hub system user.
func (b *NatsBootstrap) SysUserCreds() ([]byte, error) {
	creds, err := base64.StdEncoding.DecodeString(b.SysUserCredsBase64)
	if err != nil {
		return nil, fmt.Errorf("decode sysUserCredsBase64: %w: %w", ErrInvalidResponse, err)
	}
	return creds, nil
}

// CAInfo is the body of GET /certificates/ca/{name}. Data.PrivateKey is the
// CA private key: never log it.
type CAInfo struct {
	// Name is the CA name.
	Name string `json:"name"`
	// Subject is the certificate's common name.
	Subject string `json:"subject"`
	// IsCA is true for CA records.
	IsCA bool `json:"isCA"`
	// ValidFrom is the start of the validity period.
	ValidFrom time.Time `json:"validFrom"`
	// ValidTo is the end of the validity period.
	ValidTo time.Time `json:"validTo"`
	// SerialNumber is the certificate serial number in hex.
	SerialNumber string `json:"serialNumber"`
	// Data holds the PEM material.
	Data CAData `json:"data"`
}

// CAData is the PEM material of a CA.
type CAData struct {
	// Certificate is the PEM-encoded certificate.
	Certificate string `json:"certificate"`
	// PrivateKey is the PEM-encoded private key.
	PrivateKey string `json:"privateKey"`
}

// Certificate is one entry of GET /certificates (the Controller's listCertificatesEndpoint).
type Certificate struct {
	// Name is the certificate's name (its Secret in the Controller).
	Name string `json:"name"`
	// Subject is the certificate's common name.
	Subject string `json:"subject"`
	// IsCA is true for CA records.
	IsCA bool `json:"isCA"`
	// CAName is the CA that signed it; empty for a CA or a self-signed certificate.
	CAName string `json:"caName"`
}

// CA types accepted by POST /certificates/ca.
const (
	// CATypeK8sSecret imports a CA from a Kubernetes Secret (tls.crt,
	// tls.key) in the Controller's namespace.
	CATypeK8sSecret = "k8s-secret"
	// CATypeDirect imports a CA from a Controller-internal secret.
	CATypeDirect = "direct"
	// CATypeSelfSigned makes the Controller generate a CA.
	CATypeSelfSigned = "self-signed"
)

// CARequest is the body of POST /certificates/ca. The Controller rejects
// unknown fields and an empty subject, hence omitempty everywhere.
type CARequest struct {
	// Name is the CA name, 1-255 characters. Required.
	Name string `json:"name,omitempty"`
	// Type is one of the CAType constants. Required.
	Type string `json:"type,omitempty"`
	// SecretName names the source secret; required for k8s-secret and direct.
	SecretName string `json:"secretName,omitempty"`
	// Subject is the common name of a self-signed CA.
	Subject string `json:"subject,omitempty"`
	// Expiration is the validity of a self-signed CA (months when below
	// 1000, milliseconds otherwise).
	Expiration *int `json:"expiration,omitempty"`
}
