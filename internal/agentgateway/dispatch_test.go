package agentgateway_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/agentgateway"
)

// completions records what the gateway completes activities with, by
// task token, standing in for Temporal (the API tests run the real one).
type completions struct {
	mu    sync.Mutex
	got   map[string]completion
	beats map[string]int
}

type completion struct {
	reply     json.RawMessage
	code      string
	message   string
	retryable bool
}

func newCompletions() *completions {
	return &completions{got: map[string]completion{}, beats: map[string]int{}}
}

func (c *completions) Complete(_ context.Context, token []byte, r agentgateway.Reply) error {
	c.record(string(token), completion{reply: r.Payload})
	return nil
}

func (c *completions) Fail(_ context.Context, token []byte, code, message string, retryable bool) error {
	c.record(string(token), completion{code: code, message: message, retryable: retryable})
	return nil
}

func (c *completions) Heartbeat(_ context.Context, token []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.beats[string(token)]++
	return nil
}

func (c *completions) record(token string, v completion) {
	c.mu.Lock()
	_, dup := c.got[token]
	c.got[token] = v
	c.mu.Unlock()
	if dup {
		panic("completed twice: " + token)
	}
}

func (c *completions) wait(t *testing.T, token string) completion {
	t.Helper()
	var got completion
	require.Eventually(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		v, ok := c.got[token]
		got = v
		return ok
	}, 30*time.Second, 10*time.Millisecond, "%s was never completed", token)
	return got
}

func (c *completions) beatsOf(token string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.beats[token]
}

func request(dev string, typ string, payload json.RawMessage) agentgateway.Request {
	id := uuid.NewString()
	return agentgateway.Request{ID: id, OperationID: cairn.OperationID("op-" + id), GUID: cairn.DeviceGUID(dev), Type: typ, Payload: payload,
		TaskToken: []byte("token-" + id), ExpiresAt: time.Now().Add(time.Hour)}
}

// A request dispatched by one replica reaches the socket on another, and
// the reply completes the activity there, with payloads far beyond one
// notification.
func TestDispatchCompletesWhereverTheSocketIs(t *testing.T) {
	t.Parallel()
	f := setup(t)
	done := newCompletions()
	a := f.replica(t, "replica-a", nil, agentgateway.Options{Completer: done})
	b := f.replica(t, "replica-b", nil, agentgateway.Options{Completer: done})
	big := strings.Repeat("x", 64<<10)
	f.device(t, "alpha")
	for _, tc := range []struct {
		name   string
		holder *replica
	}{
		{"socket on the dispatching replica", a},
		{"socket on another replica", b},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dev := f.device(t, "alpha")
			ag := connect(t, tc.holder, dev)
			req := request(string(dev.GUID), proto.EventProcessManagement, payload(t, map[string]string{"action": "list", "pad": big}))
			require.NoError(t, a.hub.Dispatch(context.Background(), req))
			got := ag.next()
			require.Equal(t, proto.EventProcessManagement, got.Type)
			require.Equal(t, req.ID, got.ID)
			require.Equal(t, string(req.OperationID), got.OperationID, "redeliveries carry the operation's ID")
			require.Contains(t, string(got.Payload), big)

			rows := make([]map[string]any, 2000)
			for i := range rows {
				rows[i] = map[string]any{"pid": i + 2, "name": "worker", "command": strings.Repeat("c", 200)}
			}
			ag.send(proto.MsgReply, got.ID, map[string]any{"captured_at": time.Now(), "processes": rows})
			c := done.wait(t, string(req.TaskToken))
			require.Empty(t, c.code)
			var snap proto.ProcessSnapshot
			require.NoError(t, json.Unmarshal(c.reply, &snap))
			require.Len(t, snap.Processes, 2000)

			// A repeated reply completes nothing twice (record panics).
			ag.send(proto.MsgReply, got.ID, map[string]any{})
		})
	}
}

func TestDispatchFailures(t *testing.T) {
	t.Parallel()
	f := setup(t)
	done := newCompletions()
	r := f.replica(t, "replica-a", nil, agentgateway.Options{Completer: done, HeartbeatEvery: 50 * time.Millisecond})
	ctx := context.Background()
	f.device(t, "alpha") // the site exists before the parallel subtests

	t.Run("agent error codes pass an allow-list", func(t *testing.T) {
		t.Parallel()
		dev := f.device(t, "alpha")
		ag := connect(t, r, dev)
		for _, tc := range []struct{ sent, want string }{
			{proto.CodeOpMismatch, proto.CodeOpMismatch},
			{proto.CodeOpNotFound, proto.CodeOpNotFound},
			{"unauthorized", proto.CodeOpFailed},
		} {
			req := request(string(dev.GUID), proto.EventProcessManagement, nil)
			require.NoError(t, r.hub.Dispatch(ctx, req))
			ag.send(proto.MsgReply, ag.next().ID, proto.Error{Code: tc.sent, Message: "no"})
			c := done.wait(t, string(req.TaskToken))
			require.Equal(t, tc.want, c.code)
			require.False(t, c.retryable, "the agent answered: final")
		}
	})

	t.Run("waiting requests are heartbeated, then fail retryable when the socket closes", func(t *testing.T) {
		t.Parallel()
		dev := f.device(t, "alpha")
		ag := connect(t, r, dev)
		req := request(string(dev.GUID), proto.EventServiceControl, nil)
		require.NoError(t, r.hub.Dispatch(ctx, req))
		ag.next()
		eventually(t, func() bool { return done.beatsOf(string(req.TaskToken)) >= 2 }, "the holder heartbeats the activity")
		require.NoError(t, ag.ws.CloseNow())
		c := done.wait(t, string(req.TaskToken))
		require.Equal(t, agentgateway.FailureSocketClosed, c.code)
		require.True(t, c.retryable, "Temporal delivers it again once the agent reconnects")
	})

	t.Run("no socket stores nothing", func(t *testing.T) {
		t.Parallel()
		dev := f.device(t, "alpha")
		err := r.hub.Dispatch(ctx, request(string(dev.GUID), proto.EventSoftwareRefresh, nil))
		require.True(t, cairn.IsCode(err, cairn.ECodeAgentSocketMissing), "%v", err)
	})

	t.Run("oversized replies fail", func(t *testing.T) {
		t.Parallel()
		dev := f.device(t, "alpha")
		ag := connect(t, r, dev)
		req := request(string(dev.GUID), proto.EventSoftwareRefresh, nil)
		require.NoError(t, r.hub.Dispatch(ctx, req))
		ag.send(proto.MsgReply, ag.next().ID, map[string]string{"pad": strings.Repeat("y", agentgateway.MaxReplyBytes)})
		c := done.wait(t, string(req.TaskToken))
		require.Equal(t, agentgateway.FailureReplyTooLarge, c.code)
	})
}
