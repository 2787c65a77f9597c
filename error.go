// Package cairn holds the domain vocabulary every other package shares: the
// error type with its stable codes. The HTTP layer maps codes to statuses in
// one place (api/errors.go); domain packages only ever return *Error values
// or wrap causes that the API logs but never shows.
package cairn

import (
	"errors"
	"fmt"
)

// Stable error codes. Clients see these strings; never rename one.
const (
	ECodeValidation         = "validation_failed"
	ECodeUnauthorized       = "unauthorized"
	ECodeInvalidCredentials = "invalid_credentials"
	ECodeInvalidMFACode     = "invalid_mfa_code"
	ECodeInvalidPending     = "invalid_pending_token"
	ECodeInvalidPassphrase  = "invalid_passphrase"
	ECodeInvalidDPoPProof   = "invalid_dpop_proof"
	ECodeForbidden          = "forbidden"
	ECodeCSRF               = "csrf_failed"
	ECodeBootstrapFinished  = "bootstrap_finished"
	ECodeRecoveryRequired   = "account_recovery_required"
	ECodeNotFound           = "not_found"
	ECodeMethodNotAllowed   = "method_not_allowed"
	ECodeConflict           = "conflict"
	ECodeWrongPhase         = "wrong_phase"
	ECodeBootstrapRequired  = "bootstrap_incomplete"
	ECodeAegisConfigured    = "aegis_already_configured"
	ECodeSiteNotEmpty       = "site_not_empty"
	ECodeLastAdmin          = "last_admin"
	ECodeTooLarge           = "payload_too_large"
	ECodeUnsupportedMedia   = "unsupported_media_type"
	ECodeAegisLocked        = "aegis_locked"
	ECodeRateLimited        = "rate_limited"
	ECodeInternal           = "internal"
	ECodeUnavailable        = "unavailable"
	// ECodePasskeysUnavailable: the Engine is reached by IP address, which
	// browsers refuse as a WebAuthn relying party.
	ECodePasskeysUnavailable = "passkeys_unavailable"
	// ECodeAgentSocketMissing: no replica holds a live realtime socket of
	// the device (SPEC "Errors": the agent is still onboarding).
	ECodeAgentSocketMissing = "agent_socket_missing"
	// ECodeWrongWorker: this process does not run the site worker of the
	// device's site; the agent refreshes its route.
	ECodeWrongWorker = "wrong_worker"

	// Shared automation objects (issue 21 item 2, docs/api.md "Shared
	// objects: owner and scope").
	//
	// ECodeDependantsExist: the edit would change what saved work of a
	// caller with a broader site scope runs; Error.Dependants lists it.
	ECodeDependantsExist = "dependants_exist"
	// ECodeBundledReadOnly: a bundled assembly cannot be changed or
	// deleted by anyone; the Engine updates it on upgrade.
	ECodeBundledReadOnly = "bundled_read_only"
	// ECodeAssemblyChanged: a run names an assembly version whose body no
	// longer has the SHA-256 recorded when the work was saved.
	ECodeAssemblyChanged = "assembly_changed"

	// ECodeScopeRequired: an API token lacks the scope the route needs,
	// e.g. a read token without read:device-content reading a device's
	// file text, registry values or transferred files (issue 21 item 11,
	// docs/api.md "API tokens").
	ECodeScopeRequired = "scope_required"
	// Transfer quotas (issue 21 item 8, docs/api.md "File transfers").
	//
	// ECodeTransferLimitReached: too many file transfers are in progress,
	// the operator's or the Engine's (429 with Retry-After).
	ECodeTransferLimitReached = "transfer_limit_reached"
	// ECodeTransferQuotaExceeded: the transfer's bytes would go beyond the
	// operator's or the Engine's staging budget (507).
	ECodeTransferQuotaExceeded = "transfer_quota_exceeded"
	// ECodeInsufficientStorage: staging would leave the Engine's transfer
	// storage with less free space than it keeps (507).
	ECodeInsufficientStorage = "insufficient_storage"
	// Agent capabilities (issue 22 item 5, docs/api.md "Agent
	// capabilities").
	//
	// ECodeAgentTooOld: the request needs a capability the device's agent
	// does not report (agent/proto capabilities.go); the message names
	// the capability and the agent protocol that has it. Nothing was sent.
	ECodeAgentTooOld = "agent_too_old"
)

// Transient reports whether err is a domain error whose code is declared
// retryable (Code.Retryable, in the process's book: Declared). Retries
// follow this declaration (activities.ApplicationError), not the call site.
func Transient(err error) bool { return Declared().Transient(err) }

// Dependant is saved work that uses a shared object (dependants_exist).
type Dependant struct {
	// Kind is scheduled_job or workflow.
	Kind string `json:"kind"`
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

// Error is a domain error with a stable code and a message safe to show a
// client. Fields carries per-field problems for validation_failed.
// RetryAfterSeconds is set for rate_limited.
type Error struct {
	Code              string
	Message           string
	Fields            map[string]string
	RetryAfterSeconds int
	// Dependants is set for dependants_exist.
	Dependants []Dependant
	// Probe is set for vnc_backend_no_rfb_banner: where the RFB banner
	// read failed (SPEC "Remote desktop rules" 6).
	Probe *Probe
	// Cause is what led to the error, for the logs only: the API logs it
	// and never sends it, and Error() leaves it out (so a message built
	// from err.Error() shows no more than the client sees). errors.Is and
	// errors.As reach it through Unwrap.
	Cause error
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Cause }

// Wrap returns a domain error with code and a formatted client message
// whose cause, logged but never shown, is cause.
func Wrap(cause error, code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Cause: cause}
}

func (e *Error) Error() string {
	if len(e.Fields) > 0 {
		return fmt.Sprintf("%s: %s %v", e.Code, e.Message, e.Fields)
	}
	return e.Code + ": " + e.Message
}

// Probe is where a remote-desktop readiness probe failed.
type Probe struct {
	Stage     string `json:"probe_stage"`
	Attempt   int    `json:"attempt"`
	ElapsedMS int64  `json:"elapsed_ms"`
}

// Errorf returns a domain error with code and a formatted client message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Invalid returns a validation_failed error naming one field.
func Invalid(field, problem string) *Error {
	return &Error{Code: ECodeValidation, Message: "request is invalid", Fields: map[string]string{field: problem}}
}

// ErrorCode returns the code of err, ECodeInternal for non-domain errors and
// "" for nil.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ECodeInternal
}

// IsCode reports whether err is a domain error with the given code.
func IsCode(err error, code string) bool { return ErrorCode(err) == code }

// Validation accumulates field errors; Err returns nil when none were added.
type Validation struct{ fields map[string]string }

// Add records a problem for field (the first problem per field wins).
func (v *Validation) Add(field, problem string) {
	if v.fields == nil {
		v.fields = map[string]string{}
	}
	if _, ok := v.fields[field]; !ok {
		v.fields[field] = problem
	}
}

// Err returns the accumulated validation_failed error, or nil.
func (v *Validation) Err() error {
	if len(v.fields) == 0 {
		return nil
	}
	return &Error{Code: ECodeValidation, Message: "request is invalid", Fields: v.fields}
}
