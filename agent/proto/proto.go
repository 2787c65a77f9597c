// Package proto holds the wire types the Engine and the agent share: the
// enrollment and token exchange, the agent callbacks and the realtime
// socket's envelope. It is the only Engine-facing package the agent
// imports, so it depends on nothing but the standard library. Field names
// are the JSON the Engine documents in docs/api.md; change them only with
// a new Version.
package proto

import "time"

// Version is the agent protocol version. The agent sends it in connect_agent
// and in the X-Service-Agent-Context header; the Engine serves every
// version from MinVersion to Version and refuses others with 426
// protocol_unsupported, so an Engine one version ahead still serves the
// agents it has not updated yet. Version 2 adds operations
// (operations.go) and Envelope.OperationID. Version 3 adds signed key
// chains, purpose-bound script payloads and the artifact key (trust.go);
// docs/agent.md "Signing chain" says what older agents do. Version 4 adds
// ConnectAgent.Capabilities (capabilities.go); older agents are given
// LegacyCapabilities. Version 5 adds calls over the socket (calls.go,
// ConnectAgentAck.Calls).
const (
	Version    = 5
	MinVersion = 1
)

// Supported reports whether an Engine of this package serves protocol v.
func Supported(v int) bool { return v >= MinVersion && v <= Version }

// Headers every agent request carries (SPEC "Authentication" rule 5).
const (
	// HeaderAgentContext names the calling agent process. The value is
	// "<context>; v=<Version>"; only the privileged context may call the
	// Engine (SPEC "Agent-side behavior" item 1).
	HeaderAgentContext = "X-Service-Agent-Context"
	// HeaderDPoP carries the DPoP proof (RFC 9449).
	HeaderDPoP = "DPoP"
	// AuthScheme is the Authorization scheme of DPoP-bound access tokens:
	// "Authorization: DPoP <access token>".
	AuthScheme = "DPoP"
)

// Agent process contexts.
const (
	ContextPrivileged  = "privileged"
	ContextCurrentUser = "currentuser"
)

