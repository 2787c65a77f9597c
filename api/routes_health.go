package api

import (
	"context"
	"net/http"
	"time"

	"go.temporal.io/sdk/client"
)

func (s *Server) healthRoutes() []Route {
	return []Route{
		{"GET", "/health", AuthNone, s.live},
		{"GET", "/healthz", AuthNone, s.live},
		{"GET", "/live", AuthNone, s.live},
		{"GET", "/ready", AuthNone, s.ready},
		{"GET", "/startup", AuthNone, s.startup},
		{"GET", "/engine-status", AuthNone, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/server", http.StatusPermanentRedirect)
		}},
	}
}

func (s *Server) live(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// ready answers 200 only when PostgreSQL and Temporal both answer.
func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	checks := map[string]string{"postgres": "ok", "temporal": "ok"}
	ok := true
	if _, err := s.Store.DatabasePing(ctx); err != nil {
		checks["postgres"], ok = "unavailable", false
		s.Log.Warn("readiness: postgres", "err", err)
	}
	if _, err := s.Temporal.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		checks["temporal"], ok = "unavailable", false
		s.Log.Warn("readiness: temporal", "err", err)
	}
	if !ok {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "unavailable", "checks": checks})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "checks": checks})
}

func (s *Server) startup(w http.ResponseWriter, _ *http.Request) {
	if !s.Started() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "starting"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}
