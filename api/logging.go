package api

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5/middleware"

	"github.com/cairn-rmm/cairn/internal/metrics"
)

// Request-scoped logging: every line logged while serving a request
// carries its request_id, method and route pattern and, once the request
// is authenticated, the operator's user_id or the device's guid. Handlers
// log through logFrom(ctx). Only route patterns are logged, never the raw
// path or query (install links and enrollment polls carry secrets there),
// and never a header or a body.

type logKey struct{}

// requestLogger is the request's logger; middleware further in (the
// route, authentication) enriches it in place, so the access line logged
// on the way out carries what they learnt.
// It also carries the metrics, for writeError, which has no server.
type requestLogger struct {
	l *slog.Logger
	m *metrics.Metrics
}

// logFrom returns the logger of the request ctx belongs to, or nil outside
// a request (writeError then takes the server's).
func logFrom(ctx context.Context) *slog.Logger {
	if rl, ok := ctx.Value(logKey{}).(*requestLogger); ok {
		return rl.l
	}
	return nil
}

// reqLog is the request's logger.
func (s *Server) reqLog(r *http.Request) *slog.Logger { return s.ctxLog(r.Context()) }

// ctxLog is logFrom(ctx), falling back to the server's logger.
func (s *Server) ctxLog(ctx context.Context) *slog.Logger {
	if l := logFrom(ctx); l != nil {
		return l
	}
	return s.Log
}

// metricsFrom returns the metrics of the request ctx belongs to (nil
// outside a request; recording on nil is a no-op).
func metricsFrom(ctx context.Context) *metrics.Metrics {
	if rl, ok := ctx.Value(logKey{}).(*requestLogger); ok {
		return rl.m
	}
	return nil
}

// addLogAttrs adds attributes to the request's logger from here on.
func addLogAttrs(r *http.Request, args ...any) {
	if rl, ok := r.Context().Value(logKey{}).(*requestLogger); ok {
		rl.l = rl.l.With(args...)
	}
}

// requestLog gives the request its logger and logs one access line at
// debug level when it ends.
func (s *Server) requestLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rl := &requestLogger{l: s.Log.With("request_id", middleware.GetReqID(r.Context()), "method", r.Method), m: s.Metrics}
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		next.ServeHTTP(ww, r.WithContext(context.WithValue(r.Context(), logKey{}, rl)))
		status := ww.Status()
		if status == 0 {
			status = http.StatusOK
		}
		l := rl.l
		if metrics.RoutePattern(r) == "unmatched" {
			l = l.With("route", "unmatched")
		}
		l.Debug("http", "status", status, "duration_ms", time.Since(start).Milliseconds())
	})
}

// routeLog names the route pattern on the request's log lines.
func routeLog(pattern string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			addLogAttrs(r, "route", pattern)
			next.ServeHTTP(w, r)
		})
	}
}
