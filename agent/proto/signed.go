package proto

// Signed is a payload signed with the Engine's signing key: the agent
// verifies Signature over the raw Payload bytes with any trusted key
// (agent.json script_signing.trusted_public_keys), then decodes Payload.
// encoding/json carries []byte as standard base64.
type Signed struct {
	Payload []byte `json:"payload"`
	// KeyID is the hex of the first 8 bytes of sha256(public key).
	KeyID     string `json:"key_id"`
	Signature []byte `json:"signature"`
}
