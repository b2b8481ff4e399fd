package routerconf_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/kubeopera/kubeopera-operator/internal/routerconf"
)

// FuzzMerge checks that any existing document either fails with
// ErrInvalidExisting or merges into a valid document that is a fixed point.
func FuzzMerge(f *testing.F) {
	desired := render(f, "iofog")
	f.Add(desired)
	f.Add(doc(f, routerEntry(f, "0.9.0"), adminConnector, adminConnector, adminProfile, adminAddress))
	f.Add([]byte(`[["router",{"metadata":"{\"iofog-config\":\"1.0.0\"}"}],["listener",{"name":"amqp"}]]`))
	f.Add([]byte(`[["listener",null]]`))
	f.Add([]byte(`not json`))
	f.Add([]byte{})

	f.Fuzz(func(t *testing.T, existing []byte) {
		out, changed, err := routerconf.Merge(existing, desired)
		if err != nil {
			if !errors.Is(err, routerconf.ErrInvalidExisting) {
				t.Fatalf("unclassified error: %v", err)
			}
			return
		}
		if !changed && !bytes.Equal(out, existing) {
			t.Fatal("unchanged result differs from existing")
		}
		again, changed, err := routerconf.Merge(out, desired)
		if err != nil {
			t.Fatalf("merge own output: %v\n%s", err, out)
		}
		if changed || !bytes.Equal(again, out) {
			t.Fatalf("not idempotent:\n%s\n---\n%s", out, again)
		}
	})
}
