package vnc_test

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/vnc"
)

// The VNC authentication answer matches OpenSSL's DES-ECB of the
// challenge under the bit-reversed password (computed with
// `openssl enc -provider legacy -des-ecb -K cea6c64ea62e0000 -nopad`).
func TestAuthResponseMatchesOpenSSL(t *testing.T) {
	t.Parallel()
	got, err := vnc.AuthResponse("secret", []byte("abcdefghijklmnop"))
	require.NoError(t, err)
	require.Equal(t, "0dd1fa0bd618fc2ef46a16dda97ff64c", hex.EncodeToString(got))
	// Only eight bytes of a password count.
	long, err := vnc.AuthResponse("secret\x00\x00tail", []byte("abcdefghijklmnop"))
	require.NoError(t, err)
	require.Equal(t, got, long)
}

// fakeServer accepts one connection and runs serve on it.
func fakeServer(t *testing.T, serve func(c net.Conn)) vnc.Dialer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(c)
			}()
		}
	}()
	return func(ctx context.Context) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "tcp", l.Addr().String())
	}
}

// Rule 6: every way the banner read fails keeps vnc_backend_no_rfb_banner
// with its probe stage, attempt count and elapsed time.
func TestProbeBannerStages(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		serve func(net.Conn)
		dial  vnc.Dialer
		stage string
	}{
		{"dial failed", nil, func(context.Context) (net.Conn, error) { return nil, errors.New("connection refused") }, vnc.StageDialFailed},
		{"silent server", func(c net.Conn) { _, _ = io.Copy(io.Discard, c) }, nil, vnc.StageBannerReadTimeout},
		{"short banner", func(c net.Conn) { _, _ = c.Write([]byte("RFB 00")) }, nil, vnc.StageBannerShortRead},
		{"not RFB", func(c net.Conn) { _, _ = c.Write([]byte("HTTP/1.1 200")) }, nil, vnc.StageInvalidBanner},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dial := c.dial
			if dial == nil {
				dial = fakeServer(t, c.serve)
			}
			_, err := vnc.ProbeBanner(context.Background(), dial, 2, 300*time.Millisecond)
			var be *vnc.BannerError
			require.True(t, errors.As(err, &be), "%v", err)
			require.Equal(t, c.stage, be.Stage)
			require.Equal(t, 2, be.Attempt)
			var ce *cairn.Error
			require.True(t, errors.As(be.CairnError(), &ce))
			require.Equal(t, vnc.ECodeNoRFBBanner, ce.Code)
			require.Equal(t, c.stage, ce.Probe.Stage)
			require.Equal(t, 2, ce.Probe.Attempt)
		})
	}
	good := fakeServer(t, func(c net.Conn) { _, _ = c.Write([]byte("RFB 003.008\n")) })
	b, err := vnc.ProbeBanner(context.Background(), good, 1, time.Second)
	require.NoError(t, err)
	require.Equal(t, "RFB 003.008\n", b)
}

// rfbServer speaks the server's side up to the security types.
func rfbServer(types []byte, reason string) func(net.Conn) {
	return func(c net.Conn) {
		_, _ = c.Write([]byte("RFB 003.008\n"))
		v := make([]byte, 12)
		if _, err := io.ReadFull(c, v); err != nil {
			return
		}
		_, _ = c.Write([]byte{byte(len(types))})
		if len(types) == 0 {
			l := make([]byte, 4)
			binary.BigEndian.PutUint32(l, uint32(len(reason)))
			_, _ = c.Write(append(l, reason...))
			return
		}
		_, _ = c.Write(types)
		_, _ = io.Copy(io.Discard, c)
	}
}

// The security-type preflight fails fast, without asking for any
// password, when the server offers no type or no VNC authentication.
func TestPreflight(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		types []byte
		code  string
	}{
		{"type 0: no type offered", nil, vnc.ECodePasswordNotEnabled},
		{"None only", []byte{1}, vnc.ECodePasswordNotEnabled},
		{"VNC authentication", []byte{1, 2}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := vnc.Preflight(context.Background(), fakeServer(t, rfbServer(c.types, "no security types")), 2*time.Second)
			if c.code == "" {
				require.NoError(t, err)
				return
			}
			require.Equal(t, c.code, cairn.ErrorCode(err), "%v", err)
		})
	}
}

func TestConfigFromEnv(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	c, err := vnc.ConfigFromEnv(env(nil))
	require.NoError(t, err)
	require.Equal(t, 75*time.Second, c.EstablishDeadline)
	require.True(t, c.Preflight)
	c, err = vnc.ConfigFromEnv(env(map[string]string{"SERVICE_VNC_ESTABLISH_DEADLINE_SECONDS": "20", "SERVICE_VNC_SECURITY_PREFLIGHT": "0"}))
	require.NoError(t, err)
	require.Equal(t, 20*time.Second, c.EstablishDeadline)
	require.Equal(t, 20*time.Second, c.ReadyWait, "per-step waits are clipped to the deadline")
	require.False(t, c.Preflight)
	_, err = vnc.ConfigFromEnv(env(map[string]string{"SERVICE_VNC_ESTABLISH_DEADLINE_SECONDS": "76"}))
	require.ErrorContains(t, err, "SERVICE_VNC_ESTABLISH_DEADLINE_SECONDS")
	require.False(t, c.AuthProbe, "the auth probe is off unless asked for")
	c, err = vnc.ConfigFromEnv(env(map[string]string{"SERVICE_VNC_AUTH_PROBE": "1"}))
	require.NoError(t, err)
	require.True(t, c.AuthProbe)
	_, err = vnc.ConfigFromEnv(env(map[string]string{"SERVICE_VNC_AUTH_PROBE": "yes"}))
	require.ErrorContains(t, err, "SERVICE_VNC_AUTH_PROBE")
}
