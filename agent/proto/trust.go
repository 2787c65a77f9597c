package proto

import (
	"cmp"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"time"
)

// ---- Key chains and purposes (protocol version 3) -----------------------
//
// Every signed document names what it is for in a Purpose string, so a
// signature made for one thing is never accepted as another (a script
// payload is not an update manifest, a key list is not a script). Script
// payloads and key lists are signed by the Engine's script-signing key;
// agent artifacts by a separate artifact key that can be kept offline
// (`cairn sign-artifact`).
//
// The agent pins the keys it receives at enrollment. Afterwards it accepts
// a new key list only as a link of a chain: a KeyList whose Seq is above
// the one it holds, signed by a key it already trusts. The Engine writes a
// link at every script-key rotation (signed by the outgoing active key),
// so an agent that was offline for several rotations walks the links in
// order.

// Purposes.
const (
	PurposeScript        = "cairn/script/v1"         // ScriptJob sent to one device for one run
	PurposeScriptContent = "cairn/script-content/v1" // a scheduled job's saved content; never run by an agent
	PurposeArtifact      = "cairn/agent-artifact/v1" // UpdateArtifact
	PurposeScriptKeys    = "cairn/keys/script/v1"    // KeyList of script-signing keys
	PurposeArtifactKeys  = "cairn/keys/artifact/v1"  // KeyList of artifact keys
)

// KeyList is one link of a key chain: after it, Keys (standard base64
// Ed25519 public keys, the active one first) are the trusted keys of
// Purpose.
type KeyList struct {
	Purpose  string    `json:"purpose"`
	Seq      int64     `json:"seq"`
	Keys     []string  `json:"keys"`
	IssuedAt time.Time `json:"issued_at"`
}

// ErrNotKeyList is returned by DecodeKeyList for a payload of another
// purpose or without keys.
var ErrNotKeyList = errors.New("the signed payload is not a key list")

// DecodeKeyList parses a verified link payload and checks its purpose
// and keys.
func DecodeKeyList(payload []byte, purpose string) (KeyList, error) {
	var l KeyList
	if err := json.Unmarshal(payload, &l); err != nil {
		return l, ErrNotKeyList
	}
	if l.Purpose != purpose || l.Seq <= 0 || len(l.Keys) == 0 || len(l.Keys) > 8 {
		return l, ErrNotKeyList
	}
	for _, k := range l.Keys {
		if b, err := base64.StdEncoding.DecodeString(k); err != nil || len(b) != ed25519.PublicKeySize {
			return l, ErrNotKeyList
		}
	}
	return l, nil
}

// WalkChain follows chain from the trusted keys at seq: each link whose
// Seq is above the current one, whose purpose is purpose and whose
// signature verifies with a currently trusted key replaces the trusted
// keys. Links that do not verify are skipped (a planted link changes
// nothing). With no trusted keys yet, bootstrap keys verify the links
// instead (an artifact key list endorsed by a trusted script key, for an
// agent enrolled before it had an artifact key). It returns the keys and
// seq reached and whether they changed.
func WalkChain(purpose string, trusted []string, seq int64, chain []Signed, bootstrap []string) ([]string, int64, bool) {
	links := slices.Clone(chain)
	slices.SortStableFunc(links, func(a, b Signed) int { return cmp.Compare(linkSeq(a), linkSeq(b)) })
	keys, changed := slices.Clone(trusted), false
	for _, sg := range links {
		verifyWith := keys
		if len(verifyWith) == 0 {
			verifyWith = bootstrap
		}
		payload, err := sg.Verify(verifyWith)
		if err != nil {
			continue
		}
		l, err := DecodeKeyList(payload, purpose)
		if err != nil || l.Seq <= seq {
			continue
		}
		keys, seq, changed = slices.Clone(l.Keys), l.Seq, true
	}
	return keys, seq, changed
}

// linkSeq is a link's Seq read without verifying (only to order links).
func linkSeq(sg Signed) int64 {
	var l KeyList
	if json.Unmarshal(sg.Payload, &l) != nil {
		return 0
	}
	return l.Seq
}
