package vnc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/vnc/rfbserver"
)

// desktop is what the in-agent server shows and drives.
type desktop interface {
	rfbserver.Screen
	rfbserver.Input
	// Monitors is the display topology in framebuffer coordinates.
	Monitors() ([]proto.Monitor, error)
}

// rfbServer is the agent's own RFB server (agent/vnc/rfbserver), used
// where no packaged VNC server is managed (Windows: server_windows.go
// gives it GDI capture and SendInput). It listens only through the
// in-process tunnel (serverConfig.Listen, the netstack device), so
// nothing on a host interface ever accepts a VNC connection, and admits
// only the Engine's tunnel address.
type rfbServer struct {
	label string
	// open checks the session and returns the desktop to serve.
	open func() (desktop, error)

	mu   sync.Mutex
	l    net.Listener
	srv  *rfbserver.Server
	desk desktop
	done chan struct{}
}

func (r *rfbServer) name() string { return r.label }

func (r *rfbServer) inProcess() bool { return true }

func (r *rfbServer) start(_ context.Context, c serverConfig) error {
	if c.Listen == nil {
		return errors.New("the tunnel is not in-process: the agent's VNC server listens on the in-process (netstack) tunnel only")
	}
	allow := net.ParseIP(c.Allow)
	if allow == nil {
		return fmt.Errorf("the Engine's address %q is not an address", c.Allow)
	}
	desk, err := r.open()
	if err != nil {
		return err
	}
	l, err := c.Listen(c.Port)
	if err != nil {
		return fmt.Errorf("listen on the tunnel's port %d: %w", c.Port, err)
	}
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
	r.l, r.srv, r.desk, r.done = l, srv, desk, done
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
	r.l, r.srv, r.desk, r.done = nil, nil, nil, nil
	r.mu.Unlock()
	if l == nil {
		return
	}
	_ = l.Close()
	srv.Close()
	<-done
}

func (r *rfbServer) topology(context.Context, string) ([]proto.Monitor, error) {
	r.mu.Lock()
	desk := r.desk
	r.mu.Unlock()
	if desk == nil {
		return nil, errors.New("the VNC server is not running")
	}
	return desk.Monitors()
}
