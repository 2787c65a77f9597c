package vnc

import (
	"context"
	"encoding/json"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/roles"
)

// fakeServer listens where the role asks and remembers the password it
// was given.
type fakeServer struct {
	mu       sync.Mutex
	l        net.Listener
	password string
	allow    string
	starts   int
	// mons is the display's topology (nil: two monitors).
	mons []proto.Monitor
}

func (f *fakeServer) name() string { return "fake" }

func (f *fakeServer) start(_ context.Context, c serverConfig) error {
	l, err := net.Listen("tcp", net.JoinHostPort(c.Addr, strconv.Itoa(c.Port)))
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.l, f.password, f.allow = l, c.Password, c.Allow
	f.starts++
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			_ = conn.Close()
		}
	}()
	return nil
}

func (f *fakeServer) running() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.l != nil
}

func (f *fakeServer) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.l != nil {
		_ = f.l.Close()
		f.l = nil
	}
}

func (f *fakeServer) topology(context.Context, string) ([]proto.Monitor, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mons != nil {
		return f.mons, nil
	}
	return []proto.Monitor{{Name: "A", Width: 1920, Height: 1080, Primary: true}, {Name: "B", X: 1920, Y: 0, Width: 1280, Height: 1024}}, nil
}

// caller plays the Engine's /api/agent/vnc/ensure.
type caller struct {
	mu    sync.Mutex
	calls []proto.VNCEnsureRequest
}

