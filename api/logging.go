package api

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5/middleware"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/logs"
	"github.com/cairn-rmm/cairn/internal/metrics"
)

// Request-scoped logging: every line logged while serving a request
// carries its request_id, method and route pattern and, once the request
// is authenticated, the operator's user_id or the device's guid. They live
// in a logs.Scope in the request context: handlers log through
// logFrom(ctx), domain packages with their loggers' *Context methods, and
// the Engine's root handler (internal/logs) adds the scope to both. Only
// route patterns are logged, never the raw path or query (install links
// and enrollment polls carry secrets there), and never a header or a body.

type logKey struct{}

// requestLogger is what a request's context holds for logging: the
// server's logger and, for writeError, which has no server, the metrics.
type requestLogger struct {
	base  *slog.Logger
	m     *metrics.Metrics
	codes *cairn.CodeBook
}

// logFrom returns the logger of the request ctx belongs to, or nil outside
// a request (writeError then takes the server's).
func logFrom(ctx context.Context) *slog.Logger {
	if rl, ok := ctx.Value(logKey{}).(*requestLogger); ok {
		return logs.Bind(rl.base, ctx)
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

// codesFrom returns the declared codes of the Engine serving the request
// ctx belongs to (the core codes outside a request).
func codesFrom(ctx context.Context) *cairn.CodeBook {
	if rl, ok := ctx.Value(logKey{}).(*requestLogger); ok && rl.codes != nil {
		return rl.codes
	}
	return cairn.CoreBook()
}

// addLogAttrs adds attributes to the request's log lines from here on.
func addLogAttrs(r *http.Request, args ...any) {
	if sc := logs.ScopeFrom(r.Context()); sc != nil {
		sc.Add(args...)
	}
}

// requestLog gives the request its log scope and logs one access line at
// debug level when it ends.
func (s *Server) requestLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ctx, sc := logs.NewScope(r.Context(), "request_id", middleware.GetReqID(r.Context()), "method", r.Method)
		ctx = context.WithValue(ctx, logKey{}, &requestLogger{base: s.Log, m: s.Metrics, codes: s.Codes})
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		next.ServeHTTP(ww, r.WithContext(ctx))
		status := ww.Status()
		if status == 0 {
			status = http.StatusOK
		}
		if metrics.RoutePattern(r) == "unmatched" {
			sc.Add("route", "unmatched")
		}
		logs.Bind(s.Log, ctx).Debug("http", "status", status, "duration_ms", time.Since(start).Milliseconds())
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
