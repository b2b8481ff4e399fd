package controlplane

import (
	"testing"

	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// The pure builders run on every pass of every ControlPlane, ready ones included.

// The no-write check of every apply: the JSON comparison of two Deployments.
func BenchmarkSameJSONDeployment(b *testing.B) {
	cp := testfixture.ControlPlane()
	a := resources.ControllerDeployment(cp, testImages, resources.ControllerURLs{PublicURL: "http://p"}, resources.ControllerPodHashes{Credentials: "h"})
	c := resources.ControllerDeployment(cp, testImages, resources.ControllerURLs{PublicURL: "http://p"}, resources.ControllerPodHashes{Credentials: "h"})
	b.ReportAllocs()
	for b.Loop() {
		if !sameJSON(a, c) {
			b.Fatal("equal Deployments compare unequal")
		}
	}
}
