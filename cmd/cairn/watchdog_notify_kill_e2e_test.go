package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/pgtest"
)

// kill -9 of the Engine while an incident's webhook is being sent (the
// delivery row claimed, the POST in flight): once the Engine is back, the
// incident workflow's retried send finds the claim and does not send
// again. The webhook received the notification once.
func TestWatchdogNotificationSentOnceThroughKill(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tmp, err := filepath.Abs(t.TempDir())
	require.NoError(t, err)
	dataDir := filepath.Join(tmp, "data")
	dbURL := pgtest.URL(pgtest.NewDatabase(t))
	httpPort, httpsPort := freePort(t), freePort(t)
	env := []string{"DATABASE_URL=" + dbURL, fmt.Sprintf("CAIRN_TEMPORAL_PORT=%d", freePort(t))}
	eng := startServeAt(t, dataDir, httpPort, httpsPort, env...)
	token, _, _ := signInSecret(t, eng)
	store, err := db.Open(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(store.Close)

	// The webhook holds its first request until the test ends: the Engine
	// is killed while it waits for the answer.
	var mu sync.Mutex
	var got []string
	first := make(chan struct{})
	release := make(chan struct{})
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, string(b))
		n := len(got)
		mu.Unlock()
		if n == 1 {
			close(first)
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
	}))
	t.Cleanup(func() { close(release); hook.Close() })
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(got) }

	site := eng.post(t, "/api/sites", token, map[string]any{"name": "Watched", "site_worker_slug": "watched"})
	siteID := cairn.SiteID(site["site_id"].(float64))
	_, err = store.Queries.DeviceInsert(ctx, db.DeviceInsertParams{Guid: "hot-device", Hostname: "hot-01", SiteID: siteID})
	require.NoError(t, err)
	_, err = store.Pool.Exec(ctx, `UPDATE devices SET last_seen = now(), metrics = '{"cpu_percent": 99, "memory_used_bytes": 1,
		"memory_total_bytes": 4, "uptime_seconds": 86400, "logged_in_users": []}' WHERE guid = 'hot-device'`)
	require.NoError(t, err)
	_, err = store.Pool.Exec(ctx, `INSERT INTO device_inventory (device_guid, services) VALUES ('hot-device', '[]')`)
	require.NoError(t, err)
	eng.post(t, "/api/watchdogs/channels", token, map[string]any{"name": "hook", "kind": "webhook",
		// The receiver is on loopback: allowed explicitly.
		"webhook": map[string]any{"url": hook.URL, "allow_private_cidrs": []string{"127.0.0.1/32"}}, "secret": "kill-test-secret"})
	eng.post(t, "/api/watchdogs", token, map[string]any{"name": "CPU hot", "severity": "critical", "targets": map[string]any{"kind": "all"},
		"rules": []map[string]any{{"subject": "cpu_percent", "operator": "gt", "threshold": 90}}, "actions": []map[string]any{}})

	select {
	case <-first:
	case <-time.After(3 * time.Minute):
		t.Fatalf("the webhook was never called; engine output:\n%s", eng.out)
	}
	status := func() string {
		var s string
		if err := store.Pool.QueryRow(ctx, `SELECT status FROM notification_deliveries`).Scan(&s); err != nil {
			return err.Error()
		}
		return s
	}
	require.Equal(t, "sending", status(), "claimed before the send")
	require.NoError(t, eng.cmd.Process.Signal(syscall.SIGKILL))
	_, _ = eng.cmd.Process.Wait()

	eng = startServeAt(t, dataDir, httpPort, httpsPort, env...)
	require.Equal(t, "login_required", eng.post(t, "/api/bootstrap/aegis/unlock", "", map[string]any{"passphrase": "e2e test passphrase"})["phase"])
	// The killed attempt times out (its start-to-close); the retry finds
	// the claim and marks it abandoned rather than send again.
	require.Eventually(t, func() bool { return status() == "abandoned" }, 5*time.Minute, time.Second,
		"delivery %s; engine output:\n%s", status(), eng.out)
	require.Equal(t, 1, count(), "the webhook got the notification once")
}
