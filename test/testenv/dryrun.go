package testenv

// The rendered-objects dry-run properties (internal/render for KubeOperaApp,
// controllers/controlplane/internal/resources for ControlPlane) are Go fuzz targets sharing what
// is here: the choice stream that turns the fuzzer's bytes into a generator's draws, one API
// server per test process, and the admission step.

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
}

// Shared is the API server of this test process, started on the first call (with that call's
// options) and stopped by StopShared. Fuzz workers are separate processes: each starts its own
// on its first input, and the plain `go test` run of the corpus starts one for all inputs.
// A start that failed is not retried.
func Shared(opts Options) (*Env, error) {
	shared.Lock()
	defer shared.Unlock()
	if shared.env == nil && shared.err == nil {
		shared.env, shared.err = Start(opts)
	}
	return shared.env, shared.err
}

// StopShared stops the API server Shared started, if any (TestMain calls it after m.Run).
func StopShared() error {
	shared.Lock()
	defer shared.Unlock()
	if shared.env == nil {
		return nil
	}
	err := shared.env.Stop()
	shared.env = nil
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
