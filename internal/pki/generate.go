package pki

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"strings"
	"time"
)

// DefaultValidity is the lifetime of generated certificates when the caller
// passes a validity <= 0 ("expiration 0 ⇒ 5 years", docs/controlplane.md#certificate-parameters).
const DefaultValidity = 5 * 365 * 24 * time.Hour

// serialBits is the size of the random serial number of every certificate.
const serialBits = 128

// GenerateCA creates a self-signed CA certificate and key. The common name is
// also the certificate's only DNS SAN. The certificate is valid from now for
// validity (DefaultValidity if validity <= 0).
func GenerateCA(commonName string, now time.Time, validity time.Duration, opts ...Option) (*KeyPair, error) {
	if strings.TrimSpace(commonName) == "" {
		return nil, errors.New("generate CA: common name is empty")
	}
	o := newOptions(opts)
	tmpl, err := baseTemplate(o.rand, commonName, now, validity)
	if err != nil {
		return nil, fmt.Errorf("generate CA %q: %w", commonName, err)
	}
	tmpl.IsCA = true
	tmpl.BasicConstraintsValid = true
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageCertSign
	tmpl.DNSNames = []string{commonName}

	kp, err := sign(o, tmpl, nil)
	if err != nil {
		return nil, fmt.Errorf("generate CA %q: %w", commonName, err)
	}
	return kp, nil
}

// GenerateLeaf creates a server/client certificate signed by ca. Every
// non-empty host (surrounding spaces trimmed, duplicates removed, order kept)
// becomes a DNS SAN and, when it parses as an IP address, additionally an IP
// SAN (docs/controlplane.md#certificate-parameters). Wildcard hosts such as "*.nats-headless.ns.svc.cluster.local"
// are allowed. At least one host is required, because TLS clients ignore the
// common name. ca must be a CA key pair (see ParseCA); otherwise the error
// wraps ErrNotCA.
func GenerateLeaf(ca *KeyPair, commonName string, hosts []string, now time.Time, validity time.Duration, opts ...Option) (*KeyPair, error) {
	if strings.TrimSpace(commonName) == "" {
		return nil, errors.New("generate certificate: common name is empty")
	}
	if ca == nil || ca.Cert == nil || ca.Key == nil {
		return nil, fmt.Errorf("generate certificate %q: %w: no CA certificate and key", commonName, ErrNotCA)
	}
	if err := checkCA(ca.Cert); err != nil {
		return nil, fmt.Errorf("generate certificate %q: %w", commonName, err)
	}
	dnsNames, ips := subjectAltNames(hosts)
	if len(dnsNames) == 0 {
		return nil, fmt.Errorf("generate certificate %q: no hosts for the subject alternative names", commonName)
	}
	o := newOptions(opts)
	tmpl, err := baseTemplate(o.rand, commonName, now, validity)
	if err != nil {
		return nil, fmt.Errorf("generate certificate %q: %w", commonName, err)
	}
	tmpl.BasicConstraintsValid = true // explicitly not a CA
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	tmpl.DNSNames = dnsNames
	tmpl.IPAddresses = ips

	kp, err := sign(o, tmpl, ca)
	if err != nil {
		return nil, fmt.Errorf("generate certificate %q: %w", commonName, err)
	}
	return kp, nil
}

// subjectAltNames turns hosts into DNS names (all of them) and IP addresses
// (those that parse as one), skipping empty entries and duplicates.
func subjectAltNames(hosts []string) ([]string, []net.IP) {
	var (
		dnsNames []string
		ips      []net.IP
		seen     = make(map[string]bool, len(hosts))
	)
	for _, h := range hosts {
		h = strings.TrimSpace(h)
		if h == "" || seen[h] {
			continue
		}
		seen[h] = true
		dnsNames = append(dnsNames, h)
		if ip := net.ParseIP(h); ip != nil {
			ips = append(ips, ip)
		}
	}
	return dnsNames, ips
}

func baseTemplate(rand io.Reader, commonName string, now time.Time, validity time.Duration) (*x509.Certificate, error) {
	if validity <= 0 {
		validity = DefaultValidity
	}
	serial, err := randomSerial(rand)
	if err != nil {
		return nil, err
	}
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: commonName},
		NotBefore:    now,
		NotAfter:     now.Add(validity),
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}, nil
}

// randomSerial returns a positive random serial number of at most serialBits bits.
func randomSerial(rand io.Reader) (*big.Int, error) {
	for range 8 {
		buf := make([]byte, serialBits/8)
		if _, err := io.ReadFull(rand, buf); err != nil {
			return nil, fmt.Errorf("read random serial number: %w", err)
		}
		serial := new(big.Int).SetBytes(buf)
		if serial.Sign() > 0 {
			return serial, nil
		}
	}
	return nil, errors.New("read random serial number: random source returned only zeros")
}

// sign generates the key for tmpl and signs it with parent's key, or
// self-signs when parent is nil.
func sign(o options, tmpl *x509.Certificate, parent *KeyPair) (*KeyPair, error) {
	key, err := o.generateKey(KeyBits)
	if err != nil {
		return nil, fmt.Errorf("generate RSA key: %w", err)
	}
	if key == nil {
		return nil, errors.New("generate RSA key: key generator returned no key")
	}
	parentCert, signer := tmpl, key
	if parent != nil {
		parentCert, signer = parent.Cert, parent.Key
	}
	der, err := x509.CreateCertificate(o.rand, tmpl, parentCert, &key.PublicKey, signer)
	if err != nil {
		return nil, fmt.Errorf("sign certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse signed certificate: %w", err)
	}
	return &KeyPair{
		CertPEM: encodeCertificates(cert),
		KeyPEM:  encodeRSAKey(key),
		Cert:    cert,
		Key:     key,
	}, nil
}
