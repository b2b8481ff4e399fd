package v3

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ControlPlaneSpec is the desired state of one control plane. Everything the operator creates lives
// in the ControlPlane's namespace.
//
// +kubebuilder:validation:XValidation:rule=`self.?services.?router.?type.orValue('LoadBalancer') == 'LoadBalancer' || self.?ingresses.?router.?address.orValue("") != ""`,message="spec.ingresses.router.address is required when spec.services.router.type is not LoadBalancer",fieldPath=".ingresses.router.address",reason=FieldValueRequired
// +kubebuilder:validation:XValidation:rule=`self.?services.?controller.?type.orValue('LoadBalancer') != 'ClusterIP' || self.?ingresses.?controller.?host.orValue("") != ""`,message="spec.ingresses.controller.host is required when spec.services.controller.type is ClusterIP (the Controller is then exposed through an Ingress)",fieldPath=".ingresses.controller.host",reason=FieldValueRequired
// +kubebuilder:validation:XValidation:rule=`self.database.?host.orValue("") != "" || self.?replicas.?controller.orValue(1) <= 1`,message="spec.replicas.controller must be at most 1 with the embedded SQLite database (empty spec.database.host)",fieldPath=".replicas.controller",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule=`!self.?controller.?https.orValue(false) || self.?controller.?secretName.orValue("") != ""`,message="spec.controller.secretName is required when spec.controller.https is true",fieldPath=".controller.secretName",reason=FieldValueRequired
// +kubebuilder:validation:XValidation:rule=`self.?services.?controller.?type.orValue('LoadBalancer') != 'NodePort' || self.?controller.?publicUrl.orValue("") != ""`,message="spec.controller.publicUrl is required when spec.services.controller.type is NodePort (no address can be derived)",fieldPath=".controller.publicUrl",reason=FieldValueRequired
// +kubebuilder:validation:XValidation:rule=`self.?services.?controller.?type.orValue('LoadBalancer') != 'ClusterIP' || !self.?ingresses.?controller.?host.orValue("").startsWith('*') || self.?controller.?publicUrl.orValue("") != ""`,message="spec.controller.publicUrl is required when spec.ingresses.controller.host is a wildcard (no public URL can be derived from it)",fieldPath=".controller.publicUrl",reason=FieldValueRequired
type ControlPlaneSpec struct {
	// Auth configures how the Controller authenticates users and how the operator logs in to it.
	// +required
	Auth Auth `json:"auth"`

	// Database selects the Controller's database: an external one, or the embedded SQLite
	// database (on a PersistentVolumeClaim) when host is empty.
	// +required
	Database Database `json:"database"`

	// Ingresses holds external addresses and ports used when a component is not exposed by a
	// LoadBalancer Service of its own.
	// +optional
	Ingresses Ingresses `json:"ingresses,omitempty"`

	// Services sets the type, annotations and traffic policy of each component's Service.
	// +optional
	Services Services `json:"services,omitempty"`

	// Replicas sets the Controller and NATS replica counts.
	// +optional
	Replicas Replicas `json:"replicas,omitempty"`

	// Images overrides the operand images and names an image pull Secret.
	// +optional
	Images Images `json:"images,omitempty"`

	// Pods sets the resources and the placement (node selector, tolerations, affinity, topology
	// spread, priority class) of each component's pods.
	// +optional
	Pods Pods `json:"pods,omitempty"`

	// Controller configures the Controller process: URLs, HTTPS, logging and the console port.
	// +kubebuilder:default={}
	// +optional
	Controller ControllerSpec `json:"controller,omitempty"`

	// Events configures the Controller's audit events.
	// +optional
	Events Events `json:"events,omitempty"`

	// Nats configures the NATS cluster. Omitted means NATS is enabled with defaults.
	// +optional
	Nats *Nats `json:"nats,omitempty"`

	// Vault connects the Controller to an external secrets vault.
	// +optional
	Vault *Vault `json:"vault,omitempty"`
}

// AuthMode is how the Controller authenticates.
// +kubebuilder:validation:Enum=embedded;external
type AuthMode string

const (
	// AuthModeEmbedded uses the Controller's built-in OIDC provider with a bootstrap admin user.
	AuthModeEmbedded AuthMode = "embedded"
	// AuthModeExternal uses an external OIDC identity provider.
	AuthModeExternal AuthMode = "external"
)

