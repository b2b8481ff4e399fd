package pki_test

import (
	"crypto/rsa"
	"crypto/x509"
	"errors"
	"net"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	. "github.com/onsi/gomega"

	"github.com/kubeopera/kubeopera-operator/internal/pki"
)

var serverAndClient = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}

func TestGenerateCA(t *testing.T) {
	tests := []struct {
		name         string
		validity     time.Duration
		wantNotAfter time.Time
	}{
		{name: "router-site-ca", validity: 0, wantNotAfter: testNow.Add(pki.DefaultValidity)},
		{name: "nats-site-ca", validity: -time.Hour, wantNotAfter: testNow.Add(pki.DefaultValidity)},
		{name: "default-router-local-ca", validity: 48 * time.Hour, wantNotAfter: testNow.Add(48 * time.Hour)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ca, err := pki.GenerateCA(tt.name, testNow, tt.validity, fastKeys(t))
			g.Expect(err).NotTo(HaveOccurred())

			c := ca.Cert
			g.Expect(c.Subject.CommonName).To(Equal(tt.name))
			g.Expect(c.DNSNames).To(Equal([]string{tt.name}))
			g.Expect(c.IPAddresses).To(BeEmpty())
			g.Expect(c.IsCA).To(BeTrue())
			g.Expect(c.BasicConstraintsValid).To(BeTrue())
			g.Expect(c.KeyUsage).To(Equal(x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageCertSign))
			g.Expect(c.ExtKeyUsage).To(Equal(serverAndClient))
			g.Expect(c.NotBefore).To(BeTemporally("==", testNow))
			g.Expect(c.NotAfter).To(BeTemporally("==", tt.wantNotAfter))
			g.Expect(c.CheckSignatureFrom(c)).To(Succeed(), "self-signed")
			g.Expect(c.SerialNumber.Sign()).To(Equal(1))
			g.Expect(c.SerialNumber.BitLen()).To(BeNumerically("<=", 128))

			g.Expect(string(ca.KeyPEM)).To(HavePrefix("-----BEGIN RSA PRIVATE KEY-----\n"))
			g.Expect(string(ca.CertPEM)).To(HavePrefix("-----BEGIN CERTIFICATE-----\n"))
			g.Expect(ca.Key.PublicKey.Equal(c.PublicKey)).To(BeTrue())
		})
	}
}

// The default key source (no WithKeyGenerator) really produces RSA 2048.
func TestGenerateCADefaultKeySource(t *testing.T) {
	g := NewWithT(t)
	ca, err := pki.GenerateCA("router-site-ca", testNow, 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ca.Key.N.BitLen()).To(Equal(2048))
	g.Expect(ca.Key.Validate()).To(Succeed())
}

