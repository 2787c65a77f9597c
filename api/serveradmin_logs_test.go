package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/internal/authtest"
	"github.com/cairn-rmm/cairn/internal/logs"
	"github.com/cairn-rmm/cairn/internal/pgtest"
)

// setupLogs is a fixture whose Engine reads log files from a directory a
// process logger (the file sink `cairn serve` uses) writes as "engine".
func setupLogs(t *testing.T) (*fixture, *slog.Logger) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "logs")
	file, err := logs.OpenFile(logs.FileOptions{Dir: dir, Source: "engine"})
	require.NoError(t, err)
	t.Cleanup(func() { file.Close() })
	f := &fixture{store: pgtest.NewDB(t), clk: authtest.NewClock(), github: newFakeGitHub(t), logDir: dir}
	f.engine = f.newEngine(t)
	f.url = f.engine.http.URL
	return f, logs.NewTee(discardWriter{}, logs.FormatJSON, slog.LevelDebug, file)
}

type discardWriter struct{}

func (discardWriter) Write(b []byte) (int, error) { return len(b), nil }

func TestServerLogsReadFilterAndFollow(t *testing.T) {
	t.Parallel()
	f, log := setupLogs(t)
	admin := f.admin(t)
	op := f.operator(t, "logs-operator")
	pat := "cairn_pat_0123456789abcdefghijklmnopqrst"
	log.Info("device connected", "device_guid", "guid-logs-1")
	log.Warn("refresh refused "+pat, "refresh_token", "rt-logs-secret-1")
	log.Error("database unreachable")

	r := f.do(t, "GET", "/api/server/logs", admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, true, r.Body["enabled"])
	require.Equal(t, "engine", r.Body["sources"].([]any)[0].(map[string]any)["name"])
	require.EqualValues(t, logs.MaxScanBytes, r.Body["max_scan_bytes"])

	r = f.do(t, "GET", "/api/server/logs/engine", admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.NotContains(t, r.Raw, pat)
	require.NotContains(t, r.Raw, "rt-logs-secret-1")
	require.Equal(t, false, r.Body["truncated"])
	msgs := func(r response) []string {
		var out []string
		for _, e := range r.Body["entries"].([]any) {
			out = append(out, e.(map[string]any)["msg"].(string))
		}
		return out
	}
	require.Equal(t, []string{"device connected", "refresh refused [redacted]", "database unreachable"}, msgs(r))
	require.Equal(t, []string{"refresh refused [redacted]", "database unreachable"}, msgs(f.do(t, "GET", "/api/server/logs/engine?level=warn", admin, nil)))
	require.Equal(t, []string{"device connected"}, msgs(f.do(t, "GET", "/api/server/logs/engine?q=GUID-LOGS", admin, nil)))
	require.Equal(t, []string{"database unreachable"}, msgs(f.do(t, "GET", "/api/server/logs/engine?limit=1", admin, nil)))
	future := url.QueryEscape(time.Now().Add(time.Hour).Format(time.RFC3339))
	require.Empty(t, f.do(t, "GET", "/api/server/logs/engine?since="+future, admin, nil).Body["entries"])
	require.Empty(t, f.do(t, "GET", "/api/server/logs/engine?q=rt-logs-secret", admin, nil).Body["entries"], "a search cannot probe a secret")

	for _, c := range []struct{ query, field string }{
		{"level=loud", "level"}, {"since=yesterday", "since"}, {"until=1", "until"}, {"limit=0", "limit"}, {"limit=1001", "limit"},
	} {
		r := f.do(t, "GET", "/api/server/logs/engine?"+c.query, admin, nil)
		require.Equal(t, 400, r.Status, c.query)
		require.NotEmpty(t, r.field(c.field), c.query)
	}
	require.Equal(t, 400, f.do(t, "GET", "/api/server/logs/Bad.Name", admin, nil).Status)
	require.Equal(t, 404, f.do(t, "GET", "/api/server/logs/worker", admin, nil).Status)
	for _, path := range []string{"/api/server/logs", "/api/server/logs/engine", "/api/server/logs/engine/stream"} {
		require.Equal(t, 403, f.do(t, "GET", path, op, nil).Status, path)
		require.Equal(t, 401, f.do(t, "GET", path, "", nil).Status, path)
	}

	// Live tail: a new warning arrives, redacted; an info line is filtered.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", f.url+"/api/server/logs/engine/stream?level=warn", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+admin)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	require.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
	events := make(chan string, 16)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(res.Body)
		typ := ""
		for sc.Scan() {
			line := sc.Text()
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				typ = v
			} else if v, ok := strings.CutPrefix(line, "data: "); ok {
				events <- typ + " " + v
			}
		}
	}()
	first := <-events
	require.True(t, strings.HasPrefix(first, "ready "), first)
	log.Info("quiet line")
	log.Warn("tail line", "password", "tail-secret-pw")
	var got string
	select {
	case got = <-events:
	case <-time.After(30 * time.Second):
		t.Fatal("no entry within 30s")
	}
	require.True(t, strings.HasPrefix(got, "entry "), got)
	var e map[string]any
	require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(got, "entry ")), &e))
	require.Equal(t, "tail line", e["msg"])
	require.Equal(t, logs.Redacted, e["attrs"].(map[string]any)["password"])
	require.NotContains(t, got, "tail-secret-pw")
}