// Auth configures Controller authentication.
//
// +kubebuilder:validation:XValidation:rule=`self.mode != 'embedded' || self.?bootstrap.?username.orValue("") != ""`,message="spec.auth.bootstrap.username is required when spec.auth.mode is embedded",fieldPath=".bootstrap.username",reason=FieldValueRequired
// +kubebuilder:validation:XValidation:rule=`self.mode != 'embedded' || self.?bootstrap.?password.orValue("") != "" || self.?bootstrap.?passwordSecretRef.hasValue()`,message="spec.auth.bootstrap.password or spec.auth.bootstrap.passwordSecretRef is required when spec.auth.mode is embedded",fieldPath=".bootstrap.password",reason=FieldValueRequired
// +kubebuilder:validation:XValidation:rule=`self.mode != 'external' || self.?issuerUrl.orValue("") != ""`,message="spec.auth.issuerUrl is required when spec.auth.mode is external",fieldPath=".issuerUrl",reason=FieldValueRequired
// +kubebuilder:validation:XValidation:rule=`self.mode != 'external' || (self.?client.?id.orValue("") != "" && (self.?client.?secret.orValue("") != "" || self.?client.?secretRef.hasValue()))`,message="spec.auth.client.id and one of spec.auth.client.secretRef or spec.auth.client.secret are required when spec.auth.mode is external",fieldPath=".client",reason=FieldValueRequired
// +kubebuilder:validation:XValidation:rule=`self.mode == 'external' || !has(self.caSecretRef)`,message="spec.auth.caSecretRef applies to external mode only (embedded mode logs in at the Controller, whose trust is spec.controller.caSecretRef)",fieldPath=".caSecretRef",reason=FieldValueForbidden
type Auth struct {
	// Mode is embedded (the Controller's own OIDC provider and a bootstrap admin) or external (an
	// external OIDC identity provider).
	// +required
	Mode AuthMode `json:"mode"`

	// InsecureAllowHTTP lets the Controller accept OIDC over plain HTTP (AUTH_INSECURE_ALLOW_HTTP).
	// Development only.
	// +optional
	InsecureAllowHTTP *bool `json:"insecureAllowHttp,omitempty"`

	// InsecureAllowBootstrapLog lets the Controller log the bootstrap password
	// (AUTH_INSECURE_ALLOW_BOOTSTRAP_LOG). Development only.
	// +optional
	InsecureAllowBootstrapLog *bool `json:"insecureAllowBootstrapLog,omitempty"`

	// Bootstrap is the embedded-mode admin user.
	// +optional
	Bootstrap *Bootstrap `json:"bootstrap,omitempty"`

	// IssuerURL is the external OIDC issuer (OIDC_ISSUER_URL). The operator reads its discovery
	// document to find the token endpoint.
	// +kubebuilder:validation:XValidation:rule=`isURL(self) && url(self).getScheme() in ['http', 'https']`,message="spec.auth.issuerUrl must be an http(s) URL"
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	IssuerURL string `json:"issuerUrl,omitempty"`

	// Client is the confidential OAuth2 client the operator uses in external mode
	// (OIDC_CLIENT_ID / OIDC_CLIENT_SECRET).
	// +optional
	Client *OIDCClient `json:"client,omitempty"`

	// CASecretRef selects a key of a Secret in the ControlPlane's namespace holding the PEM CA
	// bundle the operator trusts for the external identity provider (issuerUrl's discovery
	// document and its token endpoint), besides the system roots and the operator's
	// --controller-ca-file, whether or not the Controller itself is served over https. External
	// mode only; the operator watches the Secret. Verification is never switched off.
	// +kubebuilder:validation:XValidation:rule=`self.?name.orValue("") != ""`,message="spec.auth.caSecretRef.name is required"
	// +optional
	CASecretRef *corev1.SecretKeySelector `json:"caSecretRef,omitempty"`

	// ConsoleClient is the EdgeOps Console's OIDC client id in embedded mode (OIDC_CONSOLE_CLIENT_ID).
	// +optional
	ConsoleClient string `json:"consoleClient,omitempty"`

	// ConsoleClientEnabled turns the console OIDC client on or off (AUTH_CONSOLE_CLIENT_ENABLED).
	// +optional
	ConsoleClientEnabled *bool `json:"consoleClientEnabled,omitempty"`

	// RateLimit tunes the rate limit of the authentication endpoints.
	// +optional
	RateLimit *RateLimit `json:"rateLimit,omitempty"`

	// SessionStore selects where login sessions are kept.
	// +optional
	SessionStore *SessionStore `json:"sessionStore,omitempty"`

	// TokenTTL sets access and refresh token lifetimes.
	// +optional
	TokenTTL *TokenTTL `json:"tokenTtl,omitempty"`

	// OIDCTTL sets lifetimes of the embedded OIDC provider's artifacts.
	// +optional
	OIDCTTL *OIDCTTL `json:"oidcTtl,omitempty"`
}

// Bootstrap is the embedded-mode admin user. The password comes from passwordSecretRef when set,
// otherwise from password.
type Bootstrap struct {
	// Username of the bootstrap admin (OIDC_BOOTSTRAP_ADMIN_USERNAME). The operator logs in as
	// this user.
	// +kubebuilder:validation:MaxLength=255
	// +optional
	Username string `json:"username,omitempty"`

	// Password is the inline bootstrap password. Discouraged: an inline password is visible to
	// anyone who can read the ControlPlane; use passwordSecretRef.
	// +optional
	Password string `json:"password,omitempty"`

	// PasswordSecretRef selects a key of a Secret in the ControlPlane's namespace that holds the
	// bootstrap password. It takes precedence over password; the operator watches the Secret.
	// +optional
	PasswordSecretRef *corev1.SecretKeySelector `json:"passwordSecretRef,omitempty"`
}

// OIDCClient is an OAuth2 confidential client. The client secret comes from secretRef or, discouraged,
// from the inline secret; at most one of the two may be set.
//
// +kubebuilder:validation:XValidation:rule=`!(self.?secret.orValue("") != "" && has(self.secretRef))`,message="set at most one of spec.auth.client.secret and spec.auth.client.secretRef",fieldPath=".secretRef",reason=FieldValueForbidden
type OIDCClient struct {
	// ID is the client id.
	// +optional
	ID string `json:"id,omitempty"`
	// Secret is the inline client secret. Discouraged: anyone who can read the ControlPlane reads
	// it; use secretRef.
	// +optional
	Secret string `json:"secret,omitempty"`
	// SecretRef selects the key of a Secret in the ControlPlane's namespace that holds the client
	// secret (OIDC_CLIENT_SECRET). The operator reads it at each pass and watches the Secret; a
	// change rolls the Controller.
	// +kubebuilder:validation:XValidation:rule=`self.?name.orValue("") != ""`,message="spec.auth.client.secretRef.name is required"
	// +optional
	SecretRef *corev1.SecretKeySelector `json:"secretRef,omitempty"`
}

