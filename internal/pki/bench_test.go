package pki_test

import (
	"testing"

	"github.com/kubeopera/kubeopera-operator/internal/pki"
)

// The benchmarks use the real key source: RSA 2048 generation is the cost
// the reconcilers pay on a first install (four CAs/leaves per component).

func BenchmarkGenerateCA(b *testing.B) {
	for b.Loop() {
		if _, err := pki.GenerateCA("router-site-ca", testNow, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGenerateLeaf(b *testing.B) {
	ca := mustCA(b, "nats-site-ca")
	hosts := []string{
		"nats-0.nats-headless", "nats-1.nats-headless", "nats-2.nats-headless",
		"*.nats-headless.ns.svc.cluster.local", "nats.ns.svc.cluster.local",
		"nats-server.ns.svc.cluster.local", "203.0.113.10",
	}
	for b.Loop() {
		if _, err := pki.GenerateLeaf(ca, "iofog-nats", hosts, testNow, 0); err != nil {
			b.Fatal(err)
		}
	}
}
