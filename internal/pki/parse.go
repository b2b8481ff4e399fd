package pki

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"
)

// ParseKeyPair parses the tls.crt and tls.key of a Secret, typically a
// bring-your-own CA (docs/controlplane.md#certificate-parameters, docs/controlplane.md#nats-tls-secrets).
//
// certPEM holds one or more CERTIFICATE blocks; the first one is the
// certificate the key belongs to, further ones are kept as its chain in the
// returned CertPEM. Other block types are ignored. keyPEM must hold an RSA key
// as PKCS#1 ("RSA PRIVATE KEY") or unencrypted PKCS#8 ("PRIVATE KEY"); it is
// returned re-encoded as PKCS#1, the form the router image reads.
//
// Only RSA is accepted: every key this operator generates or hands to the
// router and NATS images is RSA (docs/controlplane.md#certificate-parameters), so an ECDSA or Ed25519 key is
// rejected with ErrUnsupportedKey rather than failing later inside a pod.
//
// Errors wrap ErrInvalidPEM, ErrUnsupportedKey or ErrKeyMismatch. Arbitrary
// input never panics.
func ParseKeyPair(certPEM, keyPEM []byte) (*KeyPair, error) {
	certs, err := parseCertificates(certPEM)
	if err != nil {
		return nil, fmt.Errorf("parse certificate: %w", err)
	}
	key, err := parseRSAPrivateKey(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("parse private key: %w", err)
	}
	cert := certs[0]
	pub, ok := cert.PublicKey.(*rsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("parse certificate: %w: public key is %T, want RSA", ErrUnsupportedKey, cert.PublicKey)
	}
	if !key.PublicKey.Equal(pub) {
		return nil, fmt.Errorf("match key to certificate %q: %w", cert.Subject.CommonName, ErrKeyMismatch)
	}
	return &KeyPair{
		CertPEM: encodeCertificates(certs...),
		KeyPEM:  encodeRSAKey(key),
		Cert:    cert,
		Key:     key,
	}, nil
}

// ParseCA is ParseKeyPair for a CA Secret: it additionally requires the
// certificate to be a CA (basic constraints) with the certSign key usage,
// otherwise the error wraps ErrNotCA. Expiry is not checked here; the
// caller compares Cert.NotAfter with its clock.
func ParseCA(certPEM, keyPEM []byte) (*KeyPair, error) {
	kp, err := ParseKeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	if err := checkCA(kp.Cert); err != nil {
		return nil, err
	}
	return kp, nil
}

func checkCA(cert *x509.Certificate) error {
	if !cert.BasicConstraintsValid || !cert.IsCA {
		return fmt.Errorf("check CA %q: %w: basic constraints do not allow signing", cert.Subject.CommonName, ErrNotCA)
	}
	if cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return fmt.Errorf("check CA %q: %w: key usage lacks certSign", cert.Subject.CommonName, ErrNotCA)
	}
	return nil
}

func parseCertificates(data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != certificateBlockType {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%w: certificate %d: %w", ErrInvalidPEM, len(certs)+1, err)
		}
		certs = append(certs, cert)
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("%w: no %s block found", ErrInvalidPEM, certificateBlockType)
	}
	return certs, nil
}

// parseRSAPrivateKey decodes the first "... PRIVATE KEY" block of data.
func parseRSAPrivateKey(data []byte) (*rsa.PrivateKey, error) {
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return nil, fmt.Errorf("%w: no PRIVATE KEY block found", ErrInvalidPEM)
		}
		if !strings.HasSuffix(block.Type, "PRIVATE KEY") {
			continue // e.g. "EC PARAMETERS" written by openssl ecparam
		}
		if block.Type == "ENCRYPTED PRIVATE KEY" || strings.Contains(block.Headers["Proc-Type"], "ENCRYPTED") {
			return nil, fmt.Errorf("%w: key is encrypted", ErrUnsupportedKey)
		}
		switch block.Type {
		case rsaKeyBlockType:
			key, err := x509.ParsePKCS1PrivateKey(block.Bytes)
			if err == nil {
				return key, nil
			}
			// Some tools label PKCS#8 content "RSA PRIVATE KEY"; accept it if it is RSA.
			if key, err8 := parsePKCS8RSA(block.Bytes); err8 == nil {
				return key, nil
			}
			return nil, fmt.Errorf("%w: %s: %w", ErrInvalidPEM, block.Type, err)
		case "PRIVATE KEY":
			return parsePKCS8RSA(block.Bytes)
		default:
			return nil, fmt.Errorf("%w: %q block, want RSA", ErrUnsupportedKey, block.Type)
		}
	}
}

func parsePKCS8RSA(der []byte) (*rsa.PrivateKey, error) {
	key, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("%w: PKCS#8: %w", ErrInvalidPEM, err)
	}
	rsaKey, ok := key.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%w: PKCS#8 key is %T, want RSA", ErrUnsupportedKey, key)
	}
	return rsaKey, nil
}
