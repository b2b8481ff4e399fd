package pki_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/kubeopera/kubeopera-operator/internal/pki"
)

// FuzzParseKeyPair checks that arbitrary Secret contents never panic, that
// every failure is classified by one of the sentinel errors, and that a
// successful parse is stable under re-parsing its normalised output.
func FuzzParseKeyPair(f *testing.F) {
	ca := mustCA(f, "router-site-ca")
	leaf := mustLeaf(f, ca, "iofog-router", "router.ns.svc.cluster.local", "203.0.113.10")
	ecKey, ecCert := ecdsaSelfSigned(f)

	f.Add(ca.CertPEM, ca.KeyPEM)
	f.Add(leaf.CertPEM, leaf.KeyPEM)
	f.Add(slices.Concat(leaf.CertPEM, ca.CertPEM), leaf.KeyPEM)
	f.Add(ca.CertPEM, pemEncode("PRIVATE KEY", mustPKCS8(f, ca.Key)))
	f.Add(ecCert, pemEncode("PRIVATE KEY", mustPKCS8(f, ecKey)))
	f.Add(ca.CertPEM, leaf.KeyPEM)
	f.Add(ca.CertPEM[:len(ca.CertPEM)/2], ca.KeyPEM[:len(ca.KeyPEM)/3])
	f.Add(ca.KeyPEM, ca.CertPEM)
	f.Add([]byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), []byte("-----BEGIN RSA PRIVATE KEY-----\n-----END RSA PRIVATE KEY-----\n"))
	f.Add([]byte{}, []byte{})
	f.Add([]byte("garbage"), []byte{0xff, 0x00, 0x2d})

	f.Fuzz(func(t *testing.T, certPEM, keyPEM []byte) {
		kp, err := pki.ParseKeyPair(certPEM, keyPEM)
		if err != nil {
			if !errors.Is(err, pki.ErrInvalidPEM) && !errors.Is(err, pki.ErrUnsupportedKey) && !errors.Is(err, pki.ErrKeyMismatch) {
				t.Fatalf("unclassified error: %v", err)
			}
			if kp != nil {
				t.Fatalf("key pair returned with error %v", err)
			}
			return
		}
		if kp.Cert == nil || kp.Key == nil || len(kp.CertPEM) == 0 || len(kp.KeyPEM) == 0 {
			t.Fatalf("incomplete key pair: %+v", kp)
		}
		again, err := pki.ParseKeyPair(kp.CertPEM, kp.KeyPEM)
		if err != nil {
			t.Fatalf("re-parse normalised output: %v", err)
		}
		if !again.Cert.Equal(kp.Cert) || !again.Key.Equal(kp.Key) {
			t.Fatal("re-parse changed the key pair")
		}
		_, _ = pki.ParseCA(certPEM, keyPEM) // must not panic either
	})
}
