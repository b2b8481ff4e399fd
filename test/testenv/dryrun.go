package testenv

// The rendered-objects dry-run properties (internal/render for KubeOperaApp,
// controllers/controlplane/internal/resources for ControlPlane) are Go fuzz targets sharing what
// is here: the choice stream that turns the fuzzer's bytes into a generator's draws, one API
// server per run (under -fuzz the coordinator's, shared with its workers), and the admission
// step.

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ChoiceRand is a generator's source of choices drawn from a fuzz input: each draw takes the
// next 8 bytes of b (little-endian, the last ones zero-padded); once b is used up, the draws
// continue from a PCG seeded by a hash of b. A mutation of the input's first bytes so changes
// the generator's first choices, and a short input (an 8-byte seed in the committed corpus)
// still makes a whole spec.
func ChoiceRand(b []byte) *rand.Rand {
	h := fnv.New64a()
	_, _ = h.Write(b)
	return rand.New(&choiceSource{b: b, rest: rand.NewPCG(h.Sum64(), uint64(len(b)))}) //nolint:gosec // G404: a generator's choices, not a secret
}

type choiceSource struct {
	b    []byte
	rest *rand.PCG
}

func (s *choiceSource) Uint64() uint64 {
	if len(s.b) == 0 {
		return s.rest.Uint64()
	}
	var buf [8]byte
	n := copy(buf[:], s.b)
	s.b = s.b[n:]
	return binary.LittleEndian.Uint64(buf[:])
}

var shared struct {
	sync.Mutex
	env *Env
	err error
	dir string // the coordinator's kubeconfig for its workers
}

// sharedKubeconfigEnv names the kubeconfig of the API server a fuzz coordinator started, for
// its workers.
const sharedKubeconfigEnv = "TESTENV_SHARED_KUBECONFIG"

// Shared is the API server of this test process, started on the first call (with that call's
// options) and stopped by StopShared. A start that failed is not retried.
//
// Under `go test -fuzz` the coordinator process starts it (the fuzz target calls Shared before
// f.Fuzz) and hands its kubeconfig to the workers in the environment, and a worker's Shared
// connects to it. A worker never starts etcd or an API server of its own: the coordinator stops
// a worker with SIGKILL when it does not exit within about 2 s, and a child of a killed worker
// would live on holding the worker's fuzz pipes (they are not close-on-exec), so the
// coordinator would wait for the worker's answer forever. With no children, a worker dies
// cleanly, and a new worker costs a connection instead of a 6 s start.
func Shared(opts Options) (*Env, error) {
	shared.Lock()
	defer shared.Unlock()
	if shared.env != nil || shared.err != nil {
		return shared.env, shared.err
	}
	if path := os.Getenv(sharedKubeconfigEnv); path != "" && fuzzWorker() {
		shared.env, shared.err = connectKubeconfig(path)
		return shared.env, shared.err
	}
	shared.env, shared.err = Start(opts)
	if shared.err == nil && Fuzzing() {
		shared.err = exportShared(shared.env)
	}
	return shared.env, shared.err
}

// exportShared writes a cluster-admin kubeconfig of env for the fuzz workers this process
// starts next, and names it in the environment they inherit.
func exportShared(env *Env) error {
	kubeconfig, err := env.Kubeconfig("fuzz-worker")
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "testenv-shared-")
	if err != nil {
		return fmt.Errorf("kubeconfig dir: %w", err)
	}
	shared.dir = dir
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	return os.Setenv(sharedKubeconfigEnv, path)
}

