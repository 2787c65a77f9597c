package proto

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Metadata field limits (SPEC "Metadata field definition and value",
// "Limits"), shared by the agent's command line and the Engine.
const (
	MetadataFieldMin = 1
	MetadataFieldMax = 500
	// MetadataValueMax is in characters (runes) of the decoded value.
	MetadataValueMax = 1024
)

// PathAgentMetadataPrefix + field number is the agent's read of one field
// (GET, Device auth): the Engine's value, answered as MetadataFieldValue.
const PathAgentMetadataPrefix = "/api/agent/metadata/"

// PathAgentMetadata is the path of field n's read.
func PathAgentMetadata(n int) string { return PathAgentMetadataPrefix + strconv.Itoa(n) }

// MetadataFieldValue answers PathAgentMetadata. A field never set has an
// empty Value, a nil ModifiedAt and an empty Source.
type MetadataFieldValue struct {
	FieldNumber int    `json:"field_number"`
	Value       string `json:"value"`
	// ModifiedAt is RFC 3339 with microseconds; nil when never set.
	ModifiedAt *string `json:"modified_at"`
	// Source is "agent", "operator:<username>" or "".
	Source string `json:"source"`
}

// NormalizeMetadataValue applies the value rule both sides share and
// returns the value to store, or a problem ("" when fine): valid UTF-8;
// CRLF line ends become LF; a blank (whitespace-only) value is the empty
// string, which clears the field; at most MetadataValueMax characters; no
// control characters other than tab and newline. Other text is kept as
// given (not trimmed), so the agent's copy and the Engine's agree.
func NormalizeMetadataValue(v string) (string, string) {
	if !utf8.ValidString(v) {
		return "", "must be valid UTF-8"
	}
	v = strings.ReplaceAll(v, "\r\n", "\n")
	if strings.TrimSpace(v) == "" {
		return "", ""
	}
	if n := utf8.RuneCountInString(v); n > MetadataValueMax {
		return "", fmt.Sprintf("is %d characters, at most %d allowed", n, MetadataValueMax)
	}
	if strings.ContainsFunc(v, func(r rune) bool { return unicode.IsControl(r) && r != '\t' && r != '\n' }) {
		return "", "must not contain control characters other than tab and newline"
	}
	return v, ""
}
