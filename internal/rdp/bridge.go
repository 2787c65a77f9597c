package rdp

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cairn-rmm/cairn"
)

// Qualities (rule 4).
const (
	QualitySpeed   = "speed"
	QualityQuality = "quality"
)

// XfreerdpArgs is xfreerdp's command line for a session through the
// loopback relay at addr: NLA, the endpoint's own certificate accepted
// (the connection runs inside the WireGuard tunnel, whose keys
// authenticate the device), drive, printer and audio redirection off, full
// screen on the bridge's display, colour and effects per quality (rule 4).
// The password is never here: xfreerdp reads it from its standard input
// (/from-stdin).
func XfreerdpArgs(addr string, c Credentials, p Params) []string {
	args := []string{"/v:" + addr, "/u:" + c.Username}
	if c.Domain != "" {
		args = append(args, "/d:"+c.Domain)
	}
	args = append(args, "/from-stdin", "/sec:nla", "/cert:ignore", "/f", "-decorations",
		"/audio-mode:2", "-drives", "-home-drive", "/log-level:WARN")
	if p.DPI > 0 {
		// The desktop's scale factor follows the requested DPI (100 % at 96).
		args = append(args, "/scale-desktop:"+strconv.Itoa(max(100, min(500, p.DPI*100/96))))
	}
	if p.Quality == QualityQuality {
		// 24-bit colour, lossless (no RemoteFX or H.264), effects on.
		return append(args, "/bpp:24", "/network:lan", "+fonts", "+aero", "+window-drag", "+menu-anims", "+themes", "+wallpaper")
	}
	// 16-bit colour, visual effects off.
	return append(args, "/bpp:16", "/network:broadband-low", "-fonts", "-aero", "-window-drag", "-menu-anims", "-themes", "-wallpaper")
}

type bridgeConfig struct {
	dir    string
	dial   Dialer
	creds  Credentials
	params Params
}

// Bridge is one session's Xvfb, xfreerdp and x11vnc.
type Bridge struct {
	dir      string
	display  string
	relay    net.Listener
	procs    []*proc
	vncAddr  string
	password string
	done     chan struct{}
	once     sync.Once
	// RelayAccepted is closed once xfreerdp's connection was accepted.
	relayAccepted chan struct{}
}

type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	out  *tail
}

