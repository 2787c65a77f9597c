package vnc_test

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/vnc"
)

type recordingSink struct {
	mu     sync.Mutex
	events []vnc.Event
}

func (s *recordingSink) SessionEvent(_ context.Context, e vnc.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, e)
	return nil
}

func (s *recordingSink) kinds() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, e := range s.events {
		out = append(out, e.Event)
	}
	return out
}

// Attach reports what the gateway saw through the sink, the seam both the
// in-process gateway and a gateway process use: attached, first_frame (with
// its time) and detached for a session relayed; attached and error (with the
// code) for one that could not be opened.
func TestGatewayAttachReportsEvents(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, agentPW string
		want          []string
		code          string
	}{
		{"relayed", "pw", []string{vnc.EventAttached, vnc.EventFirstFrame, vnc.EventDetached}, ""},
		{"wrong password", "other", []string{vnc.EventAttached, vnc.EventError}, vnc.ECodeAuthFailed},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			sink := &recordingSink{}
			g := &vnc.Gateway{Config: vnc.DefaultConfig(), Dial: fakeServer(t, authServer("pw", 0, "")),
				Credential: func(_ context.Context, pub string) (string, error) { return proto.SealVNCCredential(pub, c.agentPW) }}
			browser, gw := net.Pipe()
			defer browser.Close()
			done := make(chan error, 1)
			go func() {
				_, err := g.Attach(context.Background(), "s-1", gw, sink)
				done <- err
			}()
			if c.code != "" {
				require.Error(t, <-done)
				require.Equal(t, c.want, sink.kinds())
				require.Equal(t, c.code, sink.events[1].Code)
				return
			}
			b := make([]byte, 12)
			_, err := io.ReadFull(browser, b)
			require.NoError(t, err)
			_, _ = browser.Write([]byte("RFB 003.008\n"))
			_, err = io.ReadFull(browser, make([]byte, 2))
			require.NoError(t, err)
			_, _ = browser.Write([]byte{1})
			_, err = io.ReadFull(browser, make([]byte, 4))
			require.NoError(t, err)
			_, _ = browser.Write([]byte{1})
			_, err = io.ReadFull(browser, make([]byte, 28))
			require.NoError(t, err)
			_, _ = browser.Write([]byte{3, 0, 0, 0, 0, 0, 0, 2, 0, 1})
			_, err = io.ReadFull(browser, make([]byte, 4))
			require.NoError(t, err)
			_ = browser.Close()
			require.NoError(t, <-done)
			require.Equal(t, c.want, sink.kinds())
			require.Equal(t, "s-1", sink.events[1].SessionID)
			require.NotNil(t, sink.events[1].At)
		})
	}
}
