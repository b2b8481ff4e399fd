package eventnote

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTruncate(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want string
	}{
		{"empty", "", ""},
		{"short", "Reconciled.", "Reconciled."},
		{"exactly the limit", strings.Repeat("a", MaxLength), strings.Repeat("a", MaxLength)},
		{"one over", strings.Repeat("a", MaxLength+1), strings.Repeat("a", MaxLength-3) + "..."},
		// "é" is two bytes. After "x" the cut at MaxLength-3 falls between two of them; after "xx"
		// it falls inside one, which is then left out whole.
		{"multi-byte, cut between", "x" + strings.Repeat("é", MaxLength), "x" + strings.Repeat("é", 498) + "..."},
		{"multi-byte, cut inside", "xx" + strings.Repeat("é", MaxLength), "xx" + strings.Repeat("é", 497) + "..."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Truncate(tc.in)
			if got != tc.want {
				t.Errorf("Truncate: got %d bytes %q..., want %d bytes", len(got), got[:min(len(got), 20)], len(tc.want))
			}
			if len(got) > MaxLength {
				t.Errorf("%d bytes, more than MaxLength", len(got))
			}
			if !utf8.ValidString(got) {
				t.Error("the cut split a UTF-8 character")
			}
		})
	}
}
