//go:build linux

package shells

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/runtime"
)

// TestMain gives every shell of the package's tests (agent_test.go's
// too: one test binary) the agent's own account and login shell, in a
// home directory whose login profile the tests write. The machine user's
// own profile is not the tests' to run: one that waits on something (a
// stale lock, a prompt) would stall each shell for as long.
func TestMain(m *testing.M) {
	os.Exit(runWithTestHome(m))
}

func runWithTestHome(m *testing.M) int {
	home, err := os.MkdirTemp("", "cairn-shell-home-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(home)
	// Read by sh, dash and bash (which has no .bash_profile here) as login shells.
	profile := "CAIRN_TEST_PROFILE=read\nexport CAIRN_TEST_PROFILE\n"
	if err := os.WriteFile(filepath.Join(home, ".profile"), []byte(profile), 0o600); err != nil {
		panic(err)
	}
	acct := currentAccount()
	acct.home = home
	terminalAccount = func() account { return acct }
	return m.Run()
}

// testEngine accepts shell sockets that carry its token and hands them
// to the test.
type testEngine struct {
	srv   *httptest.Server
	token string
	dials atomic.Int32
	conns chan *websocket.Conn
}

func newTestEngine(t *testing.T) *testEngine {
	e := &testEngine{token: "tok-" + t.Name(), conns: make(chan *websocket.Conn, 16)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+proto.PathShellSocket+"/{session}", func(w http.ResponseWriter, r *http.Request) {
		e.dials.Add(1)
		if r.Header.Get(proto.HeaderShellToken) != e.token {
			http.Error(w, `{"error":"forbidden"}`, http.StatusForbidden)
			return
		}
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		e.conns <- ws
	})
	e.srv = httptest.NewServer(mux)
	t.Cleanup(e.srv.Close)
	return e
}

func (e *testEngine) request(id string) proto.ShellOpen {
	return proto.ShellOpen{
		SessionID: id, URL: "ws" + strings.TrimPrefix(e.srv.URL, "http") + proto.PathShellSocket + "/" + id,
		Token: e.token, Cols: 80, Rows: 24,
	}
}

// dialCaller dials without device auth: the device side of the dial is
// runtime's (TestDialWebSocketWithHeader) and the end-to-end test's.
type dialCaller struct{}

func (dialCaller) Call(context.Context, string, string, any, any) error {
	return errors.New("no REST calls in shell tests")
}

func (dialCaller) DialWebSocket(ctx context.Context, url string, header http.Header) (*websocket.Conn, error) {
	c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: header})
	return c, err
}

type env struct {
	shells *Shells
	engine *testEngine
	// stop ends the agent's run context.
	stop context.CancelFunc
}

// setup registers the shells under a run context of their own; the
// test's end closes them and waits for every shell to be gone.
func setup(t *testing.T, opts Options) *env {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := Register(ctx, runtime.NewHandlers(), opts)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return &env{shells: s, engine: newTestEngine(t), stop: cancel}
}

func payload(t *testing.T, v any) json.RawMessage {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// open opens a session and returns the reply and the Engine's end.
func (e *env) open(t *testing.T, id string) (proto.ShellOpened, *client) {
	t.Helper()
	res, err := e.shells.open(t.Context(), dialCaller{}, payload(t, e.engine.request(id)))
	require.NoError(t, err)
	opened := res.(proto.ShellOpened)
	require.True(t, opened.Opened)
	ws := <-e.engine.conns
	t.Cleanup(func() { ws.CloseNow() })
	return opened, &client{t: t, ws: ws}
}

// client is the Engine's end of a shell socket.
type client struct {
	t   *testing.T
	ws  *websocket.Conn
	out strings.Builder
}

func (c *client) send(s string) {
	require.NoError(c.t, c.ws.Write(c.t.Context(), websocket.MessageBinary, []byte(s)))
}

func (c *client) control(ctl proto.ShellControl) {
	require.NoError(c.t, c.ws.Write(c.t.Context(), websocket.MessageText, payload(c.t, ctl)))
}

// next reads one frame: output is collected, a control frame returned.
func (c *client) next() (*proto.ShellControl, error) {
	typ, b, err := c.ws.Read(c.t.Context())
	if err != nil {
		return nil, err
	}
	if typ == websocket.MessageBinary {
		c.out.Write(b)
		return nil, nil
	}
	var ctl proto.ShellControl
	require.NoError(c.t, json.Unmarshal(b, &ctl))
	return &ctl, nil
}

// drain reads and drops everything in the background, as an Engine
// does, so the agent's close handshake completes.
func (c *client) drain() {
	go func() {
		for {
			if _, _, err := c.ws.Read(context.Background()); err != nil {
				return
			}
		}
	}()
}

// waitOutput reads until the output so far contains want.
func (c *client) waitOutput(want string) {
	c.t.Helper()
	for !strings.Contains(c.out.String(), want) {
		ctl, err := c.next()
		require.NoError(c.t, err, "output so far: %q", c.out.String())
		require.Nil(c.t, ctl, "unexpected control frame; output so far: %q", c.out.String())
	}
}

// waitExit reads until the exit frame and then the close, and returns
// the exit code and the close status.
func (c *client) waitExit() (int, websocket.StatusCode) {
	c.t.Helper()
	exit, status := c.waitExitFrame()
	return exit.Code, status
}

// waitExitFrame is waitExit returning the whole exit frame.
func (c *client) waitExitFrame() (proto.ShellControl, websocket.StatusCode) {
	c.t.Helper()
	var exit *proto.ShellControl
	for {
		ctl, err := c.next()
		if err != nil {
			require.NotNil(c.t, exit, "the socket closed before an exit frame: %v", err)
			return *exit, websocket.CloseStatus(err)
		}
		if ctl != nil {
			require.Equal(c.t, proto.ShellExit, ctl.Type)
			require.Nil(c.t, exit, "a second exit frame")
			exit = ctl
		}
	}
}

// waitGone returns once pid has exited, without polling: a pidfd becomes
// readable when its process ends.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return
	}
	require.NoError(t, err)
	defer unix.Close(fd)
	for {
		_, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, -1)
		if !errors.Is(err, unix.EINTR) {
			require.NoError(t, err)
			return
		}
	}
}

// reaped says pid is gone and not even a zombie of ours.
func reaped(pid int) bool {
	return errors.Is(unix.Kill(pid, 0), unix.ESRCH)
}
