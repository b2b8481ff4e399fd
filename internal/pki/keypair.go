package pki

import (
	"bytes"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
)

// Keys of a kubernetes.io/tls Secret written by the operator.
const (
	TLSCertKey       = "tls.crt"
	TLSPrivateKeyKey = "tls.key"
	CACertKey        = "ca.crt"
)

// PEM block types written by this package.
const (
	certificateBlockType = "CERTIFICATE"
	rsaKeyBlockType      = "RSA PRIVATE KEY" // PKCS#1, the only form the router image reads
)

// KeyPair is a certificate with its RSA private key, both parsed and PEM encoded.
//
// KeyPEM is always a PKCS#1 "RSA PRIVATE KEY" block. CertPEM holds the
// certificate first, followed by any further certificates of a parsed chain.
type KeyPair struct {
	CertPEM []byte
	KeyPEM  []byte
	Cert    *x509.Certificate
	Key     *rsa.PrivateKey
}

// SecretData returns the data of a kubernetes.io/tls Secret for kp: tls.crt,
// tls.key and ca.crt. caCertPEM is the signing CA's certificate; when it is
// empty and kp is itself a CA, ca.crt is kp's own certificate (docs/controlplane.md#certificate-parameters).
// The returned slices are copies. A nil or incomplete kp yields nil.
func SecretData(kp *KeyPair, caCertPEM []byte) map[string][]byte {
	if kp == nil || len(kp.CertPEM) == 0 || len(kp.KeyPEM) == 0 {
		return nil
	}
	if len(caCertPEM) == 0 && kp.Cert != nil && kp.Cert.IsCA {
		caCertPEM = kp.CertPEM
	}
	return map[string][]byte{
		TLSCertKey:       bytes.Clone(kp.CertPEM),
		TLSPrivateKeyKey: bytes.Clone(kp.KeyPEM),
		CACertKey:        bytes.Clone(caCertPEM),
	}
}

func encodeCertificates(certs ...*x509.Certificate) []byte {
	var buf bytes.Buffer
	for _, c := range certs {
		// pem.Encode into a bytes.Buffer cannot fail.
		_ = pem.Encode(&buf, &pem.Block{Type: certificateBlockType, Bytes: c.Raw})
	}
	return buf.Bytes()
}

func encodeRSAKey(key *rsa.PrivateKey) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: rsaKeyBlockType, Bytes: x509.MarshalPKCS1PrivateKey(key)})
}
