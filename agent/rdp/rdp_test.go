package rdp

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/roles"
)

type fakeService struct {
	name   string
	mu     sync.Mutex
	starts []bool
	listen func() // what a start does
}

func (f *fakeService) Name() string                 { return f.name }
func (f *fakeService) State(context.Context) string { return "running" }
func (f *fakeService) Firewall() string             { return "not_managed" }
func (f *fakeService) Start(_ context.Context, force bool) error {
	f.mu.Lock()
	f.starts = append(f.starts, force)
	f.mu.Unlock()
	if f.listen != nil {
		f.listen()
	}
	return nil
}

type fakeCaller struct {
	mu    sync.Mutex
	posts []proto.RDPEnsureRequest
}

func (c *fakeCaller) Call(_ context.Context, method, path string, in, out any) error {
	if method != "POST" || path != proto.PathRDPEnsure {
		return errors.New("unexpected call " + path)
	}
	c.mu.Lock()
	c.posts = append(c.posts, in.(proto.RDPEnsureRequest))
	c.mu.Unlock()
	*(out.(*proto.RDPEnsureResponse)) = proto.RDPEnsureResponse{EngineIP: "10.0.0.1", AgentIP: "127.0.0.1", Port: 3389}
	return nil
}

func setup(t *testing.T, svc Service) (*RDP, *roles.Role, *fakeCaller, int) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	role := roles.New(time.Now).Register(roles.RDP)
	r := New(Options{Role: role, VirtualIP: func() string { return "127.0.0.1" }, Port: port, Service: svc})
	return r, role, &fakeCaller{}, port
}

func listenOn(t *testing.T, port int) func() {
	return func() {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		require.NoError(t, err)
		t.Cleanup(func() { _ = l.Close() })
	}
}

// rdp_start with a server listening answers where; with none installed
// and none listening the role is unsupported; with xrdp installed but
// stopped it starts it; a recovery restarts it even while listening.
// Each reports system:rdp and posts /api/agent/rdp/ensure.
func TestRDPStart(t *testing.T) {
	t.Parallel()
	t.Run("listening", func(t *testing.T) {
		t.Parallel()
		svc := &fakeService{}
		r, role, call, port := setup(t, svc)
		listenOn(t, port)()
		st, err := r.handle(context.Background(), call, json.RawMessage(`{"session_id":"s"}`), false)
		require.NoError(t, err)
		require.Equal(t, &proto.RDPStarted{ListenAddress: "127.0.0.1", Port: port, Server: "unmanaged"}, st)
		h, ok := role.Health()
		require.True(t, ok)
		require.Equal(t, proto.RoleHealthy, h.Observed)
		require.Equal(t, "true", h.Context[proto.RDPContextReady])
		require.Equal(t, "listening", h.Context[proto.RDPContextListenerState])
		require.Equal(t, "not_managed", h.Context[proto.RDPContextFirewall])
		require.NotEmpty(t, h.Context[proto.RDPContextLastReadyAt])
		require.Len(t, call.posts, 1)
		require.True(t, call.posts[0].Ready)
		require.Empty(t, svc.starts, "nothing to start")
	})
	t.Run("no server", func(t *testing.T) {
		t.Parallel()
		r, role, call, _ := setup(t, &fakeService{})
		_, err := r.handle(context.Background(), call, nil, false)
		require.ErrorIs(t, err, roles.ErrUnsupported)
		h, _ := role.Health()
		require.Equal(t, "false", h.Context[proto.RDPContextReady])
		require.False(t, call.posts[0].Ready)
		require.Contains(t, call.posts[0].Error, "install xrdp")
	})
	t.Run("xrdp started", func(t *testing.T) {
		t.Parallel()
		svc := &fakeService{name: "xrdp"}
		r, _, call, port := setup(t, svc)
		svc.listen = listenOn(t, port)
		st, err := r.handle(context.Background(), call, nil, false)
		require.NoError(t, err)
		require.Equal(t, "xrdp", st.(*proto.RDPStarted).Server)
		require.Equal(t, []bool{false}, svc.starts)
		// A recovery restarts it although it listens (it bypasses the
		// cached readiness).
		svc.listen = nil
		st, err = r.handle(context.Background(), call, nil, true)
		require.NoError(t, err)
		require.True(t, st.(*proto.RDPStarted).Recovered)
		require.Equal(t, []bool{false, true}, svc.starts)
	})
	t.Run("xrdp not listening", func(t *testing.T) {
		t.Parallel()
		r, _, call, _ := setup(t, &fakeService{name: "xrdp"})
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		_, err := r.handle(ctx, call, nil, false)
		var pe *proto.Error
		require.ErrorAs(t, err, &pe)
		require.Equal(t, proto.CodeRDPNotReady, pe.Code)
	})
	t.Run("tunnel down", func(t *testing.T) {
		t.Parallel()
		r := New(Options{Service: &fakeService{}})
		_, err := r.handle(context.Background(), nil, nil, false)
		var pe *proto.Error
		require.ErrorAs(t, err, &pe)
		require.Equal(t, proto.CodeRDPNotReady, pe.Code)
		require.Contains(t, pe.Message, "tunnel")
	})
}

// Behaviour 14's "at start-up": the loop reports once connected, at the
// session's start, not only at the next 30 s tick.
func TestRDPReportsWhenConnected(t *testing.T) {
	t.Parallel()
	r, role, call, port := setup(t, &fakeService{})
	listenOn(t, port)()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go r.Run(ctx)
	// The start-up check ran before any connection.
	require.Eventually(t, func() bool { _, ok := role.Health(); return ok }, 10*time.Second, 10*time.Millisecond)
	r.Session(call)
	require.Eventually(t, func() bool {
		call.mu.Lock()
		defer call.mu.Unlock()
		return len(call.posts) > 0 && call.posts[0].Ready
	}, 10*time.Second, 20*time.Millisecond)
}
