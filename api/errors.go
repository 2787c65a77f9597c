package api

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5/middleware"
	"go.temporal.io/api/serviceerror"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/agentartifacts"
	"github.com/cairn-rmm/cairn/internal/agentgateway"
	"github.com/cairn-rmm/cairn/internal/agentupdates"
	"github.com/cairn-rmm/cairn/internal/auth"
	"github.com/cairn-rmm/cairn/internal/automation"
	"github.com/cairn-rmm/cairn/internal/devicefilters"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
	"github.com/cairn-rmm/cairn/internal/events"
	"github.com/cairn-rmm/cairn/internal/flows"
	"github.com/cairn-rmm/cairn/internal/grants"
	"github.com/cairn-rmm/cairn/internal/installlinks"
	"github.com/cairn-rmm/cairn/internal/metadata"
	"github.com/cairn-rmm/cairn/internal/metrics"
	"github.com/cairn-rmm/cairn/internal/scheduledjobs"
	"github.com/cairn-rmm/cairn/internal/scriptsign"
	"github.com/cairn-rmm/cairn/internal/shells"
	"github.com/cairn-rmm/cairn/internal/software"
	"github.com/cairn-rmm/cairn/internal/transfers"
	"github.com/cairn-rmm/cairn/workflows"
)

// statusByCode is the one map from domain error codes to HTTP statuses.
var statusByCode = map[string]int{
	cairn.ECodeValidation:          http.StatusBadRequest,
	cairn.ECodeUnauthorized:        http.StatusUnauthorized,
	cairn.ECodeInvalidCredentials:  http.StatusUnauthorized,
	cairn.ECodeInvalidMFACode:      http.StatusUnauthorized,
	cairn.ECodeInvalidPending:      http.StatusUnauthorized,
	cairn.ECodeInvalidPassphrase:   http.StatusUnauthorized,
	cairn.ECodeInvalidDPoPProof:    http.StatusUnauthorized,
	cairn.ECodeForbidden:           http.StatusForbidden,
	cairn.ECodeCSRF:                http.StatusForbidden,
	cairn.ECodeBootstrapFinished:   http.StatusForbidden,
	cairn.ECodeRecoveryRequired:    http.StatusForbidden,
	cairn.ECodeNotFound:            http.StatusNotFound,
	cairn.ECodeMethodNotAllowed:    http.StatusMethodNotAllowed,
	cairn.ECodeConflict:            http.StatusConflict,
	cairn.ECodeWrongPhase:          http.StatusConflict,
	cairn.ECodeBootstrapRequired:   http.StatusConflict,
	cairn.ECodeAegisConfigured:     http.StatusConflict,
	cairn.ECodeSiteNotEmpty:        http.StatusConflict,
	cairn.ECodePasskeysUnavailable: http.StatusConflict,
	cairn.ECodeLastAdmin:           http.StatusConflict,
	cairn.ECodeAgentSocketMissing:  http.StatusConflict,
	cairn.ECodeWrongWorker:         http.StatusMisdirectedRequest,
	cairn.ECodeTooLarge:            http.StatusRequestEntityTooLarge,
	cairn.ECodeUnsupportedMedia:    http.StatusUnsupportedMediaType,
	cairn.ECodeAegisLocked:         http.StatusLocked,
	cairn.ECodeRateLimited:         http.StatusTooManyRequests,
	events.ECodeTooManyStreams:     http.StatusTooManyRequests,
	cairn.ECodeInternal:            http.StatusInternalServerError,
	cairn.ECodeUnavailable:         http.StatusServiceUnavailable,
	db.ECodeServiceUnavailable:     http.StatusServiceUnavailable,
	ECodeTemporalUnavailable:       http.StatusServiceUnavailable,

	// Device authentication (SPEC "Authentication", "Errors").
	devicetrust.ECodeInvalidAccessToken:  http.StatusUnauthorized,
	devicetrust.ECodeTokenExpired:        http.StatusUnauthorized,
	devicetrust.ECodeTokenVersion:        http.StatusUnauthorized,
	devicetrust.ECodeTokenRevoked:        http.StatusUnauthorized,
	devicetrust.ECodeInvalidRefreshToken: http.StatusUnauthorized,
	devicetrust.ECodeDeviceNotFound:      http.StatusUnauthorized,
	devicetrust.ECodeDevicePurged:        http.StatusUnauthorized,
	devicetrust.ECodeDeviceRevoked:       http.StatusConflict,
	devicetrust.ECodeFingerprint:         http.StatusUnauthorized,
	// Quarantined and revoked devices: refused operations answer 409 to
	// operators; agents act on the code, not the status.
	devicetrust.ECodeDeviceQuarantined: http.StatusConflict,
	ECodeAgentContextRequired:          http.StatusUnauthorized,
	ECodeAgentContextRefused:           http.StatusForbidden,
	ECodeProtocolUnsupported:           http.StatusUpgradeRequired,

	// Remote operations: what the agent answered (agentgateway passes
	// only these codes on) and how the command path ended.
	proto.CodeOpMismatch:             http.StatusConflict,
	proto.CodeOpInvalid:              http.StatusBadRequest,
	proto.CodeOpUnsupported:          http.StatusNotImplemented,
	proto.CodeOpFailed:               http.StatusBadGateway,
	proto.CodeOpPermission:           http.StatusBadGateway,
	proto.CodeOpTimedOut:             http.StatusGatewayTimeout,
	proto.CodeOpShellLimit:           http.StatusTooManyRequests,
	proto.CodeOpAlreadyRunning:       http.StatusConflict,
	workflows.ECodeOperationTimedOut: http.StatusGatewayTimeout,
	grants.ECodeNotGranted:           http.StatusForbidden,
	agentgateway.FailureSocketClosed: http.StatusServiceUnavailable,
	// Registry editor (docs/api.md "Registry").
	proto.CodeUnsupportedPlatform:   http.StatusUnprocessableEntity,
	proto.CodePathExists:            http.StatusConflict,
	proto.CodeRegistryKeyNotFound:   http.StatusNotFound,
	proto.CodeRegistryValueNotFound: http.StatusNotFound,
	proto.CodeRegistryTypeInvalid:   http.StatusBadRequest,

	// File management (issue 10): what the agent refused (path_exists
	// is the registry's CodePathExists above).
	proto.CodeFilePathNotAbsolute: http.StatusBadRequest,
	proto.CodeFilePathInvalid:     http.StatusBadRequest,
	proto.CodeFilePathNotFound:    http.StatusNotFound,
	proto.CodeFileNotDirectory:    http.StatusConflict,
	proto.CodeFileNotFile:         http.StatusConflict,
	proto.CodeFileTooLarge:        http.StatusRequestEntityTooLarge,
	proto.CodeFileBinary:          http.StatusUnprocessableEntity,

	// Automation (issue 11).
	automation.ECodeAssemblyInUse:   http.StatusConflict,
	scriptsign.ECodeRotationPending: http.StatusConflict,
	proto.CodeUnsupportedLanguage:   http.StatusUnprocessableEntity,
	proto.CodeSignatureInvalid:      http.StatusBadGateway,
	devices.ECodeAgentAnswer:        http.StatusBadGateway,

	// Signing chain (issue 21 item 4).
	automation.ECodeContentUnverified: http.StatusConflict,

	// Agent artifacts and install links (docs/api.md).
	agentartifacts.ECodeUnavailable: http.StatusNotFound,
	installlinks.ECodeInvalid:       http.StatusForbidden,

	// Agent updates (docs/api.md "Agent updates").
	agentupdates.ECodeUpdateInProgress: http.StatusConflict,

	// File transfers (docs/api.md "File transfers"); agents answer a
	// transfer's request with the file manager's path codes (below).
	transfers.ECodeTransferNotFound:  http.StatusNotFound,
	transfers.ECodeTransferCancelled: http.StatusConflict,
	transfers.ECodeTransferEnded:     http.StatusConflict,
	transfers.ECodeTransferNotReady:  http.StatusConflict,
	transfers.ECodeContentExpired:    http.StatusGone,
	transfers.ECodeChecksumMismatch:  http.StatusUnprocessableEntity,
	transfers.ECodeUploadTooLarge:    http.StatusRequestEntityTooLarge,
	transfers.ECodeTransferStalled:   http.StatusGatewayTimeout,

	// Remote shell (docs/api.md "Remote shell").
	shells.ECodeTokenInvalid:   http.StatusForbidden,
	shells.ECodeAgentTimeout:   http.StatusGatewayTimeout,
	shells.ECodeNotImplemented: http.StatusNotImplemented,

	// Automation (docs/api.md "Automation: scheduled jobs").
	scheduledjobs.ECodeJobDisabled: http.StatusConflict,
	flows.ECodeInUse:               http.StatusConflict,

	// Software rules (docs/api.md "Software audit").
	software.ECodeUninstallBlocked: http.StatusConflict,
	// Device filters (docs/api.md "Device filters and saved views").
	devicefilters.ECodeFilterInUse: http.StatusConflict,
	// Metadata fields (docs/api.md "Metadata fields").
	metadata.ECodeReservedField: http.StatusConflict,
	// First-run setup code and re-authentication (docs/api.md "Bootstrap",
	// "Re-authentication").
	auth.ECodeSetupCodeRequired: http.StatusForbidden,
	auth.ECodeReauthRequired:    http.StatusForbidden,
	// Shared automation objects (docs/api.md "Shared objects: owner and
	// scope").
	cairn.ECodeDependantsExist: http.StatusConflict,
	cairn.ECodeBundledReadOnly: http.StatusConflict,
	cairn.ECodeAssemblyChanged: http.StatusConflict,
	// API token scopes (docs/api.md "API tokens").
	cairn.ECodeScopeRequired: http.StatusForbidden,
	// Transfer quotas (docs/api.md "File transfers").
	cairn.ECodeTransferLimitReached:  http.StatusTooManyRequests,
	cairn.ECodeTransferQuotaExceeded: http.StatusInsufficientStorage,
	cairn.ECodeInsufficientStorage:   http.StatusInsufficientStorage,
	// Agent capabilities (docs/api.md "Agent capabilities").
	cairn.ECodeAgentTooOld: http.StatusConflict,
}

