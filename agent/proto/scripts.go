package proto

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"
)

// ---- Signed script payloads (SPEC Authentication rule 6) ---------------
//
// The Engine signs every script payload with its script-signing key; the
// agent runs nothing whose signature does not verify with a key it trusts
// (agent.json script_signing.trusted_public_keys, delivered at enrollment
// and refreshed by heartbeat answers).

// Signed is a payload and its Ed25519 signature. Payload is the exact bytes
// signed (JSON of the inner document); KeyID names the key that signed.
type Signed struct {
	Payload   []byte `json:"payload"`
	KeyID     string `json:"key_id"`
	Signature []byte `json:"signature"`
}

// KeyID is the ID of an Ed25519 public key: hex of the first 8 bytes of
// its SHA-256.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:8])
}

// ErrSignatureInvalid is returned by Verify for a payload no trusted key
// signed.
var ErrSignatureInvalid = errors.New("the payload signature does not verify with a trusted key")

// Verify checks s against trusted (standard base64 Ed25519 public keys) and
// returns the payload bytes. The key ID only picks the key to try first;
// any trusted key that verifies the signature is accepted.
func (s Signed) Verify(trusted []string) ([]byte, error) {
	if len(s.Signature) != ed25519.SignatureSize || len(s.Payload) == 0 {
		return nil, ErrSignatureInvalid
	}
	for _, k := range trusted {
		pub, err := base64.StdEncoding.DecodeString(k)
		if err != nil || len(pub) != ed25519.PublicKeySize {
			continue
		}
		if ed25519.Verify(ed25519.PublicKey(pub), s.Payload, s.Signature) {
			return s.Payload, nil
		}
	}
	return nil, ErrSignatureInvalid
}

// EventQuickJobRun asks the agent to run a script: payload Signed whose
// Payload is a ScriptJob; the reply is a ScriptResult.
const EventQuickJobRun = "quick_job_run"

// Script error codes.
const (
	CodeSignatureInvalid    = "signature_invalid"    // bad signature, untrusted key, other device, expired
	CodeUnsupportedLanguage = "unsupported_language" // this platform cannot run the language
	// CodeAnsibleUnavailable: a playbook reached an agent with no usable
	// ansible-playbook (none on its PATH, or older than
	// AnsibleMinCoreVersion).
	CodeAnsibleUnavailable = "ansible_unavailable"
	// CodeUserContextUnsupported: the job asks for RunAsCurrentUser and
	// the agent cannot run one (Linux; an agent that does not advertise
	// HelperCurrentUser). The Engine refuses such a target before signing.
	CodeUserContextUnsupported = "user_context_unsupported"
	// CodeNoActiveUserSession: a user-context job found no signed-in user
	// on the active console session (nobody is logged on, or the session
	// is locked out of reach); nothing ran.
	CodeNoActiveUserSession = "no_active_user_session"
)

// Run-as contexts of a script (ScriptJob.RunAs; SPEC agent behaviour
// 12): the agent's privileged account, or the active user's session.
const (
	RunAsSystem      = "system"
	RunAsCurrentUser = "current_user"
)

// HelperCurrentUser is the helper context an agent advertises in
// connect_agent's helper_contexts when it can launch payloads into the
// active user's session (Windows).
const HelperCurrentUser = "currentuser"

// NoDesktopEnvironment is how a headless Linux host reports a
// desktop-only surface (SPEC agent behaviour 12).
const NoDesktopEnvironment = "No Desktop Environment Active"

// Script languages.
const (
	LangBash       = "bash"
	LangSh         = "sh"
	LangPython     = "python"
	LangPowerShell = "powershell"
	LangCmd        = "cmd"
	// LangAnsible is an Ansible playbook assembly's run: the agent runs
	// ansible-playbook on the Body against localhost with connection
	// local (Linux agents with CapAnsible).
	LangAnsible = "ansible"
)

// AnsibleMinCoreVersion is the oldest ansible-core an agent runs
// playbooks with (Debian bookworm ships 2.14).
const AnsibleMinCoreVersion = "2.11"

// AnsibleRecap is the PLAY RECAP of a playbook run on the device (host
// localhost), with the ansible-core version that ran it.
type AnsibleRecap struct {
	Version     string `json:"version"`
	Ok          int    `json:"ok"`
	Changed     int    `json:"changed"`
	Unreachable int    `json:"unreachable"`
	Failed      int    `json:"failed"`
	Skipped     int    `json:"skipped"`
	Rescued     int    `json:"rescued"`
	Ignored     int    `json:"ignored"`
}

