package api

import (
	"context"
	"net/http"
	"time"

	"go.temporal.io/sdk/client"
)

func (s *Server) healthRoutes() []Route {
	return []Route{
		{"GET", "/health", AuthNone, raw(s.live).Out(http.StatusOK, statusJSON{}), "Check liveness (/health)"},
		{"GET", "/healthz", AuthNone, raw(s.live).Out(http.StatusOK, statusJSON{}), "Check liveness (/healthz)"},
		{"GET", "/live", AuthNone, raw(s.live).Out(http.StatusOK, statusJSON{}), "Check liveness"},
		{"GET", "/ready", AuthNone, raw(s.ready).Out(http.StatusOK, readyBody{}).Also(http.StatusServiceUnavailable, readyBody{}), "Check readiness"},
		{"GET", "/startup", AuthNone, raw(s.startup).Out(http.StatusOK, statusJSON{}).Also(http.StatusServiceUnavailable, statusJSON{}), "Check that startup finished"},
		{"GET", "/engine-status", AuthNone, raw(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/server", http.StatusPermanentRedirect)
		}).Stream(http.StatusPermanentRedirect, "text/html"), "Redirect to the server page"},
	}
}

// statusJSON is the liveness and startup probes' answer.
type statusJSON struct {
	Status string `json:"status"` // ok | starting
}

func (s *Server) live(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, statusJSON{Status: "ok"})
}

// readyBody is /ready's answer (docs/architecture.md "Readiness").
type readyBody struct {
	// Status is ok (every check passes), degraded (PostgreSQL answers but
	// Temporal does not or the cipher is locked) or unavailable
	// (PostgreSQL does not answer).
	Status string      `json:"status"`
	Checks readyChecks `json:"checks"`
}

type readyChecks struct {
	Postgres string `json:"postgres"` // ok | unavailable
	Temporal string `json:"temporal"` // ok | unavailable
	// Cipher is unlocked, locked or setup_required (the master cipher of
	// this process; unknown while PostgreSQL does not answer).
	Cipher string `json:"cipher"`
}

// ready answers 200 whenever PostgreSQL answers, and 503 only when it does
// not: sign-in, agent heartbeats and token refresh need nothing else, so an
// orchestrator must not pull every replica because Temporal is down (every
// replica shares it) or because a replica's cipher is locked (the unlock
// has to reach it). Temporal and the cipher are reported, not judged.
func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	var body readyBody
	temporal := make(chan string, 1)
	go func() {
		// A shorter budget for Temporal: a black-holed Temporal must not
		// make the probe itself time out.
		tctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if _, err := s.Temporal.CheckHealth(tctx, &client.CheckHealthRequest{}); err != nil {
			s.reqLog(r).Debug("readiness: temporal", "err", err)
			temporal <- "unavailable"
			return
		}
		temporal <- "ok"
	}()
	body.Checks.Postgres = "ok"
	if _, err := s.Store.DatabasePing(ctx); err != nil {
		body.Checks.Postgres = "unavailable"
		s.reqLog(r).Warn("readiness: postgres", "err", err)
	}
	body.Checks.Cipher = s.cipherState(ctx, body.Checks.Postgres == "ok")
	body.Checks.Temporal = <-temporal
	switch {
	case body.Checks.Postgres != "ok":
		body.Status = "unavailable"
		writeJSON(w, http.StatusServiceUnavailable, body)
		return
	case body.Checks.Temporal != "ok" || body.Checks.Cipher != "unlocked":
		body.Status = "degraded"
	default:
		body.Status = "ok"
	}
	writeJSON(w, http.StatusOK, body)
}

func (s *Server) cipherState(ctx context.Context, postgresUp bool) string {
	if s.Cipher.Unlocked() {
		return "unlocked"
	}
	if !postgresUp {
		return "unknown"
	}
	st, err := s.Cipher.Status(ctx)
	if err == nil && !st.Configured {
		return "setup_required"
	}
	return "locked"
}

func (s *Server) startup(w http.ResponseWriter, _ *http.Request) {
	if !s.Started() {
		writeJSON(w, http.StatusServiceUnavailable, statusJSON{Status: "starting"})
		return
	}
	writeJSON(w, http.StatusOK, statusJSON{Status: "ok"})
}
