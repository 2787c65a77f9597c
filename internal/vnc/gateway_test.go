package vnc_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/vnc"
)

// authServer is an RFB server with password pw that, once authenticated,
// sends ServerInit and one FramebufferUpdate after the client's request.
// result overrides the SecurityResult (1 failed, with reason).
func authServer(pw string, result uint32, reason string) func(net.Conn) {
	return func(c net.Conn) {
		_, _ = c.Write([]byte("RFB 003.008\n"))
		v := make([]byte, 12)
		if _, err := io.ReadFull(c, v); err != nil {
			return
		}
		_, _ = c.Write([]byte{1, 2})
		var choice [1]byte
		if _, err := io.ReadFull(c, choice[:]); err != nil || choice[0] != 2 {
			return
		}
		challenge := []byte("0123456789abcdef")
		_, _ = c.Write(challenge)
		resp := make([]byte, 16)
		if _, err := io.ReadFull(c, resp); err != nil {
			return
		}
		want, _ := vnc.AuthResponse(pw, challenge)
		if result == 0 && !bytes.Equal(resp, want) {
			result, reason = 1, "Authentication failed"
		}
		r := binary.BigEndian.AppendUint32(nil, result)
		if result != 0 {
			r = binary.BigEndian.AppendUint32(r, uint32(len(reason)))
			_, _ = c.Write(append(r, reason...))
			return
		}
		_, _ = c.Write(r)
		var ci [1]byte
		if _, err := io.ReadFull(c, ci[:]); err != nil {
			return
		}
		init := make([]byte, 24)
		binary.BigEndian.PutUint16(init[0:], 2)
		binary.BigEndian.PutUint16(init[2:], 1)
		binary.BigEndian.PutUint32(init[20:], 4)
		_, _ = c.Write(append(init, "test"...))
		req := make([]byte, 10)
		if _, err := io.ReadFull(c, req); err != nil {
			return
		}
		_, _ = c.Write([]byte{0, 0, 0, 0})
		_, _ = io.Copy(io.Discard, c)
	}
}

// The gateway authenticates to the agent's server with the password the
// agent seals to the gateway's one-time key, offers the browser security
// type None, relays, and sees the first FramebufferUpdate.
func TestGatewayServe(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, serverPW, agentPW string
		result                  uint32
		reason, code            string
	}{
		{"right password", "s3cret!", "s3cret!", 0, "", ""},
		{"wrong password", "s3cret!", "other", 0, "", vnc.ECodeAuthFailed},
		{"lockout", "s3cret!", "s3cret!", 1, "Too many authentication failures", vnc.ECodeAuthLockout},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var frames atomic.Int32
			asked := 0
			g := &vnc.Gateway{Config: vnc.DefaultConfig(), Dial: fakeServer(t, authServer(c.serverPW, c.result, c.reason)),
				Credential: func(_ context.Context, pub string) (string, error) {
					asked++
					return proto.SealVNCCredential(pub, c.agentPW) // what the agent does
				},
				FirstFrame: func(time.Time) { frames.Add(1) }}
			browser, gw := net.Pipe()
			defer browser.Close()
			done := make(chan error, 1)
			go func() {
				_, err := g.Serve(context.Background(), gw)
				done <- err
			}()
			if c.code != "" {
				err := <-done
				require.Equal(t, c.code, cairn.ErrorCode(err), "%v", err)
				require.Equal(t, 1, asked)
				return
			}
			b := make([]byte, 12)
			_, err := io.ReadFull(browser, b)
			require.NoError(t, err)
			_, _ = browser.Write([]byte("RFB 003.008\n"))
			types := make([]byte, 2)
			_, err = io.ReadFull(browser, types)
			require.NoError(t, err)
			require.Equal(t, []byte{1, 1}, types)
			_, _ = browser.Write([]byte{1})
			res := make([]byte, 4)
			_, err = io.ReadFull(browser, res)
			require.NoError(t, err)
			_, _ = browser.Write([]byte{1})
			init := make([]byte, 28)
			_, err = io.ReadFull(browser, init)
			require.NoError(t, err)
			require.Equal(t, "test", string(init[24:]))
			_, _ = browser.Write([]byte{3, 0, 0, 0, 0, 0, 0, 2, 0, 1})
			fbu := make([]byte, 4)
			_, err = io.ReadFull(browser, fbu)
			require.NoError(t, err)
			require.Equal(t, byte(0), fbu[0])
			require.Equal(t, int32(1), frames.Load())
			_ = browser.Close()
			require.NoError(t, <-done)
		})
	}
}

// A vnc_auth_retry's credential makes the agent restart its server with
// the new password, so the gateway asks for it before dialing.
func TestGatewayRotateAsksFirst(t *testing.T) {
	t.Parallel()
	dial := fakeServer(t, authServer("new-pw", 0, ""))
	asked, askedAtDial := 0, -1
	g := &vnc.Gateway{Config: vnc.DefaultConfig(), Rotate: true,
		Dial: func(ctx context.Context) (net.Conn, error) {
			askedAtDial = asked
			return dial(ctx)
		},
		Credential: func(_ context.Context, pub string) (string, error) {
			asked++
			return proto.SealVNCCredential(pub, "new-pw")
		}}
	browser, gw := net.Pipe()
	defer browser.Close()
	done := make(chan error, 1)
	go func() {
		_, err := g.Serve(context.Background(), gw)
		done <- err
	}()
	b := make([]byte, 12)
	_, err := io.ReadFull(browser, b)
	require.NoError(t, err, "the gateway authenticated and greets the browser")
	require.Equal(t, 1, askedAtDial, "the credential came before the dial")
	_ = browser.Close()
	<-done
}

// Rule 7's diagnostic auth probe authenticates with the agent's sealed
// credential and hangs up: the right password passes, a wrong one is
// vnc_auth_failed, a lockout vnc_auth_lockout, a server that never
// answers dial_failed's banner code.
func TestGatewayAuthProbe(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, agentPW string
		result        uint32
		reason, code  string
	}{
		{"right password", "s3cret!", 0, "", ""},
		{"wrong password", "other", 0, "", vnc.ECodeAuthFailed},
		{"lockout", "s3cret!", 1, "Too many authentication failures", vnc.ECodeAuthLockout},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			asked := 0
			g := &vnc.Gateway{Config: vnc.DefaultConfig(), Dial: fakeServer(t, authServer("s3cret!", c.result, c.reason)),
				Credential: func(_ context.Context, pub string) (string, error) {
					asked++
					return proto.SealVNCCredential(pub, c.agentPW)
				}}
			err := g.AuthProbe(context.Background())
			require.Equal(t, 1, asked)
			if c.code == "" {
				require.NoError(t, err)
				return
			}
			require.Equal(t, c.code, cairn.ErrorCode(err), "%v", err)
		})
	}
	g := &vnc.Gateway{Config: vnc.DefaultConfig(),
		Dial: func(context.Context) (net.Conn, error) { return nil, io.ErrUnexpectedEOF },
		Credential: func(_ context.Context, pub string) (string, error) {
			return proto.SealVNCCredential(pub, "x")
		}}
	require.Equal(t, vnc.ECodeNoRFBBanner, cairn.ErrorCode(g.AuthProbe(context.Background())))
}
