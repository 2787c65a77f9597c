package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/runtime/fakeengine"
)

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestOpCacheExpiresAndEvicts(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	c := newOpCache(clock.now)
	c.size = 3

	f, run := c.join("a")
	require.True(t, run)
	again, run := c.join("a")
	require.False(t, run, "a running operation is joined, not run again")
	require.Same(t, f, again)
	c.finish(f, json.RawMessage(`1`))
	<-again.done
	require.JSONEq(t, `1`, string(again.reply))

	clock.add(c.ttl - time.Second)
	_, run = c.join("a")
	require.False(t, run, "still remembered just before the TTL")
	clock.add(time.Second)
	fresh, run := c.join("a")
	require.True(t, run, "forgotten at the TTL")

	// Full: the oldest finished entry goes, running ones stay.
	b, _ := c.join("b")
	c.finish(b, json.RawMessage(`2`))
	clock.add(time.Second)
	c.finish(fresh, json.RawMessage(`3`))
	_, run = c.join("c") // a, b finished; c running
	require.True(t, run)
	_, run = c.join("d")
	require.True(t, run)
	require.Equal(t, 3, c.len())
	_, run = c.join("b")
	require.True(t, run, "b ended first and was evicted")
	_, run = c.join("c")
	require.False(t, run, "running entries are never evicted")
}

func TestOperationsRunOnce(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.enroll(t)
	opts := e.options()
	var runs atomic.Int32
	release := make(chan struct{})
	started := make(chan struct{}, 4)
	require.NoError(t, opts.Handlers.Register("slow_op", func(ctx context.Context, _ Caller, payload json.RawMessage) (any, error) {
		n := runs.Add(1)
		started <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return map[string]any{"run": n, "payload": payload}, nil
	}))
	start(t, opts)
	first := nextConn(t, e.engine)
	ctx := t.Context()

	send := func(c *fakeengine.Conn, id, op string) {
		t.Helper()
		require.NoError(t, c.Send(ctx, proto.Envelope{Type: "slow_op", ID: id, OperationID: op, Payload: json.RawMessage(`"x"`)}))
	}
	read := func(c *fakeengine.Conn) proto.Envelope {
		t.Helper()
		env, err := c.Read(ctx)
		require.NoError(t, err)
		require.Equal(t, proto.MsgReply, env.Type)
		return env
	}

	// The socket drops while op-1 runs; the run goes on, and the
	// redelivery on the next socket waits for it.
	send(first, "d1", "op-1")
	<-started
	first.Close()
	second := nextConn(t, e.engine)
	send(second, "d2", "op-1")
	// A ping answered proves the redelivery was read (and joined, not
	// run) before the release.
	require.NoError(t, second.Send(ctx, proto.Envelope{Type: proto.MsgPing, ID: "p"}))
	pong, err := second.Read(ctx)
	require.NoError(t, err)
	require.Equal(t, proto.MsgPong, pong.Type)
	close(release)
	got := read(second)
	require.Equal(t, "d2", got.ID, "the reply correlates with the delivery that asked")
	require.JSONEq(t, `{"run":1,"payload":"x"}`, string(got.Payload))

	// Finished: answered from the cache, with the same reply.
	send(second, "d3", "op-1")
	again := read(second)
	require.Equal(t, "d3", again.ID)
	require.JSONEq(t, string(got.Payload), string(again.Payload))

	// Another operation runs.
	send(second, "d4", "op-2")
	require.JSONEq(t, `{"run":2,"payload":"x"}`, string(read(second).Payload))
	require.Equal(t, int32(2), runs.Load())
}

func TestOperationErrorsAreRemembered(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.enroll(t)
	opts := e.options()
	var runs atomic.Int32
	require.NoError(t, opts.Handlers.Register("failing_op", func(context.Context, Caller, json.RawMessage) (any, error) {
		return nil, &proto.Error{Code: proto.CodeOpFailed, Message: fmt.Sprintf("run %d failed", runs.Add(1))}
	}))
	start(t, opts)
	conn := nextConn(t, e.engine)
	ctx := t.Context()
	for _, id := range []string{"d1", "d2"} {
		require.NoError(t, conn.Send(ctx, proto.Envelope{Type: "failing_op", ID: id, OperationID: "op-1"}))
		env, err := conn.Read(ctx)
		require.NoError(t, err)
		require.Equal(t, id, env.ID)
		require.JSONEq(t, `{"error":"failed","message":"run 1 failed"}`, string(env.Payload))
	}
}