// RateLimit tunes the authentication rate limit (AUTH_RATE_LIMIT_*).
type RateLimit struct {
	// Enabled turns the limit on or off.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// MaxRequestsPerWindow is the number of requests allowed per window.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxRequestsPerWindow *int32 `json:"maxRequestsPerWindow,omitempty"`
	// WindowMs is the window length in milliseconds.
	// +kubebuilder:validation:Minimum=1
	// +optional
	WindowMs *int32 `json:"windowMs,omitempty"`
}

// SessionStore selects the login session store. The session secret comes from secretRef or,
// discouraged, from the inline secret; at most one of the two may be set.
//
// +kubebuilder:validation:XValidation:rule=`!(self.?secret.orValue("") != "" && has(self.secretRef))`,message="set at most one of spec.auth.sessionStore.secret and spec.auth.sessionStore.secretRef",fieldPath=".secretRef",reason=FieldValueForbidden
type SessionStore struct {
	// Type is memory or database (AUTH_SESSION_STORE_TYPE).
	// +kubebuilder:validation:Enum=memory;database
	// +optional
	Type string `json:"type,omitempty"`
	// TTLMs is the session lifetime in milliseconds (AUTH_SESSION_STORE_TTL_MS).
	// +kubebuilder:validation:Minimum=1
	// +optional
	TTLMs *int32 `json:"ttlMs,omitempty"`
	// Secret is the inline secret that signs session cookies (AUTH_SESSION_SECRET). Discouraged:
	// anyone who can read the ControlPlane reads it; use secretRef. The operator passes it through
	// the controller-auth-credentials Secret, never as a plain environment value.
	// +optional
	Secret string `json:"secret,omitempty"`
	// SecretRef selects the key of a Secret in the ControlPlane's namespace that holds the session
	// secret (AUTH_SESSION_SECRET). Watched; a change rolls the Controller.
	// +kubebuilder:validation:XValidation:rule=`self.?name.orValue("") != ""`,message="spec.auth.sessionStore.secretRef.name is required"
	// +optional
	SecretRef *corev1.SecretKeySelector `json:"secretRef,omitempty"`
}

// TokenTTL sets token lifetimes in seconds.
type TokenTTL struct {
	// AccessTokenTTLSeconds is the access token lifetime (AUTH_ACCESS_TOKEN_TTL_SECONDS).
	// +kubebuilder:validation:Minimum=1
	// +optional
	AccessTokenTTLSeconds *int32 `json:"accessTokenTtlSeconds,omitempty"`
	// RefreshTokenTTLSeconds is the refresh token lifetime (AUTH_REFRESH_TOKEN_TTL_SECONDS).
	// +kubebuilder:validation:Minimum=1
	// +optional
	RefreshTokenTTLSeconds *int32 `json:"refreshTokenTtlSeconds,omitempty"`
}

// OIDCTTL sets embedded OIDC provider lifetimes in seconds (AUTH_OIDC_*_TTL_SECONDS).
type OIDCTTL struct {
	// InteractionTTLSeconds is the login interaction lifetime.
	// +kubebuilder:validation:Minimum=1
	// +optional
	InteractionTTLSeconds *int32 `json:"interactionTtlSeconds,omitempty"`
	// GrantTTLSeconds is the grant lifetime.
	// +kubebuilder:validation:Minimum=1
	// +optional
	GrantTTLSeconds *int32 `json:"grantTtlSeconds,omitempty"`
	// SessionTTLSeconds is the OIDC session lifetime.
	// +kubebuilder:validation:Minimum=1
	// +optional
	SessionTTLSeconds *int32 `json:"sessionTtlSeconds,omitempty"`
	// IDTokenTTLSeconds is the ID token lifetime.
	// +kubebuilder:validation:Minimum=1
	// +optional
	IDTokenTTLSeconds *int32 `json:"idTokenTtlSeconds,omitempty"`
}

