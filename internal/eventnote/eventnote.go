// Package eventnote keeps the notes of Kubernetes Events, and the condition messages that repeat
// them, within what the API accepts. Both reconcilers use it, so a long error message is cut the
// same way everywhere.
package eventnote

import "unicode/utf8"

// MaxLength is the longest note in bytes: events.k8s.io/v1 accepts 1 KiB, this leaves room to
// spare. Condition messages are held to the same length, so an Event and the condition it
// reports say the same.
const MaxLength = 1000

// ellipsis marks a note that was cut.
const ellipsis = "..."

// Truncate returns s when it fits in MaxLength bytes, otherwise its longest prefix that fits
// together with "...", never splitting a UTF-8 character.
func Truncate(s string) string {
	if len(s) <= MaxLength {
		return s
	}
	cut := MaxLength - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}
