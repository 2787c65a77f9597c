package logs_test

import (
	"bytes"
	"errors"
	"log/slog"
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