// Database selects the Controller's database. Credentials reach the Controller through the
// controller-db-credentials Secret, never as plain environment values. The password comes from
// passwordSecretRef or, discouraged, from the inline password; at most one of the two may be set.
//
// The provider and the host go together: an external database (host) is postgres or mysql, and
// postgres or mysql needs a host. A host without a provider would make the Controller image fall
// back to its embedded SQLite database inside each pod, which the operator then runs without the
// PVC and behind several replicas.
//
// +kubebuilder:validation:XValidation:rule=`!(self.?password.orValue("") != "" && has(self.passwordSecretRef))`,message="set at most one of spec.database.password and spec.database.passwordSecretRef",fieldPath=".passwordSecretRef",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule=`self.?host.orValue("") == "" || self.?provider.orValue("") in ['postgres', 'mysql']`,message="spec.database.provider must be postgres or mysql when spec.database.host is set (an empty host selects the embedded SQLite database)",fieldPath=".provider",reason=FieldValueRequired
// +kubebuilder:validation:XValidation:rule=`!(self.?provider.orValue("") in ['postgres', 'mysql']) || self.?host.orValue("") != ""`,message="spec.database.host is required when spec.database.provider is postgres or mysql",fieldPath=".host",reason=FieldValueRequired
type Database struct {
	// Provider is the database kind (DB_PROVIDER): sqlite, or omitted, for the embedded SQLite
	// database; postgres or mysql for the external database at host. The Controller loads the
	// provider module of exactly this name, so no other value or spelling can start it.
	// +kubebuilder:validation:Enum=sqlite;postgres;mysql
	// +optional
	Provider string `json:"provider,omitempty"`
	// Host of an external database. Empty selects the embedded SQLite database on the
	// controller-sqlite PersistentVolumeClaim, which allows a single Controller replica.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Host string `json:"host,omitempty"`
	// Port of the external database.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	// +optional
	Port int32 `json:"port,omitempty"`
	// User of the external database.
	// +optional
	User string `json:"user,omitempty"`
	// Password is the inline password of the external database user. Discouraged: anyone who can
	// read the ControlPlane reads it; use passwordSecretRef.
	// +optional
	Password string `json:"password,omitempty"`
	// PasswordSecretRef selects the key of a Secret in the ControlPlane's namespace that holds the
	// database password (DB_PASSWORD). Watched; a change rolls the Controller.
	// +kubebuilder:validation:XValidation:rule=`self.?name.orValue("") != ""`,message="spec.database.passwordSecretRef.name is required"
	// +optional
	PasswordSecretRef *corev1.SecretKeySelector `json:"passwordSecretRef,omitempty"`
	// DatabaseName is the name of the database.
	// +optional
	DatabaseName string `json:"databaseName,omitempty"`
	// SSL turns TLS to the database on (DB_USE_SSL). Omitted means false.
	// +optional
	SSL *bool `json:"ssl,omitempty"`
	// CA is the base64 encoding of a PEM CA certificate, on one line (e.g. `base64 -w0 < ca.pem`).
	// It is passed to the Controller unchanged (DB_SSL_CA_B64), which decodes it and, with ssl,
	// verifies the database server against it; without it, ssl does not verify the server.
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9+/]*={0,2}$`
	// +optional
	CA *string `json:"ca,omitempty"`
}

// Replicas sets replica counts.
type Replicas struct {
	// Controller replicas; 0 or omitted means 1. More than one needs an external database.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Controller int32 `json:"controller,omitempty"`
	// Nats replicas (at least 2; omitted means 3). Three servers keep the JetStream quorum (a
	// majority of the servers) while one is down for a node drain or a rolling update; with two,
	// JetStream is unavailable whenever one of them is down. Ignored when NATS is disabled.
	// +kubebuilder:validation:Minimum=2
	// +optional
	Nats *int32 `json:"nats,omitempty"`
}

// Images overrides operand images. Empty fields use the operator's defaults, which come from its
// RELATED_IMAGE_* environment variables (listed in the OLM bundle's relatedImages).
type Images struct {
	// PullSecret names a kubernetes.io/dockerconfigjson Secret in the namespace used to pull the
	// operand images.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	PullSecret string `json:"pullSecret,omitempty"`
	// Controller image. Its liveness probe is set only when the tag is a release of 3.8.2 or
	// later, which serves GET /api/v3/live.
	// +optional
	Controller string `json:"controller,omitempty"`
	// Router image: run in the cluster and handed by the Controller to its agents in all four
	// per-architecture slots (ROUTER_IMAGE_1..4: amd64, arm64, riscv64, arm), so it must be a
	// multi-architecture image covering the agents' architectures.
	// +optional
	Router string `json:"router,omitempty"`
	// Nats image, handed to the agents like the router image (NATS_IMAGE_1..4).
	// +optional
	Nats string `json:"nats,omitempty"`
}

// Pods holds the pod settings of each component. A component that is omitted gets the defaults
// of docs/controlplane.md#resources-and-placement.
type Pods struct {
	// Controller sets the pods of Deployment controller.
	// +optional
	Controller *PodSettings `json:"controller,omitempty"`
	// Router sets the pods of Deployment router.
	// +optional
	Router *PodSettings `json:"router,omitempty"`
	// Nats sets the pods of StatefulSet nats. Ignored when NATS is disabled.
	// +optional
	Nats *PodSettings `json:"nats,omitempty"`
}

// PodSettings are the resources and placement of one component's pods. Each field that is set
// replaces the operator's default for that field whole; nothing is merged.
type PodSettings struct {
	// Resources of the component's container. Omitted means the operator's defaults, which every
	// container has (requests and limits, so that a namespace with a compute ResourceQuota admits
	// the pods); set, it replaces them whole.
	// +optional
	Resources *Resources `json:"resources,omitempty"`
	// NodeSelector the pods' nodes must match.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule=`self.all(k, k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$'))`,message="node selector keys must be qualified names ([prefix/]name)"
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// Tolerations of the pods.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// Affinity of the pods. The operator sets none by default.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
	// TopologySpreadConstraints replace the operator's spread over nodes and zones
	// (docs/controlplane.md#disruption-and-spread). For NATS, keep a spread that places at most
	// one server per node: two servers on one node go down together and can take the JetStream
	// quorum with them.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	// PriorityClassName of the pods.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
}

// Resources are the compute resources of a container: what the scheduler reserves (requests) and
// what the kubelet enforces (limits). A request may not exceed the limit of the same resource.
//
// +kubebuilder:validation:XValidation:rule=`!has(self.requests) || !has(self.limits) || self.requests.all(k, !(k in self.limits) || quantity(string(self.requests[k])).compareTo(quantity(string(self.limits[k]))) <= 0)`,message="each request must be at most the limit of the same resource",reason=FieldValueInvalid
type Resources struct {
	// Requests of the container (cpu, memory, ephemeral-storage, ...), at most six resources.
	// +optional
	// +kubebuilder:validation:MaxProperties=6
	Requests corev1.ResourceList `json:"requests,omitempty"`
	// Limits of the container, at most six resources.
	// +optional
	// +kubebuilder:validation:MaxProperties=6
	Limits corev1.ResourceList `json:"limits,omitempty"`
}