func TestGenerateLeaf(t *testing.T) {
	ca := mustCA(t, "nats-site-ca")
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)

	tests := []struct {
		name     string
		cn       string
		hosts    []string
		validity time.Duration
		wantDNS  []string
		wantIPs  []string
		// verifyAs are names a TLS client would dial; each must verify.
		verifyAs []string
	}{
		{
			name:     "router server with LB IP",
			cn:       "iofog-router",
			hosts:    []string{"router.ns.svc.cluster.local", "203.0.113.10"},
			wantDNS:  []string{"router.ns.svc.cluster.local", "203.0.113.10"},
			wantIPs:  []string{"203.0.113.10"},
			verifyAs: []string{"router.ns.svc.cluster.local", "203.0.113.10"},
		},
		{
			name:     "router server with LB hostname",
			cn:       "iofog-router-local",
			hosts:    []string{"router.ns.svc.cluster.local", "lb-123.elb.example.com"},
			wantDNS:  []string{"router.ns.svc.cluster.local", "lb-123.elb.example.com"},
			verifyAs: []string{"lb-123.elb.example.com"},
		},
		{
			name: "nats server with wildcard and IPv6",
			cn:   "iofog-nats",
			hosts: []string{
				"nats-0.nats-headless", "nats-1.nats-headless",
				"*.nats-headless.ns.svc.cluster.local",
				"nats.ns.svc.cluster.local", "nats-server.ns.svc.cluster.local",
				"2001:db8::1",
			},
			wantDNS: []string{
				"nats-0.nats-headless", "nats-1.nats-headless",
				"*.nats-headless.ns.svc.cluster.local",
				"nats.ns.svc.cluster.local", "nats-server.ns.svc.cluster.local",
				"2001:db8::1",
			},
			wantIPs:  []string{"2001:db8::1"},
			verifyAs: []string{"nats-1.nats-headless", "nats-7.nats-headless.ns.svc.cluster.local", "2001:db8::1"},
		},
		{
			name:     "IP only",
			cn:       "iofog-nats-mqtt",
			hosts:    []string{"10.0.0.5"},
			wantDNS:  []string{"10.0.0.5"},
			wantIPs:  []string{"10.0.0.5"},
			verifyAs: []string{"10.0.0.5"},
		},
		{
			name:     "duplicates and empty hosts are dropped, order kept",
			cn:       "iofog-router",
			hosts:    []string{"b.example", "", "a.example", " b.example ", "  ", "a.example"},
			validity: time.Hour,
			wantDNS:  []string{"b.example", "a.example"},
			verifyAs: []string{"a.example", "b.example"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			leaf, err := pki.GenerateLeaf(ca, tt.cn, tt.hosts, testNow, tt.validity, fastKeys(t))
			g.Expect(err).NotTo(HaveOccurred())

			c := leaf.Cert
			g.Expect(c.Subject.CommonName).To(Equal(tt.cn))
			g.Expect(c.Issuer.CommonName).To(Equal("nats-site-ca"))
			g.Expect(c.DNSNames).To(Equal(tt.wantDNS))
			g.Expect(ipStrings(c.IPAddresses)).To(Equal(tt.wantIPs))
			g.Expect(c.IsCA).To(BeFalse())
			g.Expect(c.KeyUsage).To(Equal(x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment))
			g.Expect(c.ExtKeyUsage).To(Equal(serverAndClient))
			g.Expect(c.SerialNumber.Sign()).To(Equal(1))
			g.Expect(c.SerialNumber.BitLen()).To(BeNumerically("<=", 128))
			g.Expect(c.AuthorityKeyId).To(Equal(ca.Cert.SubjectKeyId))

			validity := tt.validity
			if validity == 0 {
				validity = pki.DefaultValidity
			}
			g.Expect(c.NotBefore).To(BeTemporally("==", testNow))
			g.Expect(c.NotAfter).To(BeTemporally("==", testNow.Add(validity)))
			g.Expect(string(leaf.KeyPEM)).To(HavePrefix("-----BEGIN RSA PRIVATE KEY-----\n"))

			for _, name := range tt.verifyAs {
				for _, usage := range serverAndClient {
					_, err := c.Verify(x509.VerifyOptions{
						DNSName:     name,
						Roots:       roots,
						CurrentTime: testNow.Add(time.Minute),
						KeyUsages:   []x509.ExtKeyUsage{usage},
					})
					g.Expect(err).NotTo(HaveOccurred(), "verify as %q for usage %v", name, usage)
				}
			}
			// Outside the validity window the chain no longer verifies.
			_, err = c.Verify(x509.VerifyOptions{DNSName: tt.verifyAs[0], Roots: roots, CurrentTime: testNow.Add(-time.Minute)})
			g.Expect(err).To(HaveOccurred())
			// A name that is not a SAN does not verify.
			_, err = c.Verify(x509.VerifyOptions{DNSName: "evil.example.org", Roots: roots, CurrentTime: testNow.Add(time.Minute)})
			g.Expect(err).To(HaveOccurred())
		})
	}
}

func TestGenerateLeafSerialsDiffer(t *testing.T) {
	g := NewWithT(t)
	ca := mustCA(t, "router-site-ca")
	a := mustLeaf(t, ca, "iofog-router", "a.example")
	b := mustLeaf(t, ca, "iofog-router", "a.example")
	g.Expect(a.Cert.SerialNumber.Cmp(b.Cert.SerialNumber)).NotTo(Equal(0))
}

