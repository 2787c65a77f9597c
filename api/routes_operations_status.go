package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/workflowclient"
)

// How long a route running an operation on an agent waits for its outcome
// before answering 202 with the operation's URL. The caller chooses with
// "Prefer: wait=N" (RFC 7240, seconds); DefaultOperationWait when it does
// not, at most MaxOperationWait (a reverse proxy in front of the Engine
// usually cuts requests at 60 seconds).
const (
	DefaultOperationWait = 25 * time.Second
	MaxOperationWait     = 55 * time.Second
	// operationQueryWait bounds the Query that reads a running
	// operation's phase: without it the PostgreSQL row stands.
	operationQueryWait = 3 * time.Second
)

// preferWait reads the wait preference of a Prefer header (RFC 7240):
// comma-separated preferences, each "token[=value]" with optional
// ";"-parameters, the token case-insensitive and the value possibly
// quoted. ok is false when the request names none or a value that is not
// a number of seconds (a preference the server cannot honour is ignored,
// RFC 7240 section 2).
func preferWait(h http.Header) (wait time.Duration, ok bool) {
	for _, line := range h.Values("Prefer") {
		for _, pref := range strings.Split(line, ",") {
			pref, _, _ = strings.Cut(pref, ";")
			name, value, found := strings.Cut(strings.TrimSpace(pref), "=")
			if !found || !strings.EqualFold(strings.TrimSpace(name), "wait") {
				continue
			}
			n, err := strconv.ParseUint(strings.Trim(strings.TrimSpace(value), `"`), 10, 32)
			if err != nil {
				continue
			}
			return min(time.Duration(n)*time.Second, MaxOperationWait), true
		}
	}
	return 0, false
}

type operationWaitKey struct{}

// operationWait is how long the request's operation waits (pendable).
func operationWait(ctx context.Context) time.Duration {
	if d, ok := ctx.Value(operationWaitKey{}).(time.Duration); ok {
		return d
	}
	return DefaultOperationWait
}

// pendable marks a route whose operation may outlive the request: it
// honours "Prefer: wait=N" (answering Preference-Applied) and declares the
// 202 writeError answers for an *workflowclient.OperationPending.
func pendable(e Endpoint) Endpoint {
	inner := e.serve
	e.serve = func(w http.ResponseWriter, r *http.Request) {
		wait, ok := preferWait(r.Header)
		if ok {
			w.Header().Set("Preference-Applied", "wait="+strconv.Itoa(int(wait/time.Second)))
		} else {
			wait = DefaultOperationWait
		}
		inner(w, r.WithContext(context.WithValue(r.Context(), operationWaitKey{}, wait)))
	}
	return e.Also(http.StatusAccepted, operationAcceptedJSON{})
}

// pendableRoutes is pendable for every route of rs (an area whose every
// route runs an operation on the agent).
func pendableRoutes(rs []Route) []Route {
	for i := range rs {
		rs[i].Handler = pendable(rs[i].Handler)
	}
	return rs
}

// operationAcceptedJSON is the 202 of an operation still running when the
// wait ran out; Location carries URL too.
type operationAcceptedJSON struct {
	OperationID string `json:"operation_id"`
	// Status is always running.
	Status string `json:"status"`
	// URL is GET /api/operations/<operation_id>.
	URL string `json:"url"`
}

func operationURL(id cairn.OperationID) string { return "/api/operations/" + string(id) }

// writeOperationPending answers an operation that goes on after its
// request: 202, its URL in Location and the body.
func writeOperationPending(w http.ResponseWriter, p *workflowclient.OperationPending) {
	u := operationURL(p.OperationID)
	w.Header().Set("Location", u)
	w.Header().Set("Retry-After", "1")
	writeJSON(w, http.StatusAccepted, operationAcceptedJSON{OperationID: string(p.OperationID), Status: devices.ActivityRunning, URL: u})
}

// operationStatusJSON is an operation's status.
type operationStatusJSON struct {
	OperationID string `json:"operation_id"`
	// Status is running, completed or failed.
	Status string `json:"status"`
	// Phase, while running, is where the workflow is (recording,
	// waiting_for_agent, applying, finishing), read by Query; absent when
	// the workflow could not be asked.
	Phase string `json:"phase,omitempty"`
	// Error is the failure's stable code (docs/api.md) when failed.
	Error    string `json:"error,omitempty"`
	Kind     string `json:"kind"`
	Summary  string `json:"summary"`
	Actor    string `json:"actor"`
	Hostname string `json:"hostname"`
	// DeviceGUID is empty once the device was purged.
	DeviceGUID string     `json:"device_guid"`
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
	// ActivityID is the operation's row in the device's activity.
	ActivityID int64  `json:"activity_id"`
	URL        string `json:"url"`
}

// operationStatus answers an operation inside the caller's sites: from the
// workflow (a Query) while it runs, from PostgreSQL once it ended.
func (s *Server) operationStatus(r *http.Request) (operationStatusJSON, error) {
	raw := pathParam(r, "operation_id")
	if _, err := uuid.Parse(raw); err != nil {
		return operationStatusJSON{}, cairn.Invalid("operation_id", "must be an operation ID (a UUID)")
	}
	ctx, id := r.Context(), cairn.OperationID(raw)
	a, err := s.Devices.OperationByID(ctx, principal(ctx).SiteScope(), id)
	if err != nil {
		return operationStatusJSON{}, err
	}
	var meta struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal(a.Metadata, &meta)
	out := operationStatusJSON{OperationID: raw, Status: a.Status, Kind: a.Kind, Summary: a.Summary, Actor: a.Actor,
		Hostname: a.Hostname, DeviceGUID: string(a.GUID), StartedAt: a.CreatedAt.UTC(), FinishedAt: a.FinishedAt,
		ActivityID: a.ID, URL: operationURL(id)}
	if a.Status == devices.ActivityFailed {
		out.Error = meta.Error
	}
	if a.Status == devices.ActivityRunning && a.GUID != "" {
		qctx, cancel := context.WithTimeout(ctx, operationQueryWait)
		defer cancel()
		if p, err := s.Operations.Progress(qctx, a.GUID, id); err == nil {
			out.Phase = p.Phase
		} else {
			s.reqLog(r).Debug("operation query failed; answering from PostgreSQL", "operation_id", raw, "err", err)
		}
	}
	return out, nil
}