// AgentContextValue is the X-Service-Agent-Context value for a context.
func AgentContextValue(context string) string {
	return context + "; v=" + itoa(Version)
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

// Error is the Engine's error body: {"error": code, "message", "fields"}.
type Error struct {
	Code    string            `json:"error"`
	Message string            `json:"message"`
	Fields  map[string]string `json:"fields,omitempty"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// FieldCloneTicket is the Error field a device_cloned refusal carries its
// clone ticket in.
const FieldCloneTicket = "clone_ticket"

// Error codes the agent acts on.
const (
	CodeInvalidRefreshToken = "invalid_refresh_token" // recoverable
	CodeDeviceNotFound      = "device_not_found"      // recoverable
	CodeDevicePurged        = "device_purged"
	CodeDeviceQuarantined   = "device_quarantined" // keep tokens, retry later
	CodeDeviceRevoked       = "device_revoked"
	CodeTokenRevoked        = "token_revoked"
	CodeTokenExpired        = "token_expired"
	CodeTokenVersion        = "token_version_mismatch"
	CodeFingerprintMismatch = "fingerprint_mismatch"
	CodeInvalidAccessToken  = "invalid_access_token"
	CodeInvalidDPoPProof    = "invalid_dpop_proof"
	CodeWrongWorker         = "wrong_worker"
	// CodeDeviceCloned: this agent is a copy of an enrolled device (the
	// same key and GUID run elsewhere). The answer carries a one-time
	// ticket in Fields[FieldCloneTicket] (a refusal) or
	// ConnectAgentAck.CloneTicket; the agent makes a new key, drops its
	// GUID and tokens, and enrolls with the ticket (EnrollRequest.CloneTicket).
	CodeDeviceCloned = "device_cloned"
)

// Agent-facing paths.
const (
	PathEnrollNonce   = "/api/agent/enroll/nonce"
	PathEnrollRequest = "/api/agent/enroll/request"
	PathEnrollPoll    = "/api/agent/enroll/poll"
	PathTokenRefresh  = "/api/agent/token/refresh"
	PathHeartbeat     = "/api/agent/heartbeat"
	PathStatus        = "/api/agent/status"
	PathDetails       = "/api/agent/details"
	PathRealtimeRoute = "/api/agent/realtime/route"
	PathRealtimeWS    = "/api/agent/realtime/socket"
)

// ---- Enrollment ---------------------------------------------------------

// EnrollNonce answers PathEnrollNonce: a single-use server nonce the
// enrollment request signs to prove possession of the device key.
type EnrollNonce struct {
	Nonce     string    `json:"nonce"`
	ExpiresAt time.Time `json:"expires_at"`
}

// EnrollRequest is the body of PathEnrollRequest.
type EnrollRequest struct {
	// Code is the enrollment code; empty when CloneTicket is set.
	Code string `json:"code"`
	// CloneTicket is the one-time ticket a device_cloned answer carried:
	// it enrolls the new key into the original device's site without an
	// administrator. The signature covers it in the code's place.
	CloneTicket string `json:"clone_ticket,omitempty"`
	// PublicKey is the standard base64 of the 32-byte Ed25519 public key.
	PublicKey    string `json:"public_key"`
	Hostname     string `json:"hostname"`
	OS           string `json:"os"`
	Fingerprint  string `json:"fingerprint"`
	AgentVersion string `json:"agent_version"`
	Nonce        string `json:"nonce"`
	// Signature is the standard base64 Ed25519 signature over
	// EnrollSigningMessage(Nonce, Code, Hostname, Fingerprint, PublicKey).
	Signature string `json:"signature"`
}

// EnrollSigningMessage is what an enrollment request signs. Every field is
// length-prefixed so no two different requests sign the same bytes.
func EnrollSigningMessage(nonce, code, hostname, fingerprint, publicKey string) []byte {
	msg := []byte("cairn-enroll-v1")
	for _, f := range []string{nonce, code, hostname, fingerprint, publicKey} {
		msg = append(msg, '\n')
		msg = append(msg, itoa(len(f))...)
		msg = append(msg, ':')
		msg = append(msg, f...)
	}
	return msg
}

// Approval statuses (SPEC "Enrollment").
const (
	ApprovalPending  = "pending"
	ApprovalApproved = "approved"
	ApprovalDenied   = "denied"
	ApprovalExpired  = "expired"
	ApprovalEnrolled = "enrolled"
)

// EnrollResponse answers PathEnrollRequest.
type EnrollResponse struct {
	ApprovalID string `json:"approval_id"`
	// Status is pending, or approved at once under site auto-approval.
	Status           string `json:"status"`
	PollAfterSeconds int    `json:"poll_after_seconds"`
}

// EnrollPoll is the body of PathEnrollPoll. The request also carries a DPoP
// proof (without access token) made with the key that enrolled.
type EnrollPoll struct {
	ApprovalID string `json:"approval_id"`
}

// EnrollPollResponse answers PathEnrollPoll. Tokens and Device are set
// only when Status is enrolled; a second poll after that answers 409.
type EnrollPollResponse struct {
	Status           string          `json:"status"`
	PollAfterSeconds int             `json:"poll_after_seconds,omitempty"`
	Device           *EnrolledDevice `json:"device,omitempty"`
	Tokens           *Tokens         `json:"tokens,omitempty"`
	// ScriptSigning is the script-signing trust material for agent.json.
	ScriptSigning *ScriptTrust `json:"script_signing,omitempty"`
}

// EnrolledDevice is the identity the Engine gave the device.
type EnrolledDevice struct {
	GUID     string `json:"guid"`
	AgentID  string `json:"agent_id"`
	SiteID   int64  `json:"site_id"`
	SiteSlug string `json:"site_slug"`
	Hostname string `json:"hostname"`
}

// Tokens is an access and refresh token pair.
type Tokens struct {
	AccessToken string `json:"access_token"`
	// TokenType is always "DPoP".
	TokenType    string    `json:"token_type"`
	ExpiresIn    int       `json:"expires_in"`
	ExpiresAt    time.Time `json:"expires_at"`
	RefreshToken string    `json:"refresh_token"`
}

// RefreshRequest is the body of PathTokenRefresh (Refresh auth: the request
// also carries a DPoP proof made with the device key).
type RefreshRequest struct {
	RefreshToken string `json:"refresh_token"`
	Fingerprint  string `json:"fingerprint"`
	// BootID is the agent's boot ID ("" when unknown): a used refresh
	// token presented again from another boot than the one that used it
	// is a copy of the agent, answered CodeDeviceCloned.
	BootID string `json:"boot_id,omitempty"`
}

// RefreshResponse answers PathTokenRefresh.
type RefreshResponse struct {
	GUID   string `json:"guid"`
	Tokens Tokens `json:"tokens"`
	// ScriptSigning is the current script-signing trust (rotation).
	ScriptSigning *ScriptTrust `json:"script_signing,omitempty"`
}
