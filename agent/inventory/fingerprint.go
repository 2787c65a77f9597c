package inventory

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
)

// fingerprintVersion starts the hashed bytes; changing what the
// fingerprint covers means a new version, since the Engine compares it
// with the one the device enrolled with.
const fingerprintVersion = "cairn-fingerprint-v1"

// fingerprintOf hashes named machine identifiers. Empty ones are left out
// by name, so a source that is unreadable here and readable elsewhere
// cannot be confused with another source's value. At least one must be
// present.
func fingerprintOf(ids [][2]string) (string, error) {
	var b strings.Builder
	b.WriteString(fingerprintVersion)
	found := false
	for _, id := range ids {
		if id[1] == "" {
			continue
		}
		found = true
		b.WriteString("\n" + id[0] + "=" + id[1])
	}
	if !found {
		return "", errors.New("fingerprint: no machine identifier is readable")
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:]), nil
}
