package pki_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/kubeopera/kubeopera-operator/internal/pki"
)

func TestParseKeyPair(t *testing.T) {
	ca := mustCA(t, "router-site-ca")
	leaf := mustLeaf(t, ca, "iofog-router", "router.ns.svc.cluster.local")
	pkcs8 := pemEncode("PRIVATE KEY", mustPKCS8(t, ca.Key))
	mislabelledPKCS8 := pemEncode("RSA PRIVATE KEY", mustPKCS8(t, ca.Key))
	chain := slices.Concat(leaf.CertPEM, ca.CertPEM)

	tests := []struct {
		name        string
		cert, key   []byte
		wantCN      string
		wantCertPEM []byte
		wantKeyPEM  []byte
	}{
		{name: "PKCS#1 CA", cert: ca.CertPEM, key: ca.KeyPEM, wantCN: "router-site-ca", wantCertPEM: ca.CertPEM, wantKeyPEM: ca.KeyPEM},
		{name: "PKCS#8 key is re-encoded as PKCS#1", cert: ca.CertPEM, key: pkcs8, wantCN: "router-site-ca", wantCertPEM: ca.CertPEM, wantKeyPEM: ca.KeyPEM},
		{name: "PKCS#8 labelled RSA PRIVATE KEY", cert: ca.CertPEM, key: mislabelledPKCS8, wantCN: "router-site-ca", wantCertPEM: ca.CertPEM, wantKeyPEM: ca.KeyPEM},
		{name: "leaf", cert: leaf.CertPEM, key: leaf.KeyPEM, wantCN: "iofog-router", wantCertPEM: leaf.CertPEM, wantKeyPEM: leaf.KeyPEM},
		{name: "chain keeps every certificate, first one owns the key", cert: chain, key: leaf.KeyPEM, wantCN: "iofog-router", wantCertPEM: chain, wantKeyPEM: leaf.KeyPEM},
		{
			name:   "text around blocks and unrelated blocks are ignored",
			cert:   slices.Concat([]byte("subject=CN = router-site-ca\n"), pemEncode("TRUSTED COMMENT", []byte("x")), ca.CertPEM),
			key:    slices.Concat([]byte("Bag Attributes\n    localKeyID: 01\n"), pemEncode("EC PARAMETERS", []byte{6, 1, 0}), ca.KeyPEM),
			wantCN: "router-site-ca", wantCertPEM: ca.CertPEM, wantKeyPEM: ca.KeyPEM,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			kp, err := pki.ParseKeyPair(tt.cert, tt.key)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(kp.Cert.Subject.CommonName).To(Equal(tt.wantCN))
			g.Expect(kp.CertPEM).To(Equal(tt.wantCertPEM))
			g.Expect(kp.KeyPEM).To(Equal(tt.wantKeyPEM))
			g.Expect(kp.Key.PublicKey.Equal(kp.Cert.PublicKey)).To(BeTrue())
		})
	}
}

func TestParseKeyPairErrors(t *testing.T) {
	ca := mustCA(t, "router-site-ca")
	leaf := mustLeaf(t, ca, "iofog-router", "router.ns.svc.cluster.local")
	ecKey, ecCert := ecdsaSelfSigned(t)
	ecPKCS8 := pemEncode("PRIVATE KEY", mustPKCS8(t, ecKey))
	ecSEC1, err := x509.MarshalECPrivateKey(ecKey)
	if err != nil {
		t.Fatal(err)
	}
	legacyEncrypted := pem.EncodeToMemory(&pem.Block{
		Type:    "RSA PRIVATE KEY",
		Headers: map[string]string{"Proc-Type": "4,ENCRYPTED", "DEK-Info": "AES-256-CBC,00112233445566778899AABBCCDDEEFF"},
		Bytes:   []byte("ciphertext"),
	})

	tests := []struct {
		name      string
		cert, key []byte
		wantErr   error
	}{
		{"empty", nil, nil, pki.ErrInvalidPEM},
		{"garbage", []byte("not a certificate"), []byte("not a key"), pki.ErrInvalidPEM},
		{"truncated certificate PEM", ca.CertPEM[:len(ca.CertPEM)/2], ca.KeyPEM, pki.ErrInvalidPEM},
		{"truncated key PEM", ca.CertPEM, ca.KeyPEM[:len(ca.KeyPEM)-40], pki.ErrInvalidPEM},
		{"certificate DER corrupted", pemEncode("CERTIFICATE", []byte("\x30\x03\x02\x01\x01")), ca.KeyPEM, pki.ErrInvalidPEM},
		{"key DER corrupted", ca.CertPEM, pemEncode("RSA PRIVATE KEY", []byte("\x30\x00")), pki.ErrInvalidPEM},
		{"PKCS#8 DER corrupted", ca.CertPEM, pemEncode("PRIVATE KEY", []byte("\x30\x00")), pki.ErrInvalidPEM},
		{"arguments swapped", ca.KeyPEM, ca.CertPEM, pki.ErrInvalidPEM},
		{"no key block", ca.CertPEM, ca.CertPEM, pki.ErrInvalidPEM},
		{"key of another certificate", ca.CertPEM, leaf.KeyPEM, pki.ErrKeyMismatch},
		{"chain with the CA's key", slices.Concat(leaf.CertPEM, ca.CertPEM), ca.KeyPEM, pki.ErrKeyMismatch},
		{"ECDSA PKCS#8 key", ecCert, ecPKCS8, pki.ErrUnsupportedKey},
		{"ECDSA SEC1 key", ecCert, pemEncode("EC PRIVATE KEY", ecSEC1), pki.ErrUnsupportedKey},
		{"ECDSA certificate with an RSA key", ecCert, ca.KeyPEM, pki.ErrUnsupportedKey},
		{"PKCS#8 encrypted key", ca.CertPEM, pemEncode("ENCRYPTED PRIVATE KEY", []byte("ciphertext")), pki.ErrUnsupportedKey},
		{"legacy encrypted PEM key", ca.CertPEM, legacyEncrypted, pki.ErrUnsupportedKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			kp, err := pki.ParseKeyPair(tt.cert, tt.key)
			g.Expect(err).To(MatchError(tt.wantErr))
			g.Expect(kp).To(BeNil())

			kp, err = pki.ParseCA(tt.cert, tt.key)
			g.Expect(err).To(MatchError(tt.wantErr))
			g.Expect(kp).To(BeNil())
		})
	}
}

