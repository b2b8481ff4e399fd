package natsconf

import (
	"regexp"
	"strings"
)

// binarySuffixes maps Kubernetes binary suffixes to the NATS suffixes written
// in server.conf (docs/controlplane.md#nats-settings).
var binarySuffixes = []struct{ from, to string }{
	{"gi", "G"}, {"mi", "M"}, {"ti", "T"}, {"ki", "K"}, {"pi", "P"}, {"ei", "E"},
}

// SizePattern is the one definition of a JetStream size (spec.nats.jetStream.storageSize and
// memoryStoreSize): a whole Kubernetes quantity with an optional decimal or binary suffix. The
// CRD admits exactly this (its Pattern marker is this string; a test compares them) and Render
// writes every such value.
const SizePattern = `^[0-9]+(k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$`

// ConvertSize converts a Kubernetes quantity to the unit NATS expects in
// server.conf: a trailing Gi/Mi/Ti/Ki (any case) becomes G/M/T/K, anything else
// is returned as is (surrounding spaces trimmed). "10Gi" → "10G", "512mi" →
// "512M", "10G" → "10G", "" → "".
//
// NATS reads an unquoted "10G" as 10·10⁹ bytes, so the converted limit stays
// below the PVC's 10Gi (upstream behaviour, kept on purpose).
func ConvertSize(q string) string {
	q = strings.TrimSpace(q)
	lower := strings.ToLower(q)
	for _, s := range binarySuffixes {
		if strings.HasSuffix(lower, s.from) {
			return q[:len(q)-len(s.from)] + s.to
		}
	}
	return q
}

// natsSize matches the sizes Render writes unquoted: an integer with an
// optional decimal suffix that NATS's config parser understands.
var natsSize = regexp.MustCompile(`^[0-9]+[KkMGTPE]?$`)

// admittedSize is SizePattern compiled.
var admittedSize = regexp.MustCompile(SizePattern)
