package pki_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/kubeopera/kubeopera-operator/internal/pki"
)

func TestRenewalTime(t *testing.T) {
	tests := []struct {
		name              string
		notBefore, expiry time.Time
		want              time.Time
	}{
		{name: "default 5-year validity", notBefore: testNow, expiry: testNow.Add(pki.DefaultValidity),
			want: testNow.Add(pki.DefaultValidity / 3 * 2)},
		{name: "90 days", notBefore: testNow, expiry: testNow.Add(90 * 24 * time.Hour), want: testNow.Add(60 * 24 * time.Hour)},
		{name: "empty lifetime is due at once", notBefore: testNow, expiry: testNow, want: testNow},
		{name: "inverted lifetime is due at once", notBefore: testNow, expiry: testNow.Add(-time.Hour), want: testNow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(pki.RenewalTime(tt.notBefore, tt.expiry)).To(BeTemporally("==", tt.want))
		})
	}
}

func TestCheckLeaf(t *testing.T) {
	ca := mustCA(t, "router-site-ca")
	otherCA := mustCA(t, "router-site-ca") // same name, other key: a replaced CA Secret
	hosts := []string{"router.ns.svc.cluster.local", "203.0.113.7"}
	leaf := mustLeaf(t, ca, "iofog-router", hosts...)
	renewAt := testNow.Add(pki.DefaultValidity / 3 * 2)

	tests := []struct {
		name  string
		ca    *pki.KeyPair
		hosts []string
		now   time.Time
		want  pki.RenewalReason
	}{
		{name: "fresh", ca: ca, hosts: hosts, now: testNow, want: pki.RenewalNotNeeded},
		{name: "one second before two thirds", ca: ca, hosts: hosts, now: renewAt.Add(-time.Second), want: pki.RenewalNotNeeded},
		{name: "at two thirds", ca: ca, hosts: hosts, now: renewAt, want: pki.RenewalDue},
		{name: "expired", ca: ca, hosts: hosts, now: testNow.Add(pki.DefaultValidity + time.Hour), want: pki.RenewalDue},
		{name: "hosts in another order", ca: ca, hosts: []string{"203.0.113.7", "router.ns.svc.cluster.local", " "}, now: testNow, want: pki.RenewalNotNeeded},
		{name: "address changed", ca: ca, hosts: []string{"router.ns.svc.cluster.local", "203.0.113.8"}, now: testNow, want: pki.RenewalHostsChanged},
		{name: "host added", ca: ca, hosts: append([]string{"nats-2.nats-headless"}, hosts...), now: testNow, want: pki.RenewalHostsChanged},
		{name: "host dropped", ca: ca, hosts: hosts[:1], now: testNow, want: pki.RenewalHostsChanged},
		{name: "IP address became a DNS name", ca: ca, hosts: []string{"router.ns.svc.cluster.local", "router.example.com"}, now: testNow, want: pki.RenewalHostsChanged},
		{name: "CA replaced", ca: otherCA, hosts: hosts, now: testNow, want: pki.RenewalIssuerChanged},
		{name: "CA replaced wins over due", ca: otherCA, hosts: hosts, now: renewAt, want: pki.RenewalIssuerChanged},
		{name: "hosts changed wins over due", ca: ca, hosts: hosts[:1], now: renewAt, want: pki.RenewalHostsChanged},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got := pki.CheckLeaf(leaf.Cert, tt.ca.Cert, tt.hosts, tt.now)
			g.Expect(got.Reason).To(Equal(tt.want))
			g.Expect(got.Needed()).To(Equal(tt.want != pki.RenewalNotNeeded))
			g.Expect(got.At).To(BeTemporally("==", renewAt), "the renewal time is reported for every decision")
		})
	}
}

func TestCheckLeafNil(t *testing.T) {
	g := NewWithT(t)
	ca := mustCA(t, "nats-site-ca")
	g.Expect(pki.CheckLeaf(nil, ca.Cert, []string{"a"}, testNow).Reason).To(Equal(pki.RenewalIssuerChanged))
	g.Expect(pki.CheckLeaf(ca.Cert, nil, []string{"a"}, testNow).Reason).To(Equal(pki.RenewalIssuerChanged))
}

func TestSignedBy(t *testing.T) {
	g := NewWithT(t)
	ca := mustCA(t, "nats-site-ca")
	other := mustCA(t, "default-nats-local-ca")
	leaf := mustLeaf(t, ca, "iofog-nats", "nats.ns.svc.cluster.local")
	g.Expect(pki.SignedBy(leaf.Cert, ca.Cert)).To(BeTrue())
	g.Expect(pki.SignedBy(ca.Cert, ca.Cert)).To(BeTrue(), "a self-signed CA signed itself")
	g.Expect(pki.SignedBy(leaf.Cert, other.Cert)).To(BeFalse())
	g.Expect(pki.SignedBy(nil, ca.Cert)).To(BeFalse())
}
