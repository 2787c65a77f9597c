package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/internal/events"
)

// closed waits for the stream's stream_closed event with the reason and for
// the stream to end.
func closed(t *testing.T, stream <-chan sseEvent, reason string) {
	t.Helper()
	e := next(t, stream, "stream_closed")
	require.Equal(t, reason, e.Data["reason"])
	select {
	case _, ok := <-stream:
		require.False(t, ok, "the stream goes on after stream_closed")
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not end after stream_closed")
	}
}

// An open stream ends with its session: on logout, and when the session
// idles out though the stream itself stayed open (a stream is no activity).
func TestEventStreamEndsWithItsSession(t *testing.T) {
	t.Parallel()
	f := setup(t)
	secret := f.bootstrap(t)
	token := f.login(t, f.url, "admin", adminPassword, secret).Body["token"].(string)
	stream := openStream(t, f.url, token)
	require.Equal(t, 204, f.do(t, "POST", "/api/auth/logout", token, nil).Status)
	closed(t, stream, "session_ended")

	token = f.login(t, f.url, "admin", adminPassword, secret).Body["token"].(string)
	stream = openStream(t, f.url, token)
	f.clk.Advance(31 * time.Minute)
	closed(t, stream, "session_ended")
	require.Equal(t, 401, f.do(t, "GET", "/api/auth/me", token, nil).Status)
}

// A change of the operator's sites closes the stream, so the reconnected
// stream filters events by the new scope.
func TestEventStreamClosesWhenTheSiteScopeChanges(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	north := f.createSite(t, admin, "north")
	south := f.createSite(t, admin, "south")
	operator := f.operator(t, "streamer")
	assign := func(sites ...int64) {
		r := f.do(t, "POST", "/api/user_site_assignments/assign", admin, map[string]any{"usernames": []string{"streamer"}, "site_ids": sites})
		require.Equal(t, 200, r.Status, r.Raw)
	}
	assign(north)
	stream := openStream(t, f.url, operator)
	adminStream := openStream(t, f.url, admin)
	assign(north, south)
	closed(t, stream, "scope_changed")

	stream = openStream(t, f.url, operator)
	r := f.do(t, "POST", "/api/notifications/notify", admin, map[string]any{"message": "still here"})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, "still here", next(t, stream, "service_notification").Data["message"])
	// The administrator's stream saw neither change (all sites either way).
	require.Equal(t, "still here", next(t, adminStream, "service_notification").Data["message"])
}

// One operator holds at most events.MaxStreamsPerOperator streams; the
// next is refused with too_many_streams until one closes. Other operators
// are not affected.
func TestEventStreamsPerOperatorAreCapped(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	operator := f.operator(t, "many-tabs")
	open := func(token string) *http.Response {
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		req, err := http.NewRequestWithContext(ctx, "GET", f.url+"/api/realtime/events", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { res.Body.Close() })
		return res
	}
	cancels := make([]context.CancelFunc, 0, events.MaxStreamsPerOperator)
	for range events.MaxStreamsPerOperator {
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		req, err := http.NewRequestWithContext(ctx, "GET", f.url+"/api/realtime/events", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+operator)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		require.Equal(t, 200, res.StatusCode)
		t.Cleanup(func() { res.Body.Close() })
		cancels = append(cancels, cancel)
	}
	res := open(operator)
	require.Equal(t, 429, res.StatusCode)
	var r map[string]any
	require.NoError(t, json.NewDecoder(res.Body).Decode(&r))
	require.Equal(t, "too_many_streams", r["error"])
	require.NotEmpty(t, r["message"])

	openStream(t, f.url, admin) // another operator's budget

	cancels[0]()
	require.Eventually(t, func() bool {
		res := open(operator)
		res.Body.Close()
		return res.StatusCode == 200
	}, 30*time.Second, 50*time.Millisecond, "a closed stream frees its place")
}