// ScriptJob is the signed document of EventQuickJobRun. Since protocol
// version 3 an agent runs it only when Purpose is PurposeScript,
// DeviceGUID is its own, RunID is set and ExpiresAt is in the future: a
// signed payload is an order to one device for one run, for a while. A
// scheduled job's saved content carries PurposeScriptContent and no
// device: the Engine verifies it and signs a bound payload at each fire.
type ScriptJob struct {
	Purpose        string            `json:"purpose,omitempty"`
	RunID          string            `json:"run_id"`
	DeviceGUID     string            `json:"device_guid"`
	Language       string            `json:"language"`
	Body           string            `json:"body"`
	Parameters     map[string]string `json:"parameters"`
	TimeoutSeconds int               `json:"timeout_seconds"`
	// RunAs is RunAsSystem (or empty) or RunAsCurrentUser: signed with
	// the rest, so the context cannot be changed on the way.
	RunAs     string     `json:"run_as,omitempty"`
	IssuedAt  time.Time  `json:"issued_at"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

// DecodeScriptJob parses a verified payload.
func DecodeScriptJob(payload []byte) (ScriptJob, error) {
	var j ScriptJob
	err := json.Unmarshal(payload, &j)
	return j, err
}

// ScriptResult answers EventQuickJobRun. Stdout and Stderr hold at most
// MaxScriptOutput bytes each; the *Truncated flags say output was cut.
type ScriptResult struct {
	ExitCode        int       `json:"exit_code"`
	Stdout          string    `json:"stdout"`
	Stderr          string    `json:"stderr"`
	StdoutTruncated bool      `json:"stdout_truncated"`
	StderrTruncated bool      `json:"stderr_truncated"`
	TimedOut        bool      `json:"timed_out"`
	DurationMS      int64     `json:"duration_ms"`
	StartedAt       time.Time `json:"started_at"`
	FinishedAt      time.Time `json:"finished_at"`
	// Ansible is the recap of a playbook run (LangAnsible); nil for a
	// script, or a playbook that ended before its recap.
	Ansible *AnsibleRecap `json:"ansible,omitempty"`
}

// MaxScriptOutput bounds stdout and stderr of one run, each.
const MaxScriptOutput = 1 << 20

// PathScriptOutput receives live output while a script runs (Device auth):
// the agent posts ScriptOutput at most about twice a second.
const PathScriptOutput = "/api/agent/script/output"

// ScriptOutput is the output so far of a running script (the whole
// output up to now, each bounded to MaxScriptOutput, not a delta: a lost
// post loses nothing).
type ScriptOutput struct {
	RunID           string `json:"run_id"`
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	StdoutTruncated bool   `json:"stdout_truncated"`
	StderrTruncated bool   `json:"stderr_truncated"`
}

// MaxReplyOutput bounds stdout and stderr each in the reply of
// EventQuickJobRun: the reply travels through the workflow history, so
// the whole output (up to MaxScriptOutput) goes to PathScriptOutput just
// before the reply, and the Engine keeps the longer copy.
const MaxReplyOutput = 16 << 10

// PathScriptRequest: an agent asks for work queued while it was offline.
const PathScriptRequest = "/api/agent/script/request"

// ScriptRequestResponse answers PathScriptRequest: Status "idle", or
// "work" with Jobs to run (each answered at PathScriptResult).
type ScriptRequestResponse struct {
	Status string      `json:"status"`
	Jobs   []QueuedJob `json:"jobs,omitempty"`
}

// QueuedJob is one piece of queued work.
type QueuedJob struct {
	RunID  string `json:"run_id"`
	Signed Signed `json:"signed"`
}

// PathScriptResult takes the result of a queued job (ScriptResultPost).
const PathScriptResult = "/api/agent/script/result"

// ScriptResultPost is the body of PathScriptResult.
type ScriptResultPost struct {
	RunID  string       `json:"run_id"`
	Result ScriptResult `json:"result"`
	// Error is set instead of Result when the agent refused the job.
	Error *Error `json:"error,omitempty"`
}

// ScriptTrust carries the Engine's current script-signing public keys
// (standard base64), active first. An agent of protocol version 1 or 2
// replaces its trusted list with a non-empty TrustedPublicKeys; one of
// version 3 takes the lists only at enrollment (its pin) and afterwards
// follows Chain and ArtifactChain (trust.go), ignoring the bare lists.
type ScriptTrust struct {
	TrustedPublicKeys []string `json:"trusted_public_keys"`
	// Chain holds the script-key links (KeyList, PurposeScriptKeys), each
	// signed by the active key before the rotation that wrote it.
	Chain []Signed `json:"chain,omitempty"`
	// ArtifactPublicKeys are the keys that sign agent artifacts
	// (pinned at enrollment by a version 3 agent).
	ArtifactPublicKeys []string `json:"artifact_public_keys,omitempty"`
	// ArtifactChain holds artifact-key links (PurposeArtifactKeys): the
	// first is signed by the active script key (for agents enrolled
	// before they had an artifact key), later ones by an artifact key.
	ArtifactChain []Signed `json:"artifact_chain,omitempty"`
}
