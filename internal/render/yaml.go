package render

import (
	"encoding/json"
	"fmt"

	"sigs.k8s.io/yaml"
)

// marshalObject renders obj as YAML deterministically: through JSON into generic maps (so keys
// come out sorted), without status, without null values and without empty maps (the noise of
// typed objects: creationTimestamp: null, status: {}, resources: {}, strategy: {}).
func marshalObject(obj any) ([]byte, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	delete(m, "status")
	prune(m)
	out, err := yaml.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode YAML: %w", err)
	}
	return out, nil
}

// prune removes null values and maps left empty, recursively. Nothing the renderer emits has a
// meaningful empty map (no emptyDir volumes), so dropping them changes no semantics.
func prune(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case map[string]any:
		for k, child := range t {
			if prune(child) {
				delete(t, k)
			}
		}
		return len(t) == 0
	case []any:
		for _, child := range t {
			prune(child)
		}
		return false
	default:
		return false
	}
}
