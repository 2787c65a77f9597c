package agentgateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
)

// One agent flooding replies holds at most MaxRepliesInFlight handlers at
// once (issue 21 item 13): the socket is not read while they are busy, so
// it cannot take the database pool from every other agent; every reply is
// still handled once slots free.
func TestRepliesInFlightAreBoundedPerSocket(t *testing.T) {
	t.Parallel()
	const flood = 10 * MaxRepliesInFlight
	var inFlight, most, handled atomic.Int64
	release := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		c := newConn(r.Context(), ws, devicetrust.Identity{GUID: "flood"}, nil)
		c.onReply = func(*conn, proto.Envelope) {
			n := inFlight.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			<-release
			inFlight.Add(-1)
			handled.Add(1)
		}
		_ = c.readLoop(time.Hour)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { once.Do(func() { close(release) }) })

	ctx := context.Background()
	agent, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	require.NoError(t, err)
	t.Cleanup(func() { agent.CloseNow() })
	go func() {
		for i := 0; i < flood; i++ {
			if wsjson.Write(ctx, agent, proto.Envelope{Type: proto.MsgReply, ID: "r"}) != nil {
				return
			}
		}
	}()
	require.Eventually(t, func() bool { return inFlight.Load() == MaxRepliesInFlight }, time.Minute, 10*time.Millisecond)
	require.Equal(t, int64(MaxRepliesInFlight), most.Load(), "more replies in flight than the bound")
	once.Do(func() { close(release) })
	require.Eventually(t, func() bool { return handled.Load() == flood }, time.Minute, 10*time.Millisecond)
	require.Equal(t, int64(MaxRepliesInFlight), most.Load())
}
