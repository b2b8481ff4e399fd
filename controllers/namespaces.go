package controllers

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// ParseWatchNamespaces turns the WATCH_NAMESPACE value into the namespaces the cache watches.
//
// An empty (or blank) value means all namespaces and returns nil. Otherwise the value is a
// comma-separated list, as OLM writes into olm.targetNamespaces for the OwnNamespace,
// SingleNamespace and MultiNamespace install modes; blanks around names are ignored, duplicates are
// folded, and every name must be a valid namespace name (DNS-1123 label). An empty element (",",
// "a,,b") is an error rather than silently meaning "all namespaces".
func ParseWatchNamespaces(value string) ([]string, error) {
	if strings.TrimSpace(value) == "" {
		return nil, nil
	}
	seen := map[string]bool{}
	var out []string
	for i, part := range strings.Split(value, ",") {
		ns := strings.TrimSpace(part)
		if ns == "" {
			return nil, fmt.Errorf("WATCH_NAMESPACE %q: element %d is empty", value, i+1)
		}
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return nil, fmt.Errorf("WATCH_NAMESPACE %q: %q is not a valid namespace name: %s", value, ns, strings.Join(errs, "; "))
		}
		if !seen[ns] {
			seen[ns] = true
			out = append(out, ns)
		}
	}
	sort.Strings(out)
	return out, nil
}