type errorBody struct {
	Error   string            `json:"error"`
	Message string            `json:"message"`
	Fields  map[string]string `json:"fields,omitempty"`
	// Dependants: the saved work a dependants_exist refusal names.
	Dependants []cairn.Dependant `json:"dependants,omitempty"`
}

// ECodeTemporalUnavailable: the route starts or asks a durable operation
// and Temporal cannot be reached; sign-in and agent callbacks keep working.
const ECodeTemporalUnavailable = "temporal_unavailable"

// temporalUnavailable reports whether err is Temporal's frontend being
// unreachable (connection refused, restarting, or no answer in time).
func temporalUnavailable(err error) bool {
	var unavailable *serviceerror.Unavailable
	var deadline *serviceerror.DeadlineExceeded
	return errors.As(err, &unavailable) || errors.As(err, &deadline)
}

// writeError answers with the error's stable code and message. A non-domain
// error is logged with its cause and answered as internal, without detail.
//
// It logs through the request's logger (request ID, route, operator or
// device), falling back to log outside one; never the raw path, which may
// carry a secret (install links).
func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	if l := logFrom(r.Context()); l != nil {
		log = l
	} else {
		log = log.With("method", r.Method, "route", metrics.RoutePattern(r), "request_id", middleware.GetReqID(r.Context()))
	}
	var e *cairn.Error
	if !errors.As(err, &e) && db.Transient(err) {
		log.Warn("database unavailable", "err", err)
		errors.As(db.Overloaded(), &e)
	}
	if e == nil && temporalUnavailable(err) {
		metricsFrom(r.Context()).TemporalError("api")
		log.Warn("temporal unavailable", "err", err)
		e = cairn.Errorf(ECodeTemporalUnavailable, "durable operations are unavailable while the Engine cannot reach Temporal; try again shortly")
		e.RetryAfterSeconds = 5
	}
	if e == nil {
		var temporalErr serviceerror.ServiceError
		if errors.As(err, &temporalErr) {
			metricsFrom(r.Context()).TemporalError("api")
		}
		log.Error("request failed", "err", err)
		e = cairn.Errorf(cairn.ECodeInternal, "something went wrong; the server log has the details (request %s)", middleware.GetReqID(r.Context()))
	}
	if e.Cause != nil {
		// The client sees the code and message; the cause is the log's.
		log.Warn("request refused", "code", e.Code, "message", e.Message, "cause", e.Cause)
	}
	if entry := auditFrom(r); entry != nil {
		entry.Outcome = e.Code
	}
	status, known := statusByCode[e.Code]
	if !known {
		status = http.StatusBadRequest
	}
	if e.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfterSeconds))
	}
	writeJSON(w, status, errorBody{Error: e.Code, Message: e.Message, Fields: e.Fields, Dependants: e.Dependants})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
