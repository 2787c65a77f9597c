package proto

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"time"
)

// ---- Operation grants (protocol version 3) ------------------------------
//
// Every request the Engine sends through the command path (an envelope
// with an OperationID) carries a Grant: a document signed by the Engine's
// script-signing key, which the agent trusts through its key chain, naming
// the purpose, this device, the operation, the request type, the payload's
// digest and an expiry. The agent runs a request only under a grant for
// exactly it, so a row planted in the Engine's database or a request
// injected anywhere between the Engine's authorisation and the agent
// reaches no handler. Script runs carry their own signature (ScriptJob)
// and need none.

// PurposeOperation is a Grant's purpose.
const PurposeOperation = "cairn/operation/v1"

// Grant is the signed statement that an operation may run on a device.
type Grant struct {
	Purpose       string    `json:"purpose"`
	DeviceGUID    string    `json:"device_guid"`
	OperationID   string    `json:"operation_id"`
	Type          string    `json:"type"`
	PayloadSHA256 string    `json:"payload_sha256"`
	ExpiresAt     time.Time `json:"expires_at"`
}

// GrantDigest is a Grant's digest of a payload: of its canonical JSON
// (decoded and encoded again, object keys sorted), since the Engine keeps
// requests as PostgreSQL jsonb, which may reorder keys and respace them
// before the agent sees the payload. An empty payload counts as {} (what
// the Engine sends for one); bytes that are not JSON are digested as they
// are.
func GrantDigest(payload []byte) string {
	canonical := payload
	if len(bytes.TrimSpace(payload)) == 0 {
		canonical = []byte(`{}`)
	} else {
		var v any
		if json.Unmarshal(payload, &v) == nil {
			if b, err := json.Marshal(v); err == nil {
				canonical = b
			}
		}
	}
	sum := sha256.Sum256(canonical)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// NeedsGrant reports whether a request of type typ must carry a grant.
func NeedsGrant(typ string) bool { return typ != EventQuickJobRun }

// Grant refusals (CodeSignatureInvalid on the wire).
var (
	ErrGrantMissing  = errors.New("the request carries no grant from the Engine")
	ErrGrantInvalid  = errors.New("the request's grant is not signed by a trusted key")
	ErrGrantMismatch = errors.New("the request's grant is for another device, operation, type or payload")
	ErrGrantExpired  = errors.New("the request's grant has expired")
)

// VerifyGrant checks that g, signed by one of trusted, grants exactly env
// to device guid at now.
func VerifyGrant(g *Signed, trusted []string, guid string, env Envelope, now time.Time) error {
	if g == nil {
		return ErrGrantMissing
	}
	payload, err := g.Verify(trusted)
	if err != nil {
		return ErrGrantInvalid
	}
	var gr Grant
	if json.Unmarshal(payload, &gr) != nil || gr.Purpose != PurposeOperation {
		return ErrGrantInvalid
	}
	if gr.DeviceGUID != guid || gr.OperationID != env.OperationID || gr.Type != env.Type || gr.PayloadSHA256 != GrantDigest(env.Payload) {
		return ErrGrantMismatch
	}
	if !now.Before(gr.ExpiresAt) {
		return ErrGrantExpired
	}
	return nil
}
