package pki_test

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/pem"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kubeopera/kubeopera-operator/internal/pki"
)

// testNow is the injected clock of every test: whole seconds, because X.509
// times have second precision.
var testNow = time.Date(2025, time.March, 4, 5, 6, 7, 0, time.UTC)

// keyPool hands out a few RSA keys generated once per test binary: RSA key
// generation dominates the run time and rsa.GenerateKey ignores a custom
// io.Reader since Go 1.26, so a pool is the way to keep tests fast.
var keyPool struct {
	once sync.Once
	keys []*rsa.PrivateKey
	err  error
	next atomic.Uint64
}

const keyPoolSize = 4

// fastKeys returns an Option drawing keys round-robin from the pool.
func fastKeys(tb testing.TB) pki.Option {
	tb.Helper()
	keyPool.once.Do(func() {
		for range keyPoolSize {
			k, err := rsa.GenerateKey(rand.Reader, pki.KeyBits)
			if err != nil {
				keyPool.err = err
				return
			}
			keyPool.keys = append(keyPool.keys, k)
		}
	})
	if keyPool.err != nil {
		tb.Fatalf("generate test keys: %v", keyPool.err)
	}
	return pki.WithKeyGenerator(func(bits int) (*rsa.PrivateKey, error) {
		if bits != pki.KeyBits {
			return nil, fmt.Errorf("test key pool only has %d-bit keys, asked for %d", pki.KeyBits, bits)
		}
		return keyPool.keys[keyPool.next.Add(1)%keyPoolSize], nil
	})
}

func mustCA(tb testing.TB, cn string) *pki.KeyPair {
	tb.Helper()
	ca, err := pki.GenerateCA(cn, testNow, 0, fastKeys(tb))
	if err != nil {
		tb.Fatalf("GenerateCA(%q): %v", cn, err)
	}
	return ca
}

func mustLeaf(tb testing.TB, ca *pki.KeyPair, cn string, hosts ...string) *pki.KeyPair {
	tb.Helper()
	leaf, err := pki.GenerateLeaf(ca, cn, hosts, testNow, 0, fastKeys(tb))
	if err != nil {
		tb.Fatalf("GenerateLeaf(%q): %v", cn, err)
	}
	return leaf
}

// pemBytes returns the DER content of the single PEM block in data.
func pemBytes(tb testing.TB, data []byte) []byte {
	tb.Helper()
	block, rest := pem.Decode(data)
	if block == nil || len(rest) != 0 {
		tb.Fatalf("want exactly one PEM block in %q", data)
	}
	return block.Bytes
}
