//go:build linux

package shells_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/runtime"
	"github.com/cairn-rmm/cairn/agent/runtime/fakeengine"
	"github.com/cairn-rmm/cairn/agent/shells"
	"github.com/cairn-rmm/cairn/agent/transport"
)

type collector struct{}

func (collector) Collect(context.Context) proto.Inventory { return proto.Inventory{} }
func (collector) Metrics(context.Context) proto.Metrics   { return proto.Metrics{} }

// TestShellThroughTheAgent drives a shell the way the Engine does: the
// open arrives on the realtime socket of a running agent, which dials the
// session socket with its device auth (checked by the fake Engine) and
// outlives the realtime socket that asked for it.
func TestShellThroughTheAgent(t *testing.T) {
	t.Parallel()
	engine := fakeengine.New(t, "code-1")
	path := filepath.Join(t.TempDir(), agent.FileName)
	cfg := agent.Default()
	cfg.ApplyEnrollment("code-1", engine.URL)
	require.NoError(t, agent.Create(path, "enroll", cfg))
	store := runtime.FileStore{Path: path, Writer: "run"}
	id := runtime.Identity{Hostname: "host-1", Fingerprint: "fp-1"}
	client, err := transport.FromAgentConfig(cfg, "test", nil)
	require.NoError(t, err)
	// The fake approves at the first poll; no need to wait the default 5 s for it.
	_, err = runtime.Enroll(t.Context(), store, client, runtime.EnrollOptions{
		Identity: id, Version: "test", Timing: runtime.Timing{EnrollPoll: 10 * time.Millisecond},
	})
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	handlers := runtime.NewHandlers()
	shells, err := shells.Register(ctx, handlers, shells.Options{})
	require.NoError(t, err)
	a, err := runtime.New(runtime.Options{
		Store: store, Identity: id, Version: "test", Collector: collector{}, Handlers: handlers,
		Timing: runtime.Timing{ReconnectMin: 10 * time.Millisecond, ReconnectMax: 20 * time.Millisecond},
	})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
		shells.Close()
	})

	rt := <-engine.Conns()
	url, token := engine.ShellSession("sess-1")
	open, err := json.Marshal(proto.ShellOpen{SessionID: "sess-1", URL: url, Token: token, Cols: 80, Rows: 24})
	require.NoError(t, err)
	require.NoError(t, rt.Send(t.Context(), proto.Envelope{Type: proto.EventShellOpen, ID: "op-1", Payload: open}))
	reply, err := rt.Read(t.Context())
	require.NoError(t, err)
	require.Equal(t, proto.MsgReply, reply.Type)
	require.Equal(t, "op-1", reply.ID)
	var opened proto.ShellOpened
	require.NoError(t, json.Unmarshal(reply.Payload, &opened))
	require.True(t, opened.Opened, string(reply.Payload))
	sc := <-engine.ShellConns()
	defer sc.WS.CloseNow()

	// The realtime socket drops; the shell stays.
	rt.Close()
	<-rt.Done()
	require.NoError(t, sc.WS.Write(t.Context(), websocket.MessageBinary, []byte("echo $((6*7))\n")))
	var out strings.Builder
	for !strings.Contains(out.String(), "42") {
		typ, b, err := sc.WS.Read(t.Context())
		require.NoError(t, err, out.String())
		if typ == websocket.MessageBinary {
			out.Write(b)
		}
	}
}