// Services sets each component's Service.
type Services struct {
	// Controller is Service controller (API and console). Its address becomes loadBalancerIP.
	// +optional
	Controller *ServiceSpec `json:"controller,omitempty"`
	// Router is Service router (AMQP ports).
	// +optional
	Router *ServiceSpec `json:"router,omitempty"`
	// Nats is Service nats (cluster, leaf and MQTT ports).
	// +optional
	Nats *ServiceSpec `json:"nats,omitempty"`
	// NatsServer is Service nats-server (client and monitor ports).
	// +optional
	NatsServer *ServiceSpec `json:"natsServer,omitempty"`
}

// ServiceSpec configures one Service.
type ServiceSpec struct {
	// Type of the Service; omitted means LoadBalancer.
	// +kubebuilder:validation:Enum=ClusterIP;NodePort;LoadBalancer
	// +optional
	Type corev1.ServiceType `json:"type,omitempty"`
	// Address is copied to spec.loadBalancerIP. Honoured on the controller Service only.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Address string `json:"address,omitempty"`
	// Annotations added to the Service.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule=`self.all(k, k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$'))`,message="annotation keys must be qualified names ([prefix/]name)"
	Annotations map[string]string `json:"annotations,omitempty"`
	// ExternalTrafficPolicy for LoadBalancer and NodePort Services; omitted means Local for
	// LoadBalancer and Cluster for NodePort. Ignored for ClusterIP.
	// +kubebuilder:validation:Enum=Local;Cluster
	// +optional
	ExternalTrafficPolicy corev1.ServiceExternalTrafficPolicy `json:"externalTrafficPolicy,omitempty"`
}

// Ingresses holds external exposure settings.
type Ingresses struct {
	// Controller is the Ingress used when the controller Service is ClusterIP.
	// +optional
	Controller *ControllerIngress `json:"controller,omitempty"`
	// Router is the external router endpoint used when the router Service is not a LoadBalancer.
	// +optional
	Router *RouterIngress `json:"router,omitempty"`
	// Nats is the external NATS endpoint used when the nats Service is not a LoadBalancer.
	// +optional
	Nats *NatsIngress `json:"nats,omitempty"`
}

// ControllerIngress configures Ingress controller.
type ControllerIngress struct {
	// Host of the Ingress rule; also the source of the derived public URL.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	Host string `json:"host,omitempty"`
	// SecretName is the TLS Secret of the Ingress; setting it makes the derived URLs https.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	SecretName string `json:"secretName,omitempty"`
	// IngressClassName of the Ingress.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	IngressClassName string `json:"ingressClassName,omitempty"`
	// Annotations added to the Ingress (e.g. cert-manager or nginx settings).
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule=`self.all(k, k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$'))`,message="annotation keys must be qualified names ([prefix/]name)"
	Annotations map[string]string `json:"annotations,omitempty"`
}

// RouterIngress is the external router endpoint handed to agents.
type RouterIngress struct {
	// Address is the external router host; it also goes into the router certificates' SANs.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Address string `json:"address,omitempty"`
	// MessagePort is the external AMQPS port; 0 means 5671.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	// +optional
	MessagePort int32 `json:"messagePort,omitempty"`
	// InteriorPort is the external inter-router port; 0 means 55671.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	// +optional
	InteriorPort int32 `json:"interiorPort,omitempty"`
	// EdgePort is the external edge port; 0 means 45671.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	// +optional
	EdgePort int32 `json:"edgePort,omitempty"`
}

// NatsIngress is the external NATS endpoint handed to agents.
type NatsIngress struct {
	// Address is the external NATS host: hub registration, certificate SANs and leaf advertise.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Address string `json:"address,omitempty"`
	// ServerPort is the external client port; 0 means 4222.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	// +optional
	ServerPort int32 `json:"serverPort,omitempty"`
	// ClusterPort is the external cluster port; 0 means 6222.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	// +optional
	ClusterPort int32 `json:"clusterPort,omitempty"`
	// LeafPort is the external leaf node port; 0 means 7422.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	// +optional
	LeafPort int32 `json:"leafPort,omitempty"`
	// MqttPort is the external MQTT port; 0 means 8883.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	// +optional
	MqttPort int32 `json:"mqttPort,omitempty"`
	// HTTPPort is the external monitoring port; 0 means 8222.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	// +optional
	HTTPPort int32 `json:"httpPort,omitempty"`
}

