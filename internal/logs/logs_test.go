package logs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/internal/logs"
)

func TestRedactKeepsSecretsOutOfLines(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := logs.New(&buf, logs.FormatJSON, slog.LevelDebug)
	pat := "cairn_pat_0123456789abcdefghijklmnop"
	bearer := "Bearer 9f8e7d6c5b4a39281706f5e4d3c2b1a0"
	log.With("refresh_token", "rt-secret-value-1").Info("signed in "+pat,
		"password", "hunter2 hunter2", "Authorization", bearer, "err", errors.New("upstream said "+bearer),
		"note", "token was "+pat, slog.Group("req", "cookie", "cairn_session=abc123"),
		"api_token_id", 42, "route", "/api/auth/tokens")
	out := buf.String()
	for _, secret := range []string{pat, "9f8e7d6c5b4a39281706f5e4d3c2b1a0", "hunter2", "rt-secret-value-1", "abc123"} {
		require.NotContains(t, out, secret)
	}
	require.Contains(t, out, `"api_token_id":42`, "record IDs are not secrets")
	require.Contains(t, out, `"route":"/api/auth/tokens"`)
}

func TestRedactLeavesProseAlone(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	logs.New(&buf, logs.FormatText, slog.LevelInfo).Warn("a DPoP proof is required (Authorization: DPoP <token>)")
	require.Contains(t, buf.String(), "a DPoP proof is required (Authorization: DPoP <token>)")
}

// A request's scope reaches the lines of any package that logs with the
// request's context, and those of a logger bound to it.
func TestScopeAttrsOnEveryLineOfARequest(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	root := logs.New(&buf, logs.FormatJSON, slog.LevelDebug)
	ctx, sc := logs.NewScope(context.Background(), "request_id", "req-1", "method", "GET")
	sc.Add("user_id", 7)
	root.With("component", "devices").WarnContext(ctx, "domain line")
	logs.Bind(root, ctx).Info("handler line", "token", "s3cr3t-value")
	root.Info("background line")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 3)
	for _, l := range lines[:2] {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m))
		require.Equal(t, "req-1", m["request_id"], l)
		require.EqualValues(t, 7, m["user_id"], l)
	}
	require.NotContains(t, lines[1], "s3cr3t-value")
	require.NotContains(t, lines[2], "request_id")
}

// BenchmarkRedactedLine is the cost of one request line through the
// redacting handler, against the bare JSON handler.
func BenchmarkRedactedLine(b *testing.B) {
	for _, bc := range []struct {
		name string
		log  *slog.Logger
	}{
		{"redacted", logs.New(io.Discard, logs.FormatJSON, slog.LevelDebug)},
		{"bare", slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelDebug}))},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ctx, _ := logs.NewScope(context.Background(), "request_id", "host/abc-000001", "method", "GET", "route", "/api/sites", "user_id", 1)
			l := logs.Bind(bc.log, ctx)
			for b.Loop() {
				l.Debug("http", "status", 200, "duration_ms", 3)
			}
		})
	}
}
