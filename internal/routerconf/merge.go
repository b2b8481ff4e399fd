package routerconf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
)

// ErrInvalidExisting is wrapped by Merge when the existing document is not a
// skrouterd.json array of [entityType, {attributes}] pairs. The caller decides
// what to do (report it, or overwrite deliberately); Merge never discards
// data it cannot read.
var ErrInvalidExisting = errors.New("existing skrouterd.json is invalid")

// rawEntry is an entry of a parsed document; attrs are kept verbatim so
// entries added by the Controller or an admin keep their content and key order.
type rawEntry struct {
	typ     string
	name    string
	hasName bool
	attrs   json.RawMessage
}

func (e rawEntry) MarshalJSON() ([]byte, error) {
	return marshalPair(e.typ, e.attrs)
}

// identity is what makes two entries the same for de-duplication: type and
// name, or type and content for unnamed entities such as address and log.
func (e rawEntry) identity() string {
	if e.hasName {
		return e.typ + "\x00name\x00" + e.name
	}
	var compacted bytes.Buffer
	if err := json.Compact(&compacted, e.attrs); err != nil {
		return e.typ + "\x00raw\x00" + string(e.attrs) // attrs were validated on parse
	}
	return e.typ + "\x00raw\x00" + compacted.String()
}

// Merge combines the existing skrouterd.json of the ConfigMap with desired
// (normally Render's output) following docs/controlplane.md#router-configuration, and reports whether the
// result differs from existing:
//
//  1. If the router entity's config-version (metadata key ConfigVersionKey)
//     is non-empty and equal in both, existing is returned unchanged.
//  2. Otherwise the result is every desired entry, in desired's order,
//     followed by the existing entries that are kept, in their order. Kept are
//     all entries except those of type router, site, address and log, and
//     sslProfile/listener entries whose name the operator owns.
//  3. Kept entries are de-duplicated by (type, name) — by content for unnamed
//     entities — fixing the upstream merge that duplicated e.g. the
//     system-default sslProfile (docs/controlplane.md#router-configmap-merge).
//
// An empty existing document holds nothing to preserve and yields desired.
// If existing cannot be parsed the error wraps ErrInvalidExisting. When the
// merge is semantically equal to existing, existing is returned with false.
// Merge is idempotent: Merge(Merge(x, d), d) returns its input unchanged.
func Merge(existing, desired []byte) ([]byte, bool, error) {
	want, err := parseDocument(desired)
	if err != nil {
		return nil, false, fmt.Errorf("merge skrouterd.json: parse desired document: %w", err)
	}
	if len(bytes.TrimSpace(existing)) == 0 {
		return bytes.Clone(desired), true, nil
	}
	have, err := parseDocument(existing)
	if err != nil {
		return nil, false, fmt.Errorf("merge skrouterd.json: %w: %w", ErrInvalidExisting, err)
	}
	if v := configVersion(have); v != "" && v == configVersion(want) {
		return existing, false, nil
	}

	merged, err := encodeIndented(mergeEntries(have, want))
	if err != nil {
		return nil, false, fmt.Errorf("merge skrouterd.json: %w", err)
	}
	if sameJSON(existing, merged) {
		return existing, false, nil
	}
	return merged, true, nil
}

func mergeEntries(have, want []rawEntry) []rawEntry {
	out := make([]rawEntry, 0, len(want)+len(have))
	seen := make(map[string]bool, len(want)+len(have))
	for _, e := range want {
		out = append(out, e)
		seen[e.identity()] = true
	}
	for _, e := range have {
		if templateTypes[e.typ] || (e.hasName && ownedNames[e.typ][e.name]) {
			continue
		}
		id := e.identity()
		if seen[id] {
			continue
		}
		seen[id] = true
		out = append(out, e)
	}
	return out
}

// parseDocument parses a skrouterd.json array of [type, {attributes}] pairs.
func parseDocument(doc []byte) ([]rawEntry, error) {
	if !startsWith(doc, '[') {
		return nil, errors.New("not a JSON array")
	}
	var items []json.RawMessage
	if err := json.Unmarshal(doc, &items); err != nil {
		return nil, err
	}
	entries := make([]rawEntry, 0, len(items))
	for i, item := range items {
		e, err := parseEntry(item)
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
		entries = append(entries, e)
	}
	return entries, nil
}

func parseEntry(item json.RawMessage) (rawEntry, error) {
	var pair []json.RawMessage
	if !startsWith(item, '[') {
		return rawEntry{}, errors.New("not a [type, attributes] pair")
	}
	if err := json.Unmarshal(item, &pair); err != nil {
		return rawEntry{}, err
	}
	if len(pair) != 2 {
		return rawEntry{}, fmt.Errorf("has %d elements, want [type, attributes]", len(pair))
	}
	var e rawEntry
	if err := json.Unmarshal(pair[0], &e.typ); err != nil || e.typ == "" {
		return rawEntry{}, errors.New("entity type is not a non-empty string")
	}
	var attrs map[string]json.RawMessage
	if !startsWith(pair[1], '{') {
		return rawEntry{}, fmt.Errorf("%s attributes are not a JSON object", e.typ)
	}
	if err := json.Unmarshal(pair[1], &attrs); err != nil {
		return rawEntry{}, fmt.Errorf("%s attributes: %w", e.typ, err)
	}
	if raw, ok := attrs["name"]; ok {
		e.hasName = json.Unmarshal(raw, &e.name) == nil
	}
	e.attrs = pair[1]
	return e, nil
}

// configVersion returns the ConfigVersionKey value of the first router
// entity's metadata, or "" when there is none. The metadata attribute is a
// JSON object encoded in a string.
func configVersion(entries []rawEntry) string {
	for _, e := range entries {
		if e.typ != typeRouter {
			continue
		}
		var attrs struct {
			Metadata string `json:"metadata"`
		}
		if json.Unmarshal(e.attrs, &attrs) != nil {
			return ""
		}
		var metadata map[string]any
		if json.Unmarshal([]byte(attrs.Metadata), &metadata) != nil {
			return ""
		}
		v, _ := metadata[ConfigVersionKey].(string)
		return v
	}
	return ""
}

func startsWith(doc []byte, c byte) bool {
	doc = bytes.TrimLeft(doc, " \t\r\n")
	return len(doc) > 0 && doc[0] == c
}

// sameJSON reports whether a and b decode to equal values.
func sameJSON(a, b []byte) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}