// ControllerSpec configures the Controller process.
type ControllerSpec struct {
	// PublicURL is the Controller's external URL (CONTROLLER_PUBLIC_URL). When empty it is derived
	// from the Ingress host or the LoadBalancer address; when set, the operator never waits for a
	// LoadBalancer address.
	// +kubebuilder:validation:XValidation:rule=`isURL(self) && url(self).getScheme() in ['http', 'https']`,message="spec.controller.publicUrl must be an http(s) URL"
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	PublicURL string `json:"publicUrl,omitempty"`
	// TrustProxy makes the Controller trust X-Forwarded-* headers (TRUST_PROXY); unset means true
	// in Ingress mode.
	// +optional
	TrustProxy *bool `json:"trustProxy,omitempty"`
	// ConsoleURL is the console's external URL (CONSOLE_URL); empty means derived.
	// +kubebuilder:validation:XValidation:rule=`isURL(self) && url(self).getScheme() in ['http', 'https']`,message="spec.controller.consoleUrl must be an http(s) URL"
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	ConsoleURL string `json:"consoleUrl,omitempty"`
	// ConsolePort is the console's container port (CONSOLE_PORT); Service port 80 targets it. It
	// cannot be 51121, the API port of the same container.
	// +kubebuilder:validation:XValidation:rule=`self != 51121`,message="spec.controller.consolePort must differ from the Controller API port 51121"
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:default=8008
	// +optional
	ConsolePort int32 `json:"consolePort,omitempty"`
	// PidBaseDir is the Controller's PID base directory (PID_BASE); default /home/runner.
	// +optional
	PidBaseDir string `json:"pidBaseDir,omitempty"`
	// Ecn is the Edge Compute Network name (ECN_NAME).
	// +optional
	Ecn string `json:"ecn,omitempty"`
	// HTTPS serves the Controller API over TLS from the pod, using secretName.
	// +optional
	HTTPS *bool `json:"https,omitempty"`
	// SecretName is a kubernetes.io/tls Secret mounted at /etc/iofog/controller-cert/ when https is
	// true. The operator never creates it, and watches it.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	SecretName string `json:"secretName,omitempty"`
	// CASecretRef names a key of a Secret in this namespace holding the PEM CA bundle the
	// operator trusts for this Controller's certificate, for a chain that is not in the ca.crt of
	// secretName (which is always trusted). Only read when https is true. Verification is never
	// switched off.
	// +optional
	CASecretRef *corev1.SecretKeySelector `json:"caSecretRef,omitempty"`
	// LogLevel of the Controller (LOG_LEVEL); default info.
	// +kubebuilder:validation:Enum=error;warn;info;debug;trace
	// +optional
	LogLevel string `json:"logLevel,omitempty"`
}

// Events configures Controller audit events (EVENT_*). When no field is set, no EVENT_* variable
// is written at all.
type Events struct {
	// AuditEnabled turns audit events on or off (EVENT_AUDIT_ENABLED). Omitted leaves the
	// Controller's default, which audits.
	// +optional
	AuditEnabled *bool `json:"auditEnabled,omitempty"`
	// RetentionDays keeps events this many days (EVENT_RETENTION_DAYS, unless audit is off).
	// +kubebuilder:validation:Minimum=0
	// +optional
	RetentionDays int32 `json:"retentionDays,omitempty"`
	// CleanupInterval between event clean-ups (EVENT_CLEANUP_INTERVAL, unless audit is off).
	// +kubebuilder:validation:Minimum=0
	// +optional
	CleanupInterval int32 `json:"cleanupInterval,omitempty"`
	// CaptureIPAddress records client addresses (EVENT_CAPTURE_IP_ADDRESS).
	// +optional
	CaptureIPAddress *bool `json:"captureIpAddress,omitempty"`
}

// Nats configures the NATS cluster.
type Nats struct {
	// Enabled turns NATS on or off; omitted means on.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// JetStream configures JetStream storage.
	// +optional
	JetStream *JetStream `json:"jetStream,omitempty"`
	// ExposeMonitor adds the NATS monitoring port (8222) to Service nats-server, and so to the
	// address that Service gives (a load balancer unless services.natsServer says otherwise).
	// The monitor answers without authentication (connections, subjects, account public keys):
	// by default it stays in the cluster, on Service nats-headless.
	// +optional
	ExposeMonitor bool `json:"exposeMonitor,omitempty"`
}

// JetStream configures JetStream storage. Sizes are whole Kubernetes quantities with an optional
// decimal (k, M, G, T, P, E) or binary (Ki ... Ei) suffix: exactly what server.conf can carry
// (internal/natsconf.SizePattern; a test checks both sides against one table). Fractions, milli
// and lower-case units other than k are rejected.
type JetStream struct {
	// StorageSize of each NATS pod's js-data volume and JetStream's file store limit; default 10Gi.
	// Fixed once the StatefulSet exists.
	// +kubebuilder:validation:Pattern=`^[0-9]+(k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$`
	// +optional
	StorageSize string `json:"storageSize,omitempty"`
	// MemoryStoreSize is JetStream's memory store limit; default 1G.
	// +kubebuilder:validation:Pattern=`^[0-9]+(k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$`
	// +optional
	MemoryStoreSize string `json:"memoryStoreSize,omitempty"`
	// StorageClassName of the js-data volumes; default the cluster default. Fixed once the
	// StatefulSet exists.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	StorageClassName string `json:"storageClassName,omitempty"`
}

// VaultProvider names a secrets vault.
// +kubebuilder:validation:Enum=hashicorp;openbao;vault;aws;aws-secrets-manager;azure;azure-key-vault;google;google-secret-manager
type VaultProvider string

// Vault connects the Controller to a secrets vault. It is active when provider or one provider
// block is set; only the first provider block in the order hashicorp, aws, azure, google is used.
type Vault struct {
	// Enabled (VAULT_ENABLED); defaults to true when the vault is active.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// Provider (VAULT_PROVIDER).
	// +optional
	Provider VaultProvider `json:"provider,omitempty"`
	// BasePath (VAULT_BASE_PATH); every literal $namespace becomes the ControlPlane's namespace.
	// +optional
	BasePath string `json:"basePath,omitempty"`
	// Hashicorp (or OpenBao) settings.
	// +optional
	Hashicorp *VaultHashicorp `json:"hashicorp,omitempty"`
	// AWS Secrets Manager settings.
	// +optional
	AWS *VaultAWS `json:"aws,omitempty"`
	// Azure Key Vault settings.
	// +optional
	Azure *VaultAzure `json:"azure,omitempty"`
	// Google Secret Manager settings.
	// +optional
	Google *VaultGoogle `json:"google,omitempty"`
}