func TestParseCA(t *testing.T) {
	ca := mustCA(t, "nats-site-ca")
	leaf := mustLeaf(t, ca, "iofog-nats", "nats.ns.svc.cluster.local")
	noCertSign := signedByCA(t, ca, &x509.Certificate{
		Subject:               pkix.Name{CommonName: "ca-without-certsign"},
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature,
	})

	t.Run("generated CA", func(t *testing.T) {
		g := NewWithT(t)
		kp, err := pki.ParseCA(ca.CertPEM, ca.KeyPEM)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(kp.Cert.Equal(ca.Cert)).To(BeTrue())
	})
	t.Run("leaf is not a CA", func(t *testing.T) {
		g := NewWithT(t)
		_, err := pki.ParseCA(leaf.CertPEM, leaf.KeyPEM)
		g.Expect(err).To(MatchError(pki.ErrNotCA))
		_, err = pki.ParseKeyPair(leaf.CertPEM, leaf.KeyPEM)
		g.Expect(err).NotTo(HaveOccurred(), "ParseKeyPair does not require a CA")
	})
	t.Run("CA without certSign usage", func(t *testing.T) {
		g := NewWithT(t)
		_, err := pki.ParseCA(noCertSign.CertPEM, noCertSign.KeyPEM)
		g.Expect(err).To(MatchError(pki.ErrNotCA))
		_, err = pki.GenerateLeaf(noCertSign, "iofog-nats", []string{"a"}, testNow, 0, fastKeys(t))
		g.Expect(err).To(MatchError(pki.ErrNotCA))
	})
	t.Run("BYO CA with a PKCS#8 key signs verifiable leaves", func(t *testing.T) {
		g := NewWithT(t)
		byo, err := pki.ParseCA(ca.CertPEM, pemEncode("PRIVATE KEY", mustPKCS8(t, ca.Key)))
		g.Expect(err).NotTo(HaveOccurred())
		leaf, err := pki.GenerateLeaf(byo, "iofog-nats", []string{"nats.ns.svc.cluster.local"}, testNow, 0, fastKeys(t))
		g.Expect(err).NotTo(HaveOccurred())
		roots := x509.NewCertPool()
		roots.AddCert(ca.Cert)
		_, err = leaf.Cert.Verify(x509.VerifyOptions{DNSName: "nats.ns.svc.cluster.local", Roots: roots, CurrentTime: testNow})
		g.Expect(err).NotTo(HaveOccurred())
	})
}

func pemEncode(blockType string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der})
}

func mustPKCS8(tb testing.TB, key any) []byte {
	tb.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	return der
}

// ecdsaSelfSigned returns a P-256 key and a self-signed CA certificate (PEM).
func ecdsaSelfSigned(tb testing.TB) (*ecdsa.PrivateKey, []byte) {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "ec-ca"},
		NotBefore:             testNow,
		NotAfter:              testNow.Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	return key, pemEncode("CERTIFICATE", der)
}

// signedByCA issues tmpl (with a pool key) from ca, bypassing GenerateLeaf's
// fixed profile, and returns it as a key pair.
func signedByCA(tb testing.TB, ca *pki.KeyPair, tmpl *x509.Certificate) *pki.KeyPair {
	tb.Helper()
	donor := mustCA(tb, "key-donor") // any fresh key pair from the pool
	tmpl.SerialNumber = big.NewInt(42)
	tmpl.NotBefore, tmpl.NotAfter = testNow, testNow.Add(time.Hour)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &donor.Key.PublicKey, ca.Key)
	if err != nil {
		tb.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	return &pki.KeyPair{CertPEM: pemEncode("CERTIFICATE", der), KeyPEM: donor.KeyPEM, Cert: cert, Key: donor.Key}
}
