package pki

import (
	"crypto/rand"
	"crypto/rsa"
	"io"
)

// KeyBits is the RSA modulus size of every generated key (docs/controlplane.md#certificate-parameters).
const KeyBits = 2048

// KeyGenerator returns a new RSA private key of the given size.
//
// Since Go 1.26 rsa.GenerateKey ignores its io.Reader argument (it always uses
// the system's secure source), so replacing the reader no longer makes key
// generation cheaper or deterministic. Tests that need speed inject a
// KeyGenerator that hands out pre-generated keys instead.
type KeyGenerator func(bits int) (*rsa.PrivateKey, error)

// Option customises certificate generation.
type Option func(*options)

type options struct {
	generateKey KeyGenerator
	rand        io.Reader
}

// WithKeyGenerator replaces the RSA key source (default: rsa.GenerateKey).
func WithKeyGenerator(g KeyGenerator) Option {
	return func(o *options) {
		if g != nil {
			o.generateKey = g
		}
	}
}

// WithRand replaces the randomness used for serial numbers and signing
// (default: crypto/rand.Reader).
func WithRand(r io.Reader) Option {
	return func(o *options) {
		if r != nil {
			o.rand = r
		}
	}
}

func newOptions(opts []Option) options {
	o := options{
		generateKey: func(bits int) (*rsa.PrivateKey, error) { return rsa.GenerateKey(rand.Reader, bits) },
		rand:        rand.Reader,
	}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}
