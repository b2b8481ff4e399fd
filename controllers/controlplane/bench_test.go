package controlplane

import (
	"testing"

	"k8s.io/utils/ptr"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
)

// The pure builders run on every pass of every ControlPlane, ready ones included.

func BenchmarkControllerDeployment(b *testing.B) {
	cp := testCP(func(cp *datasancev3.ControlPlane) {
		cp.Spec.Controller.HTTPS = ptr.To(true)
		cp.Spec.Controller.SecretName = "tls"
		cp.Spec.Events.AuditEnabled = ptr.To(true)
	})
	urls := controllerURLs{publicURL: "https://p", consoleURL: "https://p"}
	hashes := controllerPodHashes{credentials: hashData(controllerCredentials(&cp.Spec, "pw"))}
	b.ReportAllocs()
	for b.Loop() {
		_ = controllerDeployment(cp, testImages, urls, hashes)
	}
}

func BenchmarkRouterDeployment(b *testing.B) {
	cp := testCP()
	b.ReportAllocs()
	for b.Loop() {
		_ = routerDeployment(cp, "r:1", "hash")
	}
}

func BenchmarkControllerCredentialsHash(b *testing.B) {
	cp := testCP()
	b.ReportAllocs()
	for b.Loop() {
		_ = hashData(controllerCredentials(&cp.Spec, "pw"))
	}
}

// The no-write check of every apply: the JSON comparison of two Deployments.
func BenchmarkSameJSONDeployment(b *testing.B) {
	cp := testCP()
	a := controllerDeployment(cp, testImages, controllerURLs{publicURL: "http://p"}, controllerPodHashes{credentials: "h"})
	c := controllerDeployment(cp, testImages, controllerURLs{publicURL: "http://p"}, controllerPodHashes{credentials: "h"})
	b.ReportAllocs()
	for b.Loop() {
		if !sameJSON(a, c) {
			b.Fatal("equal Deployments compare unequal")
		}
	}
}
