package resources

// Images are the default operand images, used when a ControlPlane's spec.images leaves one empty.
// The manager fills them from RELATED_IMAGE_* variables (the OLM bundle's relatedImages).
type Images struct {
	Controller string
	Router     string
	Nats       string
}

// Default operand images: the Datasance PoT 3.9.0 release line, as the upstream Helm chart ships
// it. The operator emits the Controller 3.8+ contract (AUTH_MODE, OIDC_*, TLS_PATH_*, embedded
// login at /api/v3/user/login); a 3.7 Controller knows only Keycloak (KC_*) and SSL_PATH_* and can
// never be logged in to. The NATS image has its own version line (upstream 3.9 ships nats 2.15.0).
// config/manager/manager.yaml sets the same values as RELATED_IMAGE_* (images_test.go checks it).
const (
	DefaultControllerImage = "ghcr.io/datasance/controller:3.9.0"
	DefaultRouterImage     = "ghcr.io/datasance/router:3.9.0"
	DefaultNatsImage       = "ghcr.io/datasance/nats:2.15.0"
)
