package resources

import (
	"testing"

	"k8s.io/utils/ptr"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

func BenchmarkControllerDeployment(b *testing.B) {
	cp := testfixture.ControlPlane(func(cp *datasancev3.ControlPlane) {
		cp.Spec.Controller.HTTPS = ptr.To(true)
		cp.Spec.Controller.SecretName = "tls"
		cp.Spec.Events.AuditEnabled = ptr.To(true)
	})
	urls := ControllerURLs{PublicURL: "https://p", ConsoleURL: "https://p"}
	hashes := ControllerPodHashes{Credentials: HashData(ControllerCredentials(&cp.Spec, "pw"))}
	b.ReportAllocs()
	for b.Loop() {
		_ = ControllerDeployment(cp, testImages, urls, hashes)
	}
}

func BenchmarkRouterDeployment(b *testing.B) {
	cp := testfixture.ControlPlane()
	b.ReportAllocs()
	for b.Loop() {
		_ = RouterDeployment(cp, "r:1", "hash")
	}
}

func BenchmarkControllerCredentialsHash(b *testing.B) {
	cp := testfixture.ControlPlane()
	b.ReportAllocs()
	for b.Loop() {
		_ = HashData(ControllerCredentials(&cp.Spec, "pw"))
	}
}
