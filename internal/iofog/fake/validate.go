package fake

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"regexp"
)

// The Controller validates bodies with jsonschema and reports only the first
// error, formatted by its validator (controller-api.md, "Schema
// validation"). These helpers reproduce the messages for required, type,
// minimum, pattern and additionalProperties; other keywords answer a JSON
// dump of the validator error, approximated by dumpMsg.

func requiredMsg(field string) string { return fmt.Sprintf("Required field '%s' is missing", field) }

func typeMsg(field, typ string) string {
	return fmt.Sprintf("Field '%s' is not of a type(s) %s", field, typ)
}

func minimumMsg(field string, minimum int) string {
	return fmt.Sprintf("%s must be greater than or equal to %d", field, minimum)
}

func patternMsg(field string) string { return fmt.Sprintf("Invalid format for field '%s'", field) }

func notAllowedMsg(field string) string { return fmt.Sprintf("Field '%s' not allowed", field) }

// dumpMsg mimics the JSON dump of a jsonschema ValidationError.
func dumpMsg(field, keyword, message string, argument any) string {
	data, err := json.Marshal(struct {
		Path     []string `json:"path"`
		Property string   `json:"property"`
		Message  string   `json:"message"`
		Name     string   `json:"name"`
		Argument any      `json:"argument"`
		Stack    string   `json:"stack"`
	}{
		Path:     []string{field},
		Property: "instance." + field,
		Message:  message,
		Name:     keyword,
		Argument: argument,
		Stack:    "instance." + field + " " + message,
	})
	if err != nil {
		return "instance." + field + " " + message
	}
	return string(data)
}

// errBadJSON marks a body that is not one JSON object.
var errBadJSON = errors.New("body is not a JSON object")

// badJSONMessage is the 400 message for errBadJSON (an approximation: the
// contract does not record the real body-parser answer).
const badJSONMessage = "Invalid JSON body"

// readObject is parseObject that answers 400 ValidationError itself; ok is
// false when it did.
func readObject(w http.ResponseWriter, r *http.Request, body []byte) (map[string]any, bool) {
	obj, err := parseObject(r, body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "ValidationError", badJSONMessage)
		return nil, false
	}
	return obj, true
}

// isJSONContent reports whether a Content-Type names JSON; an unparsable one does not.
func isJSONContent(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == "application/json" || hasJSONSuffix(mt))
}

// parseObject decodes a request body the way express.json() feeds the
// validator: a non-JSON content type leaves an empty object, an empty body
// is an empty object, and numbers keep their text for integer checks.
func parseObject(r *http.Request, body []byte) (map[string]any, error) {
	if !isJSONContent(r.Header.Get("Content-Type")) || len(bytes.TrimSpace(body)) == 0 {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, errBadJSON
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errBadJSON
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, errBadJSON
	}
	return obj, nil
}

func hasJSONSuffix(mt string) bool {
	return len(mt) > 5 && mt[len(mt)-5:] == "+json"
}

// integer reports whether v is a JSON integer (5 and 5.0 both are, as in
// JavaScript).
func integer(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	if i, err := n.Int64(); err == nil {
		return i, true
	}
	f, err := n.Float64()
	if err != nil || f != math.Trunc(f) || math.Abs(f) > math.MaxInt64/2 {
		return 0, false
	}
	return int64(f), true
}

// requiredString checks a required string property.
func requiredString(obj map[string]any, field string) (string, string) {
	v, ok := obj[field]
	if !ok {
		return "", requiredMsg(field)
	}
	s, ok := v.(string)
	if !ok {
		return "", typeMsg(field, "string")
	}
	return s, ""
}

// optionalString checks an optional string property.
func optionalString(obj map[string]any, field string) (string, bool, string) {
	v, ok := obj[field]
	if !ok {
		return "", false, ""
	}
	s, ok := v.(string)
	if !ok {
		return "", false, typeMsg(field, "string")
	}
	return s, true, ""
}

// port checks an optional port (integer, 1-65535). A missing port is 0.
func port(obj map[string]any, field string) (int, string) {
	v, ok := obj[field]
	if !ok {
		return 0, ""
	}
	n, ok := integer(v)
	switch {
	case !ok:
		return 0, typeMsg(field, "integer")
	case n < 1:
		return 0, minimumMsg(field, 1)
	case n > 65535:
		return 0, dumpMsg(field, "maximum", "must be less than or equal to 65535", 65535)
	}
	return int(n), ""
}

// sizePattern is the NATS hub jsStorageSize / jsMemoryStoreSize pattern.
var sizePattern = regexp.MustCompile(`^[0-9]+\s*([mM][bB]?|[gG][bB]?|[tT][bB]?)?$`)

// size checks an optional JetStream size property.
func size(obj map[string]any, field string) (string, string) {
	s, ok, msg := optionalString(obj, field)
	switch {
	case msg != "" || !ok:
		return "", msg
	case len(s) > 32:
		return "", dumpMsg(field, "maxLength", "does not meet maximum length of 32", 32)
	case !sizePattern.MatchString(s):
		return "", patternMsg(field)
	}
	return s, ""
}

// orDefault applies the Controller's "falsy port gets the default" rule.
func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}