// VaultHashicorp holds HashiCorp Vault / OpenBao settings. The token comes from tokenSecretRef
// or, discouraged, from the inline token; at most one of the two may be set.
//
// +kubebuilder:validation:XValidation:rule=`!(self.?token.orValue("") != "" && has(self.tokenSecretRef))`,message="set at most one of spec.vault.hashicorp.token and spec.vault.hashicorp.tokenSecretRef",fieldPath=".tokenSecretRef",reason=FieldValueForbidden
type VaultHashicorp struct {
	// Address of the vault.
	// +optional
	Address string `json:"address,omitempty"`
	// Token is the inline vault token. Discouraged: anyone who can read the ControlPlane reads it;
	// use tokenSecretRef.
	// +optional
	Token string `json:"token,omitempty"`
	// TokenSecretRef selects the key of a Secret in the ControlPlane's namespace that holds the
	// vault token (VAULT_HASHICORP_TOKEN). Watched; a change rolls the Controller.
	// +kubebuilder:validation:XValidation:rule=`self.?name.orValue("") != ""`,message="spec.vault.hashicorp.tokenSecretRef.name is required"
	// +optional
	TokenSecretRef *corev1.SecretKeySelector `json:"tokenSecretRef,omitempty"`
	// Mount path of the secrets engine.
	// +optional
	Mount string `json:"mount,omitempty"`
}

// VaultAWS holds AWS Secrets Manager settings. The access key id and the secret access key each
// come from their Secret reference or, discouraged, from the inline field; at most one of each
// pair may be set.
//
// +kubebuilder:validation:XValidation:rule=`!(self.?accessKeyId.orValue("") != "" && has(self.accessKeyIdSecretRef))`,message="set at most one of spec.vault.aws.accessKeyId and spec.vault.aws.accessKeyIdSecretRef",fieldPath=".accessKeyIdSecretRef",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule=`!(self.?accessKey.orValue("") != "" && has(self.accessKeySecretRef))`,message="set at most one of spec.vault.aws.accessKey and spec.vault.aws.accessKeySecretRef",fieldPath=".accessKeySecretRef",reason=FieldValueForbidden
type VaultAWS struct {
	// Region of the secrets manager.
	// +optional
	Region string `json:"region,omitempty"`
	// AccessKeyID of the IAM credentials, inline. Prefer accessKeyIdSecretRef when the id is
	// kept beside the key.
	// +optional
	AccessKeyID string `json:"accessKeyId,omitempty"`
	// AccessKeyIDSecretRef selects the key of a Secret in the ControlPlane's namespace that holds
	// the access key id (VAULT_AWS_ACCESS_KEY_ID). Watched; a change rolls the Controller.
	// +kubebuilder:validation:XValidation:rule=`self.?name.orValue("") != ""`,message="spec.vault.aws.accessKeyIdSecretRef.name is required"
	// +optional
	AccessKeyIDSecretRef *corev1.SecretKeySelector `json:"accessKeyIdSecretRef,omitempty"`
	// AccessKey is the inline IAM secret access key. Discouraged: anyone who can read the
	// ControlPlane reads it; use accessKeySecretRef.
	// +optional
	AccessKey string `json:"accessKey,omitempty"`
	// AccessKeySecretRef selects the key of a Secret in the ControlPlane's namespace that holds
	// the IAM secret access key (VAULT_AWS_ACCESS_KEY). Watched; a change rolls the Controller.
	// +kubebuilder:validation:XValidation:rule=`self.?name.orValue("") != ""`,message="spec.vault.aws.accessKeySecretRef.name is required"
	// +optional
	AccessKeySecretRef *corev1.SecretKeySelector `json:"accessKeySecretRef,omitempty"`
}

// VaultAzure holds Azure Key Vault settings. The client secret comes from clientSecretRef or,
// discouraged, from the inline clientSecret; at most one of the two may be set.
//
// +kubebuilder:validation:XValidation:rule=`!(self.?clientSecret.orValue("") != "" && has(self.clientSecretRef))`,message="set at most one of spec.vault.azure.clientSecret and spec.vault.azure.clientSecretRef",fieldPath=".clientSecretRef",reason=FieldValueForbidden
type VaultAzure struct {
	// URL of the key vault.
	// +optional
	URL string `json:"url,omitempty"`
	// TenantID of the service principal.
	// +optional
	TenantID string `json:"tenantId,omitempty"`
	// ClientID of the service principal.
	// +optional
	ClientID string `json:"clientId,omitempty"`
	// ClientSecret is the inline secret of the service principal. Discouraged: anyone who can
	// read the ControlPlane reads it; use clientSecretRef.
	// +optional
	ClientSecret string `json:"clientSecret,omitempty"`
	// ClientSecretRef selects the key of a Secret in the ControlPlane's namespace that holds the
	// service principal's secret (VAULT_AZURE_CLIENT_SECRET). Watched; a change rolls the
	// Controller.
	// +kubebuilder:validation:XValidation:rule=`self.?name.orValue("") != ""`,message="spec.vault.azure.clientSecretRef.name is required"
	// +optional
	ClientSecretRef *corev1.SecretKeySelector `json:"clientSecretRef,omitempty"`
}