func TestGenerateErrors(t *testing.T) {
	ca := mustCA(t, "router-site-ca")
	leaf := mustLeaf(t, ca, "iofog-router", "router.ns.svc.cluster.local")
	randErr := errors.New("entropy exhausted")

	tests := []struct {
		name    string
		run     func() (*pki.KeyPair, error)
		wantErr error // nil: any error
	}{
		{"CA without common name", func() (*pki.KeyPair, error) {
			return pki.GenerateCA(" ", testNow, 0, fastKeys(t))
		}, nil},
		{"leaf without common name", func() (*pki.KeyPair, error) {
			return pki.GenerateLeaf(ca, "", []string{"a"}, testNow, 0, fastKeys(t))
		}, nil},
		{"leaf without hosts", func() (*pki.KeyPair, error) {
			return pki.GenerateLeaf(ca, "iofog-router", []string{"", " "}, testNow, 0, fastKeys(t))
		}, nil},
		{"nil CA", func() (*pki.KeyPair, error) {
			return pki.GenerateLeaf(nil, "iofog-router", []string{"a"}, testNow, 0, fastKeys(t))
		}, pki.ErrNotCA},
		{"leaf used as CA", func() (*pki.KeyPair, error) {
			return pki.GenerateLeaf(leaf, "iofog-router", []string{"a"}, testNow, 0, fastKeys(t))
		}, pki.ErrNotCA},
		{"failing random source", func() (*pki.KeyPair, error) {
			return pki.GenerateCA("router-site-ca", testNow, 0, fastKeys(t), pki.WithRand(iotest.ErrReader(randErr)))
		}, randErr},
		{"failing key generator", func() (*pki.KeyPair, error) {
			return pki.GenerateCA("router-site-ca", testNow, 0, pki.WithKeyGenerator(failingKeys(randErr)))
		}, randErr},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			kp, err := tt.run()
			g.Expect(err).To(HaveOccurred())
			g.Expect(kp).To(BeNil())
			if tt.wantErr != nil {
				g.Expect(err).To(MatchError(tt.wantErr))
			}
		})
	}
}

func TestSecretData(t *testing.T) {
	g := NewWithT(t)
	ca := mustCA(t, "router-site-ca")
	leaf := mustLeaf(t, ca, "iofog-router", "router.ns.svc.cluster.local")

	caData := pki.SecretData(ca, nil)
	g.Expect(caData).To(HaveLen(3))
	g.Expect(caData[pki.TLSCertKey]).To(Equal(ca.CertPEM))
	g.Expect(caData[pki.TLSPrivateKeyKey]).To(Equal(ca.KeyPEM))
	g.Expect(caData[pki.CACertKey]).To(Equal(ca.CertPEM), "a CA's ca.crt is its own certificate")

	leafData := pki.SecretData(leaf, ca.CertPEM)
	g.Expect(leafData).To(HaveKeyWithValue("tls.crt", leaf.CertPEM))
	g.Expect(leafData).To(HaveKeyWithValue("tls.key", leaf.KeyPEM))
	g.Expect(leafData).To(HaveKeyWithValue("ca.crt", ca.CertPEM))

	leafData["tls.crt"][0] = 'X'
	g.Expect(leaf.CertPEM[0]).To(Equal(byte('-')), "SecretData returns copies")

	g.Expect(pki.SecretData(nil, ca.CertPEM)).To(BeNil())
}

func ipStrings(ips []net.IP) []string {
	var out []string
	for _, ip := range ips {
		out = append(out, ip.String())
	}
	return out
}

func failingKeys(err error) pki.KeyGenerator {
	return func(int) (*rsa.PrivateKey, error) { return nil, err }
}

// TestKeyPEMIsPKCS1 guards the upstream router parser's requirement.
func TestKeyPEMIsPKCS1(t *testing.T) {
	g := NewWithT(t)
	ca := mustCA(t, "router-site-ca")
	g.Expect(strings.Count(string(ca.KeyPEM), "-----BEGIN RSA PRIVATE KEY-----")).To(Equal(1))
	key, err := x509.ParsePKCS1PrivateKey(pemBytes(t, ca.KeyPEM))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(key.Equal(ca.Key)).To(BeTrue())
}
