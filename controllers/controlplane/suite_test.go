package controlplane_test

import (
	"crypto/rand"
	"crypto/rsa"
	"flag"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

// env is the package's API server (one per package, started in TestMain); nil when the envtest
// suites are skipped.
var env *testenv.Env

func TestMain(m *testing.M) {
	// Logs only on request: CP_TEST_LOG=1 go test ./controllers/controlplane/...
	logs := io.Discard
	if os.Getenv("CP_TEST_LOG") != "" {
		logs = os.Stderr
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(logs), zap.UseDevMode(true)))
	// -short (make test-unit) runs the pure tests only; without -short, missing envtest
	// binaries fail the suite (testenv.MaySkipMissingTools).
	flag.Parse()
	testenv.SetDefaultParallel(suiteParallel)
	if !testing.Short() {
		// Every test leaves its Services behind (envtest runs no namespace controller): the
		// suite needs more cluster IPs than envtest's default /24 holds.
		e, code := testenv.MainStart(testenv.Options{APIServerFlags: map[string]string{"service-cluster-ip-range": "10.0.0.0/16"}})
		if e == nil && code != 0 {
			os.Exit(code)
		}
		env = e
	}
	code := m.Run()
	code = env.CheckRBACUse(code, "controllers/controlplane/rbac.go", rbacUnusedHere)
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop envtest:", err)
	}
	os.Exit(code)
}

// suiteParallel is how many of the package's tests run at once unless -parallel is given. Every
// envtest test calls t.Parallel: each has its own namespace, manager and fake Controller, and most
// of a test is waiting (for passes, for a quiet window, for a retry), so four at once fill the
// time one spends waiting, where Go's default (GOMAXPROCS: 2 on the 2-core machines this runs on)
// left the package's 48 s retry-cadence window and its bad-input cases waiting for a slot at the
// end. The tests that run real NATS servers in this process (they set $SELFNAME for the server's
// configuration parser) are not parallel.
const suiteParallel = 4

// testKeys hands out a few pre-generated RSA keys in turn, so that the suite does not spend
// seconds generating 2048-bit keys for every certificate.
var (
	keysOnce sync.Once
	keys     []*rsa.PrivateKey
	keysErr  error
	keyNext  atomic.Uint64
)

func testKeyGenerator(bits int) (*rsa.PrivateKey, error) {
	keysOnce.Do(func() {
		for range 4 {
			k, err := rsa.GenerateKey(rand.Reader, bits)
			if err != nil {
				keysErr = err
				return
			}
			keys = append(keys, k)
		}
	})
	if keysErr != nil {
		return nil, keysErr
	}
	return keys[keyNext.Add(1)%uint64(len(keys))], nil
}