// VaultGoogle holds Google Secret Manager settings. The service account key comes from
// credentialsSecretRef or, discouraged, from the inline credentials; at most one of the two may
// be set.
//
// +kubebuilder:validation:XValidation:rule=`!(self.?credentials.orValue("") != "" && has(self.credentialsSecretRef))`,message="set at most one of spec.vault.google.credentials and spec.vault.google.credentialsSecretRef",fieldPath=".credentialsSecretRef",reason=FieldValueForbidden
type VaultGoogle struct {
	// ProjectID of the secret manager.
	// +optional
	ProjectID string `json:"projectId,omitempty"`
	// Credentials is the inline service account key JSON. Discouraged: anyone who can read the
	// ControlPlane reads it; use credentialsSecretRef.
	// +optional
	Credentials string `json:"credentials,omitempty"`
	// CredentialsSecretRef selects the key of a Secret in the ControlPlane's namespace that holds
	// the service account key JSON (VAULT_GOOGLE_CREDENTIALS). Watched; a change rolls the
	// Controller.
	// +kubebuilder:validation:XValidation:rule=`self.?name.orValue("") != ""`,message="spec.vault.google.credentialsSecretRef.name is required"
	// +optional
	CredentialsSecretRef *corev1.SecretKeySelector `json:"credentialsSecretRef,omitempty"`
}

// ComponentStatus is the outcome of one component's last pass.
type ComponentStatus struct {
	// Ready is true when the component's last pass finished for the current generation.
	// +optional
	Ready bool `json:"ready,omitempty"`
	// Reason is an UpperCamel word for the last outcome, e.g. WaitingForLoadBalancer.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message explains the last outcome.
	// +optional
	Message string `json:"message,omitempty"`
}

// ControllerStatus reports the Controller component.
type ControllerStatus struct {
	ComponentStatus `json:",inline"`
	// PublicURL is the resolved CONTROLLER_PUBLIC_URL.
	// +optional
	PublicURL string `json:"publicUrl,omitempty"`
	// ConsoleURL is the resolved CONSOLE_URL.
	// +optional
	ConsoleURL string `json:"consoleUrl,omitempty"`
	// RejectedLogins records the logins the Controller rejected in a row since the operator's
	// last successful one. The Controller locks an account for 15 minutes at its fifth failed
	// login in a row and only a successful login resets its count, so the operator keeps its own
	// count where a restart does not lose it.
	// +optional
	RejectedLogins *RejectedLogins `json:"rejectedLogins,omitempty"`
}

// RejectedLogins is the operator's record of the logins the Controller rejected in a row.
type RejectedLogins struct {
	// Count is how many logins in a row the Controller rejected.
	Count int32 `json:"count"`
	// LastRejection is when the last one was rejected.
	LastRejection metav1.Time `json:"lastRejection"`
	// Credentials identifies the credentials last rejected without revealing them: an
	// HMAC-SHA256 of them under the key of Secret controller-rollout-key.
	Credentials string `json:"credentials"`
}

// RouterStatus reports the Router component.
type RouterStatus struct {
	ComponentStatus `json:",inline"`
	// Address is the external router address registered with the Controller.
	// +optional
	Address string `json:"address,omitempty"`
}

// NatsStatus reports the NATS component.
type NatsStatus struct {
	ComponentStatus `json:",inline"`
	// Enabled mirrors spec.nats.enabled after defaulting.
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// Address is the external NATS address; empty means the hub is not registered.
	// +optional
	Address string `json:"address,omitempty"`
	// Replicas is the NATS replica count in force.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
}

// ControlPlaneStatus is the observed state.
type ControlPlaneStatus struct {
	// Conditions hold the state machine: exactly one of deploying, updating or ready is True, and
	// its observedGeneration tells which generation it describes. The True condition's reason and
	// message say what the operator waits for or what went wrong.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ObservedGeneration is the generation the last completed pass acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// FailingSince is when the passes of this ControlPlane started failing after it was ready;
	// unset while passes succeed. A ControlPlane whose passes fail for longer than the operator's
	// grace period (5 minutes by default) leaves ready for deploying.
	// +optional
	FailingSince *metav1.Time `json:"failingSince,omitempty"`

	// Controller reports the Controller component.
	// +optional
	Controller ControllerStatus `json:"controller,omitempty"`

	// Router reports the Router component.
	// +optional
	Router RouterStatus `json:"router,omitempty"`

	// Nats reports the NATS component.
	// +optional
	Nats NatsStatus `json:"nats,omitempty"`
}

// ControlPlane deploys a Datasance PoT / ioFog control plane (Controller, Router and NATS) into
// its namespace and registers the router, NATS hub and CAs with the Controller's REST API.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cp;cps,categories=iofog
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.status=="True")].type`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.status=="True")].reason`
// +kubebuilder:printcolumn:name="Auth",type=string,JSONPath=`.spec.auth.mode`
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.status.controller.publicUrl`,priority=1
// +kubebuilder:printcolumn:name="Controller-Svc",type=string,JSONPath=`.spec.services.controller.type`,priority=1
// +kubebuilder:printcolumn:name="Observed-Gen",type=integer,JSONPath=`.status.observedGeneration`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule=`size(self.metadata.name) <= 63`,message="metadata.name must be at most 63 characters: it is used as a label value and the NATS cluster name"
type ControlPlane struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired control plane.
	// +required
	Spec ControlPlaneSpec `json:"spec"`

	// Status is the observed state.
	// +optional
	Status ControlPlaneStatus `json:"status,omitempty"`
}

// ControlPlaneList is a list of ControlPlanes.
//
// +kubebuilder:object:root=true
type ControlPlaneList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ControlPlane `json:"items"`
}
