package controlplane

// Images are the default operand images, used when a ControlPlane's spec.images leaves one empty.
// The manager fills them from RELATED_IMAGE_* variables (the OLM bundle's relatedImages).
type Images struct {
	Controller string
	Router     string
	Nats       string
}

// Default operand images: the Datasance PoT 3.7 line the Controller REST contract was read from.
const (
	DefaultControllerImage = "ghcr.io/datasance/controller:3.7.3"
	DefaultRouterImage     = "ghcr.io/datasance/router:3.7.0"
	DefaultNatsImage       = "ghcr.io/datasance/nats:3.7.0"
)

// DefaultControllerEndpointTemplate reaches the Controller through cluster DNS, as in-cluster
// operators do.
const DefaultControllerEndpointTemplate = "controller.{namespace}.svc.cluster.local:51121"

// Options configure the ControlPlane reconciler.
type Options struct {
	// ControllerEndpointTemplate is the host:port of a ControlPlane's Controller API, with
	// {namespace} and {name} replaced. Off-cluster runs (make run, tests) point it at a
	// port-forward or a test server; the scheme still follows spec.controller.https.
	ControllerEndpointTemplate string
	// ControllerCAFile is a PEM bundle of extra CAs trusted for the Controller API over HTTPS.
	ControllerCAFile string
	// Images are the default operand images.
	Images Images
}

// DefaultOptions returns the in-cluster defaults.
func DefaultOptions() Options {
	return Options{
		ControllerEndpointTemplate: DefaultControllerEndpointTemplate,
		Images: Images{
			Controller: DefaultControllerImage,
			Router:     DefaultRouterImage,
			Nats:       DefaultNatsImage,
		},
	}
}