// connectKubeconfig is an Env of the API server another process started: only Config and
// Client are set, and Stop leaves the server running.
func connectKubeconfig(path string) (*Env, error) {
	b, err := os.ReadFile(path) //nolint:gosec // G304: the coordinator's kubeconfig
	if err != nil {
		return nil, fmt.Errorf("read the coordinator's kubeconfig: %w", err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(b)
	if err != nil {
		return nil, fmt.Errorf("the coordinator's kubeconfig: %w", err)
	}
	// envtest's own limits: client-go's default (5 requests/s) would make an input of a dozen
	// requests take seconds, and a minimization of one new input take its whole time limit.
	cfg.QPS, cfg.Burst = 1000, 2000
	c, err := client.New(cfg, client.Options{Scheme: Scheme()})
	if err != nil {
		return nil, fmt.Errorf("create client: %w", err)
	}
	return &Env{Config: cfg, Client: c}, nil
}

// StopShared stops the API server Shared started, if any (TestMain calls it after m.Run); in a
// fuzz worker it only forgets the connection.
func StopShared() error {
	shared.Lock()
	defer shared.Unlock()
	if shared.env == nil {
		return nil
	}
	err := shared.env.Stop()
	shared.env = nil
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
		shared.dir = ""
	}
	return err
}

// ErrUnexpectedAdmission is an admission answer that is neither an acceptance nor a refusal of
// the object as invalid.
var ErrUnexpectedAdmission = errors.New("admission: neither accepted nor refused as invalid")

// AdmitDryRun creates obj with dryRun=All. Admitted: "" and nil, and obj holds the object as
// the API server defaulted it. Refused as invalid (schema, CEL): the first field the refusal
// names (indexes dropped) and nil. Any other error wraps ErrUnexpectedAdmission.
func AdmitDryRun(ctx context.Context, c client.Client, obj client.Object) (string, error) {
	err := c.Create(ctx, obj, client.DryRunAll)
	switch {
	case err == nil:
		return "", nil
	case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
		return RefusedField(err), nil
	default:
		return "", errors.Join(ErrUnexpectedAdmission, err)
	}
}

// RefusedField is the first field an API server refusal names, without list indexes or map
// keys ("other" when it names none).
func RefusedField(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Details != nil && len(status.Status().Details.Causes) > 0 {
		f := status.Status().Details.Causes[0].Field
		if i := strings.IndexAny(f, "[0123456789"); i > 0 {
			f = f[:i]
		}
		if f = strings.TrimSuffix(f, "."); f != "" {
			return f
		}
	}
	return "other"
}

// DryRunTally counts what a dry-run property saw: inputs, specs admitted and refused (by the
// first field the refusal names; "render:<field>" for the operator's own render-time
// validation) and rendered objects sent with dryRun=All.
type DryRunTally struct {
	mu                                 sync.Mutex
	Inputs, Admitted, Refused, Objects int
	By                                 map[string]int
}

// Add counts one input: refusedBy is "" when the spec was admitted and rendered.
func (t *DryRunTally) Add(refusedBy string, objects int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.Inputs++
	t.Objects += objects
	if refusedBy == "" {
		t.Admitted++
		return
	}
	t.Refused++
	if t.By == nil {
		t.By = map[string]int{}
	}
	t.By[refusedBy]++
}

func (t *DryRunTally) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return fmt.Sprintf("%d specs: %d admitted and rendered, %d refused (by field: %v); %d rendered objects sent with dryRun=All",
		t.Inputs, t.Admitted, t.Refused, t.By, t.Objects)
}

// Balanced reports whether the inputs reached both sides of the property (at least a fifth
// admitted, at least one refused): otherwise the property says nothing.
func (t *DryRunTally) Balanced() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.Admitted >= t.Inputs/5 && t.Refused > 0
}

// fuzzWorker reports whether this process is a fuzz worker (-test.fuzzworker, set by the
// coordinator).
func fuzzWorker() bool {
	f := flag.Lookup("test.fuzzworker")
	return f != nil && f.Value.String() == "true"
}

// Fuzzing reports whether this process runs with -test.fuzz (the coordinator or a worker), as
// opposed to the plain `go test` run of the seed corpus.
func Fuzzing() bool {
	f := flag.Lookup("test.fuzz")
	return f != nil && f.Value.String() != ""
}

// CorpusClasses classifies the inputs of a corpus being written (WriteCorpus): every refusal
// reason is a class of its own, and at most MaxAdmitted classes of admitted specs (named by the
// field families they set) are kept, so that the rest of the corpus goes to the refusals.
type CorpusClasses struct {
	MaxAdmitted int
	admitted    map[string]bool
}

// Class is the class of an input refused by refusedBy ("" when admitted) with the given field
// families; "" skips the input.
func (c *CorpusClasses) Class(refusedBy, families string) string {
	if refusedBy != "" {
		return "refused " + refusedBy
	}
	if c.admitted == nil {
		c.admitted = map[string]bool{}
	}
	class := "admitted " + families
	if !c.admitted[class] && len(c.admitted) >= c.MaxAdmitted {
		return ""
	}
	c.admitted[class] = true
	return class
}

// WriteCorpus writes a seed corpus for the fuzz target name into dir/testdata/fuzz/<name>/: of
// the inputs 0..tries-1 (each an 8-byte little-endian seed for ChoiceRand), the first one of
// each class that classify returns ("" skips the input), at most limit files. It replaces the files written before.
// The fuzz targets run it when their package's *_WRITE_CORPUS variable is set.
func WriteCorpus(dir, name string, tries, limit int, classify func(input []byte) string) (map[string]int, error) {
	out := filepath.Join(dir, "testdata", "fuzz", name)
	if err := os.RemoveAll(out); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(out, 0o750); err != nil {
		return nil, err
	}
	classes := map[string]int{}
	for i := range tries {
		if len(classes) >= limit {
			break
		}
		in := binary.LittleEndian.AppendUint64(nil, uint64(i))
		class := classify(in)
		if _, seen := classes[class]; seen || class == "" {
			continue
		}
		classes[class] = i
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", in)
		if err := os.WriteFile(filepath.Join(out, fmt.Sprintf("seed-%05d", i)), []byte(body), 0o600); err != nil {
			return nil, err
		}
	}
	return classes, nil
}
