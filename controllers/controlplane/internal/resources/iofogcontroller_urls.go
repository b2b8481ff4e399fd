package resources

import (
	"net"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
)

// ResolveControllerURLs fills CONTROLLER_PUBLIC_URL, CONSOLE_URL and TRUST_PROXY (docs/controlplane.md#url-resolution).
// lbAddress is the controller Service's LoadBalancer address, if any. wait is true when the
// Service is a LoadBalancer without an address and no publicUrl is set: the Deployment must not
// be built yet.
func ResolveControllerURLs(spec *datasancev3.ControlPlaneSpec, lbAddress string) (urls ControllerURLs, wait bool) {
	urls = ControllerURLs{PublicURL: spec.Controller.PublicURL, ConsoleURL: spec.Controller.ConsoleURL, trustProxy: spec.Controller.TrustProxy}
	https := spec.ControllerHTTPS()
	switch {
	case spec.ControllerIngressMode():
		in := spec.Ingresses.Controller
		scheme := "http"
		if https || in.SecretName != "" {
			scheme = "https"
		}
		if urls.PublicURL == "" {
			urls.PublicURL = scheme + "://" + in.Host
		}
		if urls.trustProxy == nil {
			urls.trustProxy = new(true)
		}
	case datasancev3.ServiceType(spec.Services.Controller) == corev1.ServiceTypeLoadBalancer && urls.PublicURL == "":
		if lbAddress == "" {
			return urls, true
		}
		scheme := "http"
		if https {
			scheme = "https"
		}
		urls.PublicURL = scheme + "://" + net.JoinHostPort(lbAddress, strconv.Itoa(ControllerAPIPort))
		if urls.ConsoleURL == "" {
			urls.ConsoleURL = scheme + "://" + bracketIPv6(lbAddress)
		}
	}
	if urls.ConsoleURL == "" {
		urls.ConsoleURL = urls.PublicURL
	}
	return urls, false
}

// bracketIPv6 puts an IPv6 address in brackets for use in a URL.
func bracketIPv6(host string) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]"
	}
	return host
}

// ControllerScheme is https when the Controller pod serves TLS (spec.controller.https).
func ControllerScheme(spec *datasancev3.ControlPlaneSpec) string {
	if spec.ControllerHTTPS() {
		return "https"
	}
	return "http"
}