// tail keeps a command's last output (never a secret: the password is
// only ever written to xfreerdp's standard input, which is not echoed).
type tail struct {
	mu sync.Mutex
	b  []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 16<<10 {
		t.b = t.b[len(t.b)-16<<10:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// Display is the bridge's X display (":N").
func (b *Bridge) Display() string { return b.display }

// Password is x11vnc's one-time password (the gateway authenticates with
// it; it never reaches the browser).
func (b *Bridge) Password() string { return b.password }

// Dial reaches the bridge's x11vnc (loopback).
func (b *Bridge) Dial(ctx context.Context) (net.Conn, error) {
	if b.Ended() {
		return nil, cairn.Errorf(ECodeConnectFailed, "the RDP session has ended")
	}
	return (&net.Dialer{}).DialContext(ctx, "tcp", b.vncAddr)
}

// PIDs are the bridge's processes' IDs (tests read their command lines).
func (b *Bridge) PIDs() map[string]int {
	out := map[string]int{}
	for _, p := range b.procs {
		out[p.name] = p.cmd.Process.Pid
	}
	return out
}

// Ended reports whether the bridge stopped (closed, or xfreerdp left).
func (b *Bridge) Ended() bool {
	select {
	case <-b.done:
		return true
	default:
		return false
	}
}

// Done is closed once the bridge ended.
func (b *Bridge) Done() <-chan struct{} { return b.done }

// Close stops every process and removes the bridge's directory.
func (b *Bridge) Close() {
	b.once.Do(func() {
		close(b.done)
		if b.relay != nil {
			_ = b.relay.Close()
		}
		for i := len(b.procs) - 1; i >= 0; i-- {
			b.procs[i].stop()
		}
		_ = os.RemoveAll(b.dir)
	})
}

func (p *proc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// start runs name in its own process group, killed with the Engine.
func (b *Bridge) start(name string, cmd *exec.Cmd) (*proc, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{}), out: &tail{}}
	if cmd.Stdout == nil {
		cmd.Stdout = p.out
	}
	if cmd.Stderr == nil {
		cmd.Stderr = p.out
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	b.procs = append(b.procs, p)
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// startBridge brings the bridge up: Xvfb, the relay, xfreerdp connected
// and logged in (its window on the display), x11vnc listening.
func startBridge(ctx context.Context, cfg bridgeConfig) (_ *Bridge, err error) {
	p := cfg.params
	if p.Width == 0 || p.Height == 0 {
		p.Width, p.Height = DefaultWidth, DefaultHeight
	}
	dir, err := os.MkdirTemp(cfg.dir, "cairn-rdp-")
	if err != nil {
		return nil, err
	}
	b := &Bridge{dir: dir, done: make(chan struct{}), relayAccepted: make(chan struct{})}
	defer func() {
		if err != nil {
			b.Close()
		}
	}()
	// The display admits only clients with its cookie (the bridge's own).
	xauth := filepath.Join(dir, "Xauthority")
	if err := writeXauthority(xauth); err != nil {
		return nil, err
	}
	if err := b.startXvfb(ctx, xauth, p); err != nil {
		return nil, err
	}
	env := append(os.Environ(), "DISPLAY="+b.display, "XAUTHORITY="+xauth, "HOME="+dir)

	// The loopback relay: xfreerdp cannot dial into the user-space
	// tunnel, so it connects here and the Engine carries its one
	// connection through the tunnel.
	b.relay, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go b.serveRelay(cfg.dial)

	x := exec.Command("xfreerdp", XfreerdpArgs(b.relay.Addr().String(), cfg.creds, p)...)
	x.Env, x.Dir = env, dir
	stdin, err := x.StdinPipe()
	if err != nil {
		return nil, err
	}
	xf, err := b.start("xfreerdp", x)
	if err != nil {
		return nil, err
	}
	// The password on standard input only (asked for once the server
	// wants it), then the pipe is closed.
	_, werr := io.WriteString(stdin, cfg.creds.Password+"\n")
	_ = stdin.Close()
	if werr != nil && !xf.exited() {
		return nil, fmt.Errorf("hand the password to xfreerdp: %w", werr)
	}
	if err := b.awaitSession(ctx, xf, env); err != nil {
		return nil, err
	}

	// x11vnc exports the display on loopback with a one-time password,
	// handed over in a file it removes once read.
	if err := b.startX11vnc(ctx, env); err != nil {
		return nil, err
	}
	// The session ends when xfreerdp leaves (the remote side logged off
	// or dropped).
	go func() {
		select {
		case <-xf.done:
			b.Close()
		case <-b.done:
		}
	}()
	return b, nil
}

func (b *Bridge) startXvfb(ctx context.Context, xauth string, p Params) error {
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	defer pr.Close()
	args := []string{"-displayfd", "3", "-nolisten", "tcp", "-auth", xauth, "-noreset",
		"-screen", "0", fmt.Sprintf("%dx%dx24", p.Width, p.Height)}
	if p.DPI > 0 {
		args = append(args, "-dpi", strconv.Itoa(p.DPI))
	}
	cmd := exec.Command("Xvfb", args...)
	cmd.ExtraFiles = []*os.File{pw}
	xv, err := b.start("Xvfb", cmd)
	_ = pw.Close()
	if err != nil {
		return err
	}
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(pr).ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		n := strings.TrimSpace(s)
		if _, err := strconv.Atoi(n); err != nil {
			return fmt.Errorf("Xvfb reported no display: %s", xv.out)
		}
		b.display = ":" + n
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// serveRelay accepts xfreerdp's one connection and carries it to the
// agent's RDP port through the tunnel; the listener closes after it.
func (b *Bridge) serveRelay(dial Dialer) {
	c, err := b.relay.Accept()
	_ = b.relay.Close()
	if err != nil {
		return
	}
	close(b.relayAccepted)
	defer c.Close()
	dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	agent, err := dial(dctx)
	cancel()
	if err != nil {
		return
	}
	defer agent.Close()
	ended := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(agent, c); ended <- struct{}{} }()
	go func() { _, _ = io.Copy(c, agent); ended <- struct{}{} }()
	select {
	case <-ended:
	case <-b.done:
	}
}

// errconnect names FreeRDP's failure in its output.
var errconnect = regexp.MustCompile(`ERRCONNECT_[A-Z_]+`)

// xfreerdp's exit codes that mean the credentials were refused (its
// XF_EXIT_AUTH_FAILURE, LOGON_FAILURE, ACCOUNT_LOCKED_OUT,
// CONNECT_PASSWORD_EXPIRED, CONNECT_PASSWORD_MUST_CHANGE...).
var authExits = map[int]bool{132: true, 134: true, 135: true, 148: true, 149: true, 150: true, 151: true}

// awaitSession waits until xfreerdp's window is on the display (it maps
// it only once the session is open: NLA passed, the server's first
// updates) or it exits.
func (b *Bridge) awaitSession(ctx context.Context, xf *proc, env []string) error {
	for {
		select {
		case <-xf.done:
			code := xf.cmd.ProcessState.ExitCode()
			what := "exit " + strconv.Itoa(code)
			if m := errconnect.FindString(xf.out.String()); m != "" {
				what += ", " + m
			}
			if authExits[code] || strings.Contains(what, "LOGON_FAILURE") || strings.Contains(what, "AUTHENTICATION_FAILED") {
				return cairn.Errorf(ECodeAuthFailed, "the RDP server refused the credentials (%s)", what)
			}
			return cairn.Errorf(ECodeConnectFailed, "xfreerdp could not open the RDP session (%s)", what)
		case <-ctx.Done():
			return cairn.Errorf(ECodeConnectFailed, "the RDP session did not open in time")
		case <-time.After(250 * time.Millisecond):
		}
		cmd := exec.CommandContext(ctx, "xwininfo", "-root", "-children")
		cmd.Env = env
		out, err := cmd.Output()
		if err == nil && bytes.Contains(out, []byte(`("xfreerdp"`)) {
			return nil
		}
	}
}

const passwordAlphabet = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789"

func (b *Bridge) startX11vnc(ctx context.Context, env []string) error {
	pw := make([]byte, 8)
	if _, err := rand.Read(pw); err != nil {
		return err
	}
	for i := range pw {
		pw[i] = passwordAlphabet[int(pw[i])%len(passwordAlphabet)]
	}
	b.password = string(pw)
	pwFile := filepath.Join(b.dir, "vncpasswd")
	if err := os.WriteFile(pwFile, append(pw, '\n'), 0o600); err != nil {
		return err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	b.vncAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	cmd := exec.Command("x11vnc", "-display", b.display, "-rfbport", strconv.Itoa(port), "-rfbportv6", "-1", "-localhost",
		"-noipv6", "-passwdfile", "rm:"+pwFile, "-forever", "-shared", "-norc", "-nolookup", "-noxdamage", "-quiet")
	cmd.Env, cmd.Dir = env, b.dir
	xv, err := b.start("x11vnc", cmd)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", b.vncAddr)
		if err == nil {
			_ = c.Close()
			return nil
		}
		if xv.exited() {
			return cairn.Errorf(ECodeConnectFailed, "x11vnc exited before listening on the bridge's display")
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return cairn.Errorf(ECodeConnectFailed, "x11vnc is not listening on %s: %v", b.vncAddr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// writeXauthority writes one MIT-MAGIC-COOKIE-1 for any display of this
// host (family Wild, no number): Xvfb takes it as its only key, the
// bridge's clients find it through XAUTHORITY.
func writeXauthority(path string) error {
	cookie := make([]byte, 16)
	if _, err := rand.Read(cookie); err != nil {
		return err
	}
	var buf bytes.Buffer
	field := func(b []byte) {
		_ = binary.Write(&buf, binary.BigEndian, uint16(len(b)))
		buf.Write(b)
	}
	_ = binary.Write(&buf, binary.BigEndian, uint16(0xFFFF))
	field(nil)
	field(nil)
	field([]byte("MIT-MAGIC-COOKIE-1"))
	field(cookie)
	return os.WriteFile(path, buf.Bytes(), 0o600)
}

// ErrNoBridge: the session's bridge is not running in this process.
var ErrNoBridge = errors.New("no RDP bridge for this session in this Engine process")
