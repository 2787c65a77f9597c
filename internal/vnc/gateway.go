package vnc

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
)

// Gateway relays one live session: RFB to the agent's server through the
// tunnel (the Engine authenticates with the runtime password), and RFB to
// the browser as a server that needs no password (the browser was
// authorised by its one-time token and the operator's own sign-in). What
// passes after the handshakes is relayed unchanged both ways.
type Gateway struct {
	// Dial reaches the agent's VNC port through the tunnel.
	Dial Dialer
	// Credential asks the agent for its password sealed to publicKey
	// (vnc_credential_request) and returns the sealed answer.
	Credential func(ctx context.Context, publicKey string) (string, error)
	// Password, when set, is the server's password itself, used instead
	// of Credential: an RDP session's bridge, whose x11vnc runs in this
	// process with a one-time password (internal/rdp).
	Password func(ctx context.Context) (string, error)
	// FirstFrame is called once with the first FramebufferUpdate's time.
	FirstFrame func(at time.Time)
	// Rotate: the credential is a vnc_auth_retry's, which makes the agent
	// restart its server with a new password, so it is asked for before
	// dialing (a connection made first would be cut by the restart).
	Rotate bool
	Config Config
}

// Preflight dials, reads the banner and checks the security types offered
// (rule 6): a server offering no type, or no VNC authentication, fails
// fast without any password being asked for.
func Preflight(ctx context.Context, dial Dialer, wait time.Duration) error {
	dctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	c, err := dial(dctx)
	if err != nil {
		return (&BannerError{Stage: StageDialFailed, Attempt: 1, Err: err}).CairnError()
	}
	defer c.Close()
	_, err = clientHandshake(c, wait, nil)
	var be *BannerError
	if errors.As(err, &be) {
		return be.CairnError()
	}
	return err
}

// AuthProbe is rule 7's diagnostic password-authentication probe, run
// at establish when asked for (auth_probe, or SERVICE_VNC_AUTH_PROBE=1):
// it asks the agent for the credential (sealed, as for a live session),
// authenticates to the server through the tunnel and hangs up. An
// explicit refusal is vnc_auth_failed (vnc_auth_lockout when the server
// locks out), so the browser learns it before it opens a socket.
func (g *Gateway) AuthProbe(ctx context.Context) error {
	wait := max(g.Config.PreflightTimeout, g.Config.RFBReadyWait, 5*time.Second)
	pw, err := g.password(ctx)
	if err != nil {
		return err
	}
	dctx, cancel := context.WithTimeout(ctx, wait)
	agent, err := g.Dial(dctx)
	cancel()
	if err != nil {
		return (&BannerError{Stage: StageDialFailed, Attempt: 1, Err: err}).CairnError()
	}
	defer agent.Close()
	_, err = clientHandshake(agent, wait, func() (string, error) { return pw, nil })
	var be *BannerError
	if errors.As(err, &be) {
		return be.CairnError()
	}
	return err
}

// password asks the agent for its credential with a one-time key pair;
// only this call's private key opens the answer.
func (g *Gateway) password(ctx context.Context) (string, error) {
	if g.Password != nil {
		return g.Password(ctx)
	}
	pub, priv, err := proto.VNCKeyPair()
	if err != nil {
		return "", err
	}
	cctx, cancel := context.WithTimeout(ctx, g.Config.CredentialWait)
	defer cancel()
	sealed, err := g.Credential(cctx, pub)
	if err != nil {
		return "", err
	}
	pw, err := proto.OpenVNCCredential(pub, priv, sealed)
	if err != nil {
		return "", cairn.Wrap(err, ECodeAuthFailed, "the agent's credential could not be opened")
	}
	return pw, nil
}

// Serve connects to the agent, authenticates, hands the browser an
// RFB 3.8 handshake of its own and relays until either side ends. It
// returns why the session ended.
func (g *Gateway) Serve(ctx context.Context, browser net.Conn) (string, error) {
	wait := max(g.Config.PreflightTimeout, g.Config.RFBReadyWait, 5*time.Second)
	password := func() (string, error) { return g.password(ctx) }
	if g.Rotate {
		pw, err := g.password(ctx)
		if err != nil {
			return "", err
		}
		password = func() (string, error) { return pw, nil }
	}
	dctx, cancel := context.WithTimeout(ctx, wait)
	agent, err := g.Dial(dctx)
	cancel()
	if err != nil {
		return "", (&BannerError{Stage: StageDialFailed, Attempt: 1, Err: err}).CairnError()
	}
	defer agent.Close()
	// The credential wait comes on top of the handshake's own.
	_, err = clientHandshake(agent, wait+g.Config.CredentialWait, password)
	if err != nil {
		var be *BannerError
		if errors.As(err, &be) {
			return "", be.CairnError()
		}
		return "", err
	}
	if err := serverHandshake(browser, wait); err != nil {
		return "", fmt.Errorf("the browser's RFB handshake: %w", err)
	}
	return g.relay(ctx, browser, agent), nil
}

