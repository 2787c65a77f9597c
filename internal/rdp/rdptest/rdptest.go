// Package rdptest runs a real RDP server for tests: Debian's
// freerdp-shadow-cli (freerdp2-shadow-x11) shadowing an Xvfb display
// painted one colour, with NLA against a SAM file the test writes. The
// end-to-end test runs it in the agent's network namespace; internal/rdp's
// bridge test on loopback.
package rdptest

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/md4" //nolint:staticcheck // NTLM's NT hash is MD4 by definition
)

// NTHash is NTLM's NT hash of password (MD4 of its UTF-16LE form), as a
// SAM file holds it.
func NTHash(password string) string {
	u := utf16.Encode([]rune(password))
	b := make([]byte, 2*len(u))
	for i, r := range u {
		binary.LittleEndian.PutUint16(b[2*i:], r)
	}
	h := md4.New()
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

// Server is a running shadow server.
type Server struct {
	Display string
	Port    int
}

// Options: Prefix runs the programs under it (e.g. "ip netns exec NAME"),
// Colour paints the root window, User and Password are the one SAM entry.
type Options struct {
	Prefix         []string
	Colour         string
	User, Password string
	Port           int
	Width, Height  int
}

func command(prefix []string, name string, args ...string) *exec.Cmd {
	all := append(append([]string{}, prefix...), append([]string{name}, args...)...)
	cmd := exec.Command(all[0], all[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd
}

func kill(t *testing.T, cmd *exec.Cmd) {
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_, _ = cmd.Process.Wait()
	})
}

// Start runs Xvfb painted Colour and freerdp-shadow-cli on Port (all
// addresses) with NLA only; it returns once the port answers (probed
// from inside Prefix's namespace by the caller when there is one).
func Start(t *testing.T, o Options) Server {
	t.Helper()
	for _, tool := range []string{"Xvfb", "xsetroot", "freerdp-shadow-cli"} {
		_, err := exec.LookPath(tool)
		require.NoError(t, err, "%s is missing: run scripts/deps.sh test (make deps-test)", tool)
	}
	if o.Width == 0 {
		o.Width, o.Height = 320, 240
	}
	dir := t.TempDir()
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	x := command(o.Prefix, "Xvfb", "-displayfd", "3", "-noreset", "-nolisten", "tcp", "-screen", "0", fmt.Sprintf("%dx%dx24", o.Width, o.Height))
	x.ExtraFiles = []*os.File{pw}
	require.NoError(t, x.Start())
	_ = pw.Close()
	kill(t, x)
	line, err := bufio.NewReader(pr).ReadString('\n')
	_ = pr.Close()
	require.NoError(t, err, "Xvfb did not report its display")
	display := ":" + strings.TrimSpace(line)
	out, err := command(o.Prefix, "env", "DISPLAY="+display, "xsetroot", "-solid", o.Colour).CombinedOutput()
	require.NoError(t, err, "xsetroot: %s", out)

	sam := filepath.Join(dir, "SAM")
	require.NoError(t, os.WriteFile(sam, []byte(fmt.Sprintf("%s::%s:%s:::\n", o.User, strings.Repeat("0", 32), NTHash(o.Password))), 0o600))
	s := command(o.Prefix, "env", "DISPLAY="+display, "freerdp-shadow-cli", fmt.Sprintf("/port:%d", o.Port), "/sec:nla",
		"/sam-file:"+sam)
	s.Dir = dir
	log, err := os.Create(filepath.Join(dir, "shadow.log"))
	require.NoError(t, err)
	s.Stdout, s.Stderr = log, log
	require.NoError(t, s.Start())
	kill(t, s)
	return Server{Display: display, Port: o.Port}
}

// WaitListening waits until addr accepts (from this namespace).
func WaitListening(t *testing.T, addr string) {
	t.Helper()
	require.Eventually(t, func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
		}
		return err == nil
	}, 30*time.Second, 100*time.Millisecond, "the RDP server listens on %s", addr)
}

