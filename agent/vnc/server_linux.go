package vnc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/roles"
)

// x11vnc is Debian's x11vnc, one process per display the role serves
// (docs/architecture.md "Remote desktop": why x11vnc).
type x11vnc struct {
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

func newServer() server { return &x11vnc{} }

func (x *x11vnc) name() string { return "x11vnc" }

func (x *x11vnc) start(ctx context.Context, c serverConfig) error {
	bin, err := exec.LookPath("x11vnc")
	if err != nil {
		return roles.Unsupported("x11vnc is not installed (Debian package x11vnc): the VNC role needs it on Linux")
	}
	if err := os.MkdirAll(c.RuntimeDir, 0o700); err != nil {
		return err
	}
	dir, err := os.MkdirTemp(c.RuntimeDir, "vnc-")
	if err != nil {
		return err
	}
	// The password reaches x11vnc through a 0600 file in a 0700
	// directory that x11vnc removes once it has read it ("rm:"): never
	// on a command line, where any local user could read it.
	pwFile := filepath.Join(dir, "passwd")
	if err := os.WriteFile(pwFile, []byte(c.Password+"\n"), 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return err
	}
	// -rfbportv6 -1: libvncserver would also listen on [::] whatever
	// -noipv6 says (the end-to-end test saw it).
	args := []string{"-display", c.Display, "-rfbport", strconv.Itoa(c.Port), "-rfbportv6", "-1", "-listen", c.Addr, "-noipv6",
		"-allow", c.Allow, "-passwdfile", "rm:" + pwFile, "-forever", "-shared", "-norc", "-nolookup",
		"-noxdamage", "-xrandr", "-quiet"}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "DISPLAY="+c.Display)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return fmt.Errorf("start x11vnc: %w", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = os.RemoveAll(dir)
		close(done)
	}()
	x.mu.Lock()
	x.cmd, x.done = cmd, done
	x.mu.Unlock()
	return nil
}

func (x *x11vnc) running() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.cmd == nil {
		return false
	}
	select {
	case <-x.done:
		return false
	default:
		return true
	}
}

func (x *x11vnc) stop() {
	x.mu.Lock()
	cmd, done := x.cmd, x.done
	x.cmd, x.done = nil, nil
	x.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

func (x *x11vnc) topology(ctx context.Context, display string) ([]proto.Monitor, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "xrandr", "--listmonitors")
	cmd.Env = append(os.Environ(), "DISPLAY="+display)
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("xrandr --listmonitors: %w", err)
	}
	return ParseMonitors(string(out))
}