func (c *caller) Call(_ context.Context, _, path string, in, out any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if path == proto.PathVNCEnsure {
		c.calls = append(c.calls, in.(proto.VNCEnsureRequest))
		*(out.(*proto.VNCEnsureResponse)) = proto.VNCEnsureResponse{EngineIP: "10.213.0.1", Port: proto.VNCPort}
	}
	return nil
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func setup(t *testing.T, vip string) (*VNC, *fakeServer, *roles.Role, *caller) {
	t.Helper()
	role := roles.New(nil).Register(roles.VNC)
	v, err := New(Options{Display: ":9", Role: role, VirtualIP: func() string { return vip }, RuntimeDir: t.TempDir()})
	require.NoError(t, err)
	srv := &fakeServer{}
	v.srv, v.port = srv, freePort(t)
	return v, srv, role, &caller{}
}

// Behaviour 13: the server listens on the tunnel address only, admits
// the Engine's /32, gets the in-memory password; the role reports ready,
// service and listener state, topology and virtual bounds, and never a
// local probe; the password leaves only sealed to a request's key, and a
// rotation gives a new one.
func TestStartAndCredential(t *testing.T) {
	t.Parallel()
	v, srv, role, call := setup(t, "127.0.0.1")
	st, err := v.Start(context.Background(), call)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1", st.ListenAddress)
	require.Equal(t, "3200x1080+0+0", st.DisplayVirtualBounds)
	require.Equal(t, "10.213.0.1", srv.allow, "only the Engine's tunnel address is admitted")
	h, ok := role.Health()
	require.True(t, ok)
	require.Equal(t, proto.RoleHealthy, h.Observed)
	require.Equal(t, "true", h.Context[proto.VNCContextReady])
	require.Equal(t, "running", h.Context[proto.VNCContextServiceState])
	require.Equal(t, "listening", h.Context[proto.VNCContextListenerState])
	require.Equal(t, proto.AuthVerifyLocalProbeDisabled, h.Context[proto.VNCContextAuthVerifyReason])
	require.NotEmpty(t, h.Context[proto.VNCContextLastReadyAt])
	require.Contains(t, h.Context[proto.VNCContextDisplayTopology], `"width":1280`)
	last := call.calls[len(call.calls)-1]
	require.True(t, last.Ready)
	require.NotNil(t, last.Role)
	b, _ := json.Marshal(call.calls)
	require.NotContains(t, string(b), srv.password, "the ensure never carries the password")

	// A second start reuses the running server.
	_, err = v.Start(context.Background(), call)
	require.NoError(t, err)
	require.Equal(t, 1, srv.starts)

	pub, priv, err := proto.VNCKeyPair()
	require.NoError(t, err)
	req, _ := json.Marshal(proto.VNCCredentialRequest{SessionID: "s", PublicKey: pub})
	out, err := v.handleCredential(context.Background(), call, req)
	require.NoError(t, err)
	sealed := out.(proto.VNCCredential).Sealed
	require.NotContains(t, sealed, srv.password)
	pw, err := proto.OpenVNCCredential(pub, priv, sealed)
	require.NoError(t, err)
	require.Equal(t, srv.password, pw)
	require.Len(t, pw, passwordLen)

	// Rotation: a new password, and the server restarted with it.
	req, _ = json.Marshal(proto.VNCCredentialRequest{SessionID: "s", PublicKey: pub, Rotate: true})
	out, err = v.handleCredential(context.Background(), call, req)
	require.NoError(t, err)
	pw2, err := proto.OpenVNCCredential(pub, priv, out.(proto.VNCCredential).Sealed)
	require.NoError(t, err)
	require.NotEqual(t, pw, pw2)
	require.Equal(t, pw2, srv.password)
	require.Equal(t, 2, srv.starts)

	// vnc_stop: stopped, not ready.
	_, err = v.handleStop(context.Background(), call, nil)
	require.NoError(t, err)
	h, _ = role.Health()
	require.Equal(t, "stopped", h.Context[proto.VNCContextServiceState])
	require.Equal(t, "false", h.Context[proto.VNCContextReady])
}

// The password rotates once its time is up, at the next start.
func TestRotationByAge(t *testing.T) {
	t.Parallel()
	v, srv, _, call := setup(t, "127.0.0.1")
	now := time.Now()
	v.opts.Now = func() time.Time { return now }
	_, err := v.Start(context.Background(), call)
	require.NoError(t, err)
	first := srv.password
	now = now.Add(DefaultRotation)
	_, err = v.Start(context.Background(), call)
	require.NoError(t, err)
	require.NotEqual(t, first, srv.password)
	require.Equal(t, 2, srv.starts)
}

// Without a tunnel address, or without a display, nothing starts and the
// role says why.
func TestNotReady(t *testing.T) {
	t.Parallel()
	v, srv, role, call := setup(t, "")
	_, err := v.Start(context.Background(), call)
	require.ErrorContains(t, err, "the tunnel is not up")
	var pe *proto.Error
	require.ErrorAs(t, err, &pe)
	require.Equal(t, proto.CodeVNCNotReady, pe.Code)
	require.Zero(t, srv.starts)
	h, _ := role.Health()
	require.Equal(t, "false", h.Context[proto.VNCContextReady])
	require.Equal(t, proto.AuthVerifyLocalProbeDisabled, h.Context[proto.VNCContextAuthVerifyReason])
	require.False(t, call.calls[len(call.calls)-1].Ready)

	v, _, role, call = setup(t, "127.0.0.1")
	v.opts.Display = ""
	_, err = v.Start(context.Background(), call)
	require.ErrorIs(t, err, roles.ErrUnsupported)
	h, _ = role.Health()
	require.Contains(t, h.LastError, "No Desktop Environment Active")
}

func TestParseMonitors(t *testing.T) {
	t.Parallel()
	mons, err := ParseMonitors("Monitors: 2\n 0: +*DP-1 1920/530x1080/300+0+0  DP-1\n 1: +HDMI-1 1280/340x1024/270+1920+0  HDMI-1\n")
	require.NoError(t, err)
	require.Equal(t, []proto.Monitor{{Name: "DP-1", Width: 1920, Height: 1080, Primary: true},
		{Name: "HDMI-1", X: 1920, Width: 1280, Height: 1024}}, mons)
	require.Equal(t, "3200x1080+0+0", VirtualBounds(mons))
	_, err = ParseMonitors("Monitors: 0\n")
	require.Error(t, err)
}

// vnc_refresh reads the topology again (a monitor added since
// vnc_start) and reports it in the answer, the role row and the ensure,
// keeping the running server; with none running it starts one.
func TestRefresh(t *testing.T) {
	t.Parallel()
	v, srv, role, call := setup(t, "127.0.0.1")
	out, err := v.handleRefresh(context.Background(), call, json.RawMessage(`{"session_id":"s"}`))
	require.NoError(t, err, "nothing running: refresh starts the server")
	require.Equal(t, "3200x1080+0+0", out.(*proto.VNCStarted).DisplayVirtualBounds)
	require.Equal(t, 1, srv.starts)

	srv.mu.Lock()
	srv.mons = []proto.Monitor{{Name: "A", Width: 1920, Height: 1080, Primary: true}, {Name: "B", X: 1920, Width: 1280, Height: 1024},
		{Name: "C", X: 3200, Width: 1024, Height: 768}}
	srv.mu.Unlock()
	out, err = v.handleRefresh(context.Background(), call, nil)
	require.NoError(t, err)
	st := out.(*proto.VNCStarted)
	require.Len(t, st.DisplayTopology, 3)
	require.Equal(t, "4224x1080+0+0", st.DisplayVirtualBounds)
	require.Equal(t, 1, srv.starts, "the running server is kept")
	h, _ := role.Health()
	require.Equal(t, "4224x1080+0+0", h.Context[proto.VNCContextDisplayVirtualBounds])
	require.Contains(t, h.Context[proto.VNCContextDisplayTopology], `"name":"C"`)
	require.True(t, call.calls[len(call.calls)-1].Ready)

	_, err = v.handleRefresh(context.Background(), call, json.RawMessage(`[1]`))
	require.Error(t, err)
}
