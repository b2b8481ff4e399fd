package controlplane

import (
	"net"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
)

// resolveControllerURLs fills CONTROLLER_PUBLIC_URL, CONSOLE_URL and TRUST_PROXY (spec §4.5).
// lbAddress is the controller Service's LoadBalancer address, if any. wait is true when the
// Service is a LoadBalancer without an address and no publicUrl is set: the Deployment must not
// be built yet.
func resolveControllerURLs(spec *datasancev3.ControlPlaneSpec, lbAddress string) (urls controllerURLs, wait bool) {
	urls = controllerURLs{publicURL: spec.Controller.PublicURL, consoleURL: spec.Controller.ConsoleURL, trustProxy: spec.Controller.TrustProxy}
	https := spec.ControllerHTTPS()
	switch {
	case spec.ControllerIngressMode():
		in := spec.Ingresses.Controller
		scheme := "http"
		if https || in.SecretName != "" {
			scheme = "https"
		}
		if urls.publicURL == "" {
			urls.publicURL = scheme + "://" + in.Host
		}
		if urls.trustProxy == nil {
			urls.trustProxy = new(true)
		}
	case datasancev3.ServiceType(spec.Services.Controller) == corev1.ServiceTypeLoadBalancer && urls.publicURL == "":
		if lbAddress == "" {
			return urls, true
		}
		scheme := "http"
		if https {
			scheme = "https"
		}
		urls.publicURL = scheme + "://" + net.JoinHostPort(lbAddress, strconv.Itoa(controllerAPIPort))
		if urls.consoleURL == "" {
			urls.consoleURL = scheme + "://" + bracketIPv6(lbAddress)
		}
	}
	if urls.consoleURL == "" {
		urls.consoleURL = urls.publicURL
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
