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
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/metrics"
	"github.com/cairn-rmm/cairn/workflowclient"
)

type errorBody struct {
	Error   string            `json:"error"`
	Message string            `json:"message"`
	Fields  map[string]string `json:"fields,omitempty"`
	// Dependants: the saved work a dependants_exist refusal names.
	Dependants []cairn.Dependant `json:"dependants,omitempty"`
	// RetryAfterSeconds repeats the Retry-After header in the body (SPEC:
	// vnc_auth_retry_in_progress and _settling carry retry_after_seconds).
	RetryAfterSeconds int `json:"retry_after_seconds,omitempty"`
	// Probe: vnc_backend_no_rfb_banner's probe_stage, attempt, elapsed_ms.
	*cairn.Probe
}

// Codes are the codes the API layer itself answers with; the Engine's core
// capability declares them.
var Codes = []cairn.Code{
	{ID: ECodeTemporalUnavailable, Status: http.StatusServiceUnavailable, Retryable: true},
	{ID: ECodeAgentContextRequired, Status: http.StatusUnauthorized},
	{ID: ECodeAgentContextRefused, Status: http.StatusForbidden},
	{ID: ECodeProtocolUnsupported, Status: http.StatusUpgradeRequired},
}

// ECodeTemporalUnavailable: the route starts or asks a durable operation
// and Temporal cannot be reached; sign-in and agent callbacks keep working.
const ECodeTemporalUnavailable = workflowclient.ECodeTemporalUnavailable

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
	if p, ok := errors.AsType[*workflowclient.OperationPending](err); ok {
		// Not a failure: the operation goes on after its request.
		if entry := auditFrom(r); entry != nil {
			entry.Outcome = "accepted"
		}
		writeOperationPending(w, p)
		return
	}
	var e *cairn.Error
	if !errors.As(err, &e) && db.Transient(err) {
		log.Warn("database unavailable", "err", err)
		errors.As(db.Overloaded(), &e)
	}
	if e == nil {
		// Temporal away or busy: the one mapping starters use too.
		if e = workflowclient.Unavailable(err); e != nil {
			metricsFrom(r.Context()).TemporalError("api")
			log.Warn("temporal unavailable", "err", err)
		}
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
	status := codesFrom(r.Context()).Status(e.Code)
	if e.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfterSeconds))
	}
	writeJSON(w, status, errorBody{Error: e.Code, Message: e.Message, Fields: e.Fields, Dependants: e.Dependants,
		RetryAfterSeconds: e.RetryAfterSeconds, Probe: e.Probe})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