// FreePort is a TCP port nothing listens on now.
func FreePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// AwaitColour reads an RFB session from ServerInit on (the caller sent
// ClientInit) and asks for the whole screen, then incremental updates
// (Raw encoding: no SetEncodings is sent), until at least 95 % of its
// pixels are want within tol per channel. It returns the screen's size.
func AwaitColour(t *testing.T, c net.Conn, want [3]int, tol int) (int, int) {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(2 * time.Minute))
	defer func() { _ = c.SetDeadline(time.Time{}) }()
	init := make([]byte, 24)
	_, err := io.ReadFull(c, init)
	require.NoError(t, err)
	w, h := int(binary.BigEndian.Uint16(init[0:2])), int(binary.BigEndian.Uint16(init[2:4]))
	pf := init[4:20]
	bpp, bigEndian := int(pf[0]), pf[2] != 0
	require.Equal(t, 32, bpp, "the bridge's x11vnc serves 32 bits per pixel")
	rmax, gmax, bmax := int(binary.BigEndian.Uint16(pf[4:6])), int(binary.BigEndian.Uint16(pf[6:8])), int(binary.BigEndian.Uint16(pf[8:10]))
	rshift, gshift, bshift := pf[10], pf[11], pf[12]
	_, err = io.CopyN(io.Discard, c, int64(binary.BigEndian.Uint32(init[20:24])))
	require.NoError(t, err)
	screen := make([][3]int, w*h)
	near := func(p [3]int) bool {
		for i := range p {
			if d := p[i] - want[i]; d > tol || d < -tol {
				return false
			}
		}
		return true
	}
	matching := func() (n int) {
		for _, p := range screen {
			if near(p) {
				n++
			}
		}
		return n
	}
	for incremental := byte(0); matching() < len(screen)*95/100; incremental = 1 {
		req := []byte{3, incremental, 0, 0, 0, 0, 0, 0, 0, 0}
		binary.BigEndian.PutUint16(req[6:], uint16(w))
		binary.BigEndian.PutUint16(req[8:], uint16(h))
		_, err = c.Write(req)
		require.NoError(t, err)
		head := make([]byte, 4)
		_, err = io.ReadFull(c, head)
		require.NoError(t, err, "screen: %d of %d pixels near %v", matching(), len(screen), want)
		for head[0] != 0 {
			switch head[0] {
			case 3: // ServerCutText: 3 bytes of padding, length, text
				rest := make([]byte, 4)
				_, err = io.ReadFull(c, rest)
				require.NoError(t, err)
				_, err = io.CopyN(io.Discard, c, int64(binary.BigEndian.Uint32(rest)))
			case 2: // Bell: the type only, so head's other 3 bytes start the next message
				copy(head, head[1:])
				_, err = io.ReadFull(c, head[3:])
				continue
			default:
				t.Fatalf("unexpected RFB message type %d", head[0])
			}
			require.NoError(t, err)
			_, err = io.ReadFull(c, head)
			require.NoError(t, err)
		}
		for range binary.BigEndian.Uint16(head[2:4]) {
			rh := make([]byte, 12)
			_, err = io.ReadFull(c, rh)
			require.NoError(t, err)
			rx, ry := int(binary.BigEndian.Uint16(rh[0:2])), int(binary.BigEndian.Uint16(rh[2:4]))
			rw, rhh := int(binary.BigEndian.Uint16(rh[4:6])), int(binary.BigEndian.Uint16(rh[6:8]))
			require.Equal(t, int32(0), int32(binary.BigEndian.Uint32(rh[8:12])), "Raw encoding")
			px := make([]byte, rw*rhh*4)
			_, err = io.ReadFull(c, px)
			require.NoError(t, err)
			for i := 0; i < rw*rhh; i++ {
				var v uint32
				if bigEndian {
					v = binary.BigEndian.Uint32(px[4*i:])
				} else {
					v = binary.LittleEndian.Uint32(px[4*i:])
				}
				r := int(v>>rshift) & rmax * 255 / rmax
				g := int(v>>gshift) & gmax * 255 / gmax
				b := int(v>>bshift) & bmax * 255 / bmax
				if y, x := ry+i/rw, rx+i%rw; y < h && x < w {
					screen[y*w+x] = [3]int{r, g, b}
				}
			}
		}
	}
	return w, h
}

// Cmdlines are every process's command line on this host (for a test
// that a secret is on none).
func Cmdlines(t *testing.T) map[string]string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	require.NoError(t, err)
	out := map[string]string{}
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && len(b) > 0 {
			out[e.Name()] = strings.ReplaceAll(string(b), "\x00", " ")
		}
	}
	return out
}
