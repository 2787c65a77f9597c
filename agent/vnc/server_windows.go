package vnc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"golang.org/x/sys/windows"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/roles"
	"github.com/cairn-rmm/cairn/agent/vnc/rfbserver"
)

// rfbServer is the agent's own RFB server (agent/vnc/rfbserver) over GDI
// capture and SendInput: Windows ships no VNC server to manage. It
// listens only through the in-process tunnel (the netstack device), so
// nothing on a host interface ever accepts a VNC connection.
type rfbServer struct {
	mu   sync.Mutex
	l    net.Listener
	srv  *rfbserver.Server
	done chan struct{}
}

func newServer() server { return &rfbServer{} }

func (r *rfbServer) name() string { return (&rfbserver.Desktop{}).Name() }

func (r *rfbServer) inProcess() bool { return true }

// sessionID is the agent process's Windows session.
func sessionID() (uint32, error) {
	var id uint32
	err := windows.ProcessIdToSessionId(windows.GetCurrentProcessId(), &id)
	return id, err
}

func (r *rfbServer) start(_ context.Context, c serverConfig) error {
	if c.Listen == nil {
		return errors.New("the tunnel is not in-process: on Windows the VNC server listens on the netstack tunnel only")
	}
	// A service runs in session 0, which has no user desktop to show
	// (session 0 isolation): refuse rather than serve a blank screen.
	if id, err := sessionID(); err == nil && id == 0 {
		return roles.Unsupported("No Desktop Environment Active: the agent runs in session 0 (a service), which cannot capture or drive the user's desktop; the per-session helper is not built yet")
	}
	if _, err := rfbserver.NewDesktop().Capture(); err != nil {
		return roles.Unsupported("No Desktop Environment Active: %v", err)
	}
	allow := net.ParseIP(c.Allow)
	if allow == nil {
		return fmt.Errorf("the Engine's address %q is not an address", c.Allow)
	}
	l, err := c.Listen(c.Port)
	if err != nil {
		return fmt.Errorf("listen on the tunnel's port %d: %w", c.Port, err)
	}
	desk := rfbserver.NewDesktop()
	password := c.Password
	srv := rfbserver.New(rfbserver.Config{Screen: desk, Input: desk, Password: func() string { return password }, Name: "cairn",
		Allow: func(a net.Addr) bool {
			ta, ok := a.(*net.TCPAddr)
			return ok && ta.IP.Equal(allow)
		}})
	done := make(chan struct{})
	go func() {
		_ = srv.Serve(l)
		close(done)
	}()
	r.mu.Lock()
	r.l, r.srv, r.done = l, srv, done
	r.mu.Unlock()
	return nil
}

func (r *rfbServer) running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.l == nil {
		return false
	}
	select {
	case <-r.done:
		return false
	default:
		return true
	}
}

func (r *rfbServer) stop() {
	r.mu.Lock()
	l, srv, done := r.l, r.srv, r.done
	r.l, r.srv, r.done = nil, nil, nil
	r.mu.Unlock()
	if l == nil {
		return
	}
	_ = l.Close()
	srv.Close()
	<-done
}

func (r *rfbServer) topology(context.Context, string) ([]proto.Monitor, error) {
	mons, err := rfbserver.Monitors()
	if err != nil {
		return nil, err
	}
	out := make([]proto.Monitor, 0, len(mons))
	for _, m := range mons {
		out = append(out, proto.Monitor{Name: m.Name, X: m.Rect.Min.X, Y: m.Rect.Min.Y, Width: m.Rect.Dx(), Height: m.Rect.Dy(), Primary: m.Primary})
	}
	return out, nil
}
