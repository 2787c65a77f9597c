package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type sseEvent struct {
	ID, Type string
	Data     map[string]any
}

// openStream opens the operator event stream and returns its events.
func openStream(t *testing.T, base, token string) <-chan sseEvent {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/api/realtime/events", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, 200, res.StatusCode)
	require.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
	out := make(chan sseEvent, 64)
	go func() {
		defer res.Body.Close()
		defer close(out)
		sc := bufio.NewScanner(res.Body)
		var e sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if e.Type != "" {
					out <- e
				}
				e = sseEvent{}
			case strings.HasPrefix(line, "id: "):
				e.ID = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				e.Type = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &e.Data)
			}
		}
	}()
	first := next(t, out, "ready")
	require.NotEmpty(t, first.Data["stream_id"])
	return out
}

// next waits for the next event of type typ, skipping others.
func next(t *testing.T, events <-chan sseEvent, typ string) sseEvent {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case e, ok := <-events:
			require.True(t, ok, "stream closed while waiting for %s", typ)
			if e.Type == typ {
				return e
			}
		case <-deadline:
			t.Fatalf("no %s event within 10s", typ)
		}
	}
}

// none asserts that no event of type typ arrives within d.
func none(t *testing.T, events <-chan sseEvent, typ string, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case e := <-events:
			require.NotEqual(t, typ, e.Type, "unexpected %s: %v", typ, e.Data)
		case <-deadline:
			return
		}
	}
}

func TestToastRulesAndScoping(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	operator := f.operator(t, "toast-operator")
	adminStream := openStream(t, f.url, admin)
	operatorStream := openStream(t, f.url, operator)

	// Succeeds with nobody listening, fills defaults, keeps line breaks.
	r := f.do(t, "POST", "/api/notifications/notify", operator, map[string]any{"message": "Backup finished\nall good", "severity": "WARNING", "icon": "schedule"})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, "Notification", r.Body["title"])
	require.Equal(t, "warning", r.Body["variant"])
	require.Equal(t, float64(5200), r.Body["ttl_ms"])
	require.Equal(t, "operator", r.Body["role"])
	require.Equal(t, "toast-operator", r.Body["sender"])
	require.NotEmpty(t, r.Body["id"])
	require.NotEmpty(t, r.Body["created_at"])
	for _, stream := range []<-chan sseEvent{adminStream, operatorStream} {
		e := next(t, stream, "service_notification")
		require.Equal(t, r.Body["id"], e.Data["id"])
		require.Equal(t, "Backup finished\nall good", e.Data["message"])
		require.Equal(t, "schedule", e.Data["icon"])
	}

	// username scopes the toast to that operator's streams only.
	r = f.do(t, "POST", "/api/notifications/notify", admin, map[string]any{"message": "just for you", "username": "toast-operator", "type": "error"})
	require.Equal(t, 200, r.Status, r.Raw)
	e := next(t, operatorStream, "service_notification")
	require.Equal(t, "just for you", e.Data["message"])
	require.Equal(t, "error", e.Data["variant"])
	none(t, adminStream, "service_notification", time.Second)

	bad := []map[string]any{
		{},
		{"message": "   "},
		{"message": "x", "variant": "success"},
		{"message": "x", "ttl_ms": 5},
		{"message": strings.Repeat("m", 2001)},
		{"message": "x", "ttl_ms": "soon"},
	}
	for _, body := range bad {
		r := f.do(t, "POST", "/api/notifications/notify", admin, body)
		require.Equal(t, 400, r.Status, "%v: %s", body, r.Raw)
		require.Equal(t, "validation_failed", r.Body["error"])
	}
}

// Events cross replicas: a toast sent to one Engine reaches a stream held
// by another, through PostgreSQL LISTEN/NOTIFY.
func TestEventsFanOutAcrossReplicas(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	other := f.newEngine(t)
	r := f.call(t, other.http.URL, "POST", "/api/bootstrap/aegis/unlock", "", map[string]any{"passphrase": passphrase})
	require.Equal(t, 200, r.Status, r.Raw)

	stream := openStream(t, other.http.URL, admin)
	r = f.do(t, "POST", "/api/notifications/notify", admin, map[string]any{"message": "from replica one"})
	require.Equal(t, 200, r.Status, r.Raw)
	e := next(t, stream, "service_notification")
	require.Equal(t, "from replica one", e.Data["message"])
}

func TestPresenceCountsOpenStreams(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	watcher := openStream(t, f.url, admin)
	e := next(t, watcher, "server_operator_presence_changed")
	require.Equal(t, float64(1), e.Data["stream_count"])

	operator := f.operator(t, "presence-op")
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", f.url+"/api/realtime/events", nil)
	req.Header.Set("Authorization", "Bearer "+operator)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	e = next(t, watcher, "server_operator_presence_changed")
	require.Equal(t, float64(2), e.Data["stream_count"])
	names := []string{}
	for _, o := range e.Data["operators"].([]any) {
		names = append(names, o.(map[string]any)["username"].(string))
	}
	require.ElementsMatch(t, []string{"admin", "presence-op"}, names)

	cancel()
	res.Body.Close()
	e = next(t, watcher, "server_operator_presence_changed")
	require.Equal(t, float64(1), e.Data["stream_count"])
}