// serverHandshake is the gateway as an RFB 3.8 server to the browser,
// offering security type None (the browser never gets the password).
func serverHandshake(c net.Conn, wait time.Duration) error {
	_ = c.SetDeadline(time.Now().Add(wait))
	defer func() { _ = c.SetDeadline(time.Time{}) }()
	if _, err := c.Write([]byte("RFB 003.008\n")); err != nil {
		return err
	}
	v, _, err := ReadBanner(c, wait)
	if err != nil {
		return err
	}
	if v != "RFB 003.008\n" && v != "RFB 003.007\n" {
		return fmt.Errorf("the browser asked for %q; the gateway speaks RFB 3.7 and 3.8", v)
	}
	if _, err := c.Write([]byte{1, secNone}); err != nil {
		return err
	}
	var choice [1]byte
	if _, err := io.ReadFull(c, choice[:]); err != nil {
		return err
	}
	if choice[0] != secNone {
		return fmt.Errorf("the browser chose security type %d", choice[0])
	}
	if v == "RFB 003.008\n" {
		_, err = c.Write([]byte{0, 0, 0, 0}) // SecurityResult OK
	}
	return err
}

// relay copies both ways until one side ends; it watches the server's
// side for the first FramebufferUpdate (first_frame, rule 8).
func (g *Gateway) relay(ctx context.Context, browser, agent net.Conn) string {
	var once sync.Once
	reason := make(chan string, 2)
	end := func(r string) {
		once.Do(func() {
			reason <- r
			_ = browser.Close()
			_ = agent.Close()
		})
	}
	go func() {
		_, _ = io.Copy(agent, browser)
		end("browser_closed")
	}()
	go func() {
		if err := g.watchFirstFrame(browser, agent); err != nil {
			end("agent_closed")
			return
		}
		_, _ = io.Copy(browser, agent)
		end("agent_closed")
	}()
	select {
	case r := <-reason:
		return r
	case <-ctx.Done():
		end("stopped")
		return "stopped"
	}
}

// watchFirstFrame passes ServerInit on, then the server's messages until
// the first FramebufferUpdate (type 0), which is the first frame; the
// messages x11vnc may send before it (SetColourMapEntries, Bell,
// ServerCutText) are passed on whole.
func (g *Gateway) watchFirstFrame(browser, agent net.Conn) error {
	head := make([]byte, 24)
	if _, err := io.ReadFull(agent, head); err != nil {
		return err
	}
	nameLen := min(binary.BigEndian.Uint32(head[20:24]), 1<<16)
	name := make([]byte, nameLen)
	if _, err := io.ReadFull(agent, name); err != nil {
		return err
	}
	if _, err := browser.Write(append(head, name...)); err != nil {
		return err
	}
	for {
		var typ [1]byte
		if _, err := io.ReadFull(agent, typ[:]); err != nil {
			return err
		}
		var rest int64
		switch typ[0] {
		case 0:
			if g.FirstFrame != nil {
				g.FirstFrame(time.Now())
			}
			_, err := browser.Write(typ[:])
			return err
		case 1: // padding, first colour, count, count × 6 bytes
			hdr := make([]byte, 5)
			if _, err := io.ReadFull(agent, hdr); err != nil {
				return err
			}
			if _, err := browser.Write(append(typ[:], hdr...)); err != nil {
				return err
			}
			rest = int64(binary.BigEndian.Uint16(hdr[3:5])) * 6
		case 2: // Bell
			if _, err := browser.Write(typ[:]); err != nil {
				return err
			}
		case 3: // padding, length, text
			hdr := make([]byte, 7)
			if _, err := io.ReadFull(agent, hdr); err != nil {
				return err
			}
			if _, err := browser.Write(append(typ[:], hdr...)); err != nil {
				return err
			}
			rest = int64(binary.BigEndian.Uint32(hdr[3:7]))
		default:
			// An extension message the gateway cannot size: relay the
			// rest unwatched.
			_, err := browser.Write(typ[:])
			return err
		}
		if _, err := io.CopyN(browser, agent, rest); err != nil {
			return err
		}
	}
}
