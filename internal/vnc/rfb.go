package vnc

import (
	"bytes"
	"context"
	"crypto/des"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn"
)

// The Engine's side of RFB (RFC 6143) toward the agent's server: the
// banner probe (rule 6), the security-type preflight and VNC
// authentication. No Go module the proxy serves does this (docs/
// DEPENDENCIES.md), and the part needed is small.

// Probe stages of vnc_backend_no_rfb_banner (rule 6).
const (
	StageDialFailed        = "dial_failed"
	StageBannerReadTimeout = "banner_read_timeout"
	StageBannerShortRead   = "banner_short_read"
	StageInvalidBanner     = "invalid_banner"
)

// BannerLen is the RFB ProtocolVersion message's length.
const BannerLen = 12

// RFB security types.
const (
	secInvalid = 0
	secNone    = 1
	secVNCAuth = 2
)

// BannerError is a failed banner read, with where it failed.
type BannerError struct {
	Stage   string
	Attempt int
	Elapsed time.Duration
	Err     error
}

func (e *BannerError) Error() string {
	return fmt.Sprintf("no RFB banner (%s, attempt %d, %s): %v", e.Stage, e.Attempt, e.Elapsed.Round(time.Millisecond), e.Err)
}

// CairnError is the API's vnc_backend_no_rfb_banner with probe_stage,
// attempt and elapsed_ms.
func (e *BannerError) CairnError() error {
	ce := cairn.Errorf(ECodeNoRFBBanner, "the agent's VNC server sent no RFB banner (%s)", e.Stage)
	ce.Probe = &cairn.Probe{Stage: e.Stage, Attempt: e.Attempt, ElapsedMS: e.Elapsed.Milliseconds()}
	return ce
}

// ReadBanner reads the 12-byte ProtocolVersion within wait and checks it.
func ReadBanner(c net.Conn, wait time.Duration) (string, string, error) {
	_ = c.SetReadDeadline(time.Now().Add(wait))
	defer func() { _ = c.SetReadDeadline(time.Time{}) }()
	buf := make([]byte, BannerLen)
	n, err := io.ReadFull(c, buf)
	if err != nil {
		var ne net.Error
		switch {
		case n == 0 && errors.As(err, &ne) && ne.Timeout():
			return "", StageBannerReadTimeout, err
		default:
			return string(buf[:n]), StageBannerShortRead, err
		}
	}
	b := string(buf)
	var major, minor int
	if _, err := fmt.Sscanf(b, "RFB %03d.%03d\n", &major, &minor); err != nil || major != 3 || !strings.HasSuffix(b, "\n") {
		return b, StageInvalidBanner, fmt.Errorf("%q is not an RFB 3.x ProtocolVersion", b)
	}
	return b, "", nil
}

// Dialer reaches the agent's server (through the tunnel).
type Dialer func(ctx context.Context) (net.Conn, error)

// ProbeBanner dials and reads the banner only (rule 6: readiness checks
// read nothing else), up to attempts times within wait each.
func ProbeBanner(ctx context.Context, dial Dialer, attempts int, wait time.Duration) (string, error) {
	started := time.Now()
	var last *BannerError
	for i := 1; i <= max(attempts, 1); i++ {
		dctx, cancel := context.WithTimeout(ctx, wait)
		c, err := dial(dctx)
		cancel()
		if err != nil {
			last = &BannerError{Stage: StageDialFailed, Attempt: i, Elapsed: time.Since(started), Err: err}
		} else {
			b, stage, err := ReadBanner(c, wait)
			_ = c.Close()
			if err == nil {
				return b, nil
			}
			last = &BannerError{Stage: stage, Attempt: i, Elapsed: time.Since(started), Err: err}
		}
		if ctx.Err() != nil {
			break
		}
		if i < attempts {
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
	return "", last
}

// clientHandshake is the Engine as an RFB 3.8 client up to (not
// including) ClientInit. password is asked for only once the server
// offered VNC authentication: nil password means preflight (stop after
// the security types and report them).
func clientHandshake(c net.Conn, wait time.Duration, password func() (string, error)) ([]byte, error) {
	_ = c.SetDeadline(time.Now().Add(wait))
	defer func() { _ = c.SetDeadline(time.Time{}) }()
	if _, stage, err := ReadBanner(c, wait); err != nil {
		return nil, &BannerError{Stage: stage, Attempt: 1, Err: err}
	}
	if _, err := c.Write([]byte("RFB 003.008\n")); err != nil {
		return nil, err
	}
	var n [1]byte
	if _, err := io.ReadFull(c, n[:]); err != nil {
		return nil, err
	}
	if n[0] == secInvalid {
		reason, _ := readReason(c)
		return nil, cairn.Errorf(ECodePasswordNotEnabled, "the agent's VNC server offered no security type: %s", bound(reason))
	}
	types := make([]byte, n[0])
	if _, err := io.ReadFull(c, types); err != nil {
		return nil, err
	}
	if !bytes.Contains(types, []byte{secVNCAuth}) {
		return types, cairn.Errorf(ECodePasswordNotEnabled, "the agent's VNC server does not offer password authentication (types %v)", types)
	}
	if password == nil {
		return types, nil
	}
	pw, err := password()
	if err != nil {
		return types, err
	}
	_ = c.SetDeadline(time.Now().Add(wait))
	if _, err := c.Write([]byte{secVNCAuth}); err != nil {
		return types, err
	}
	var challenge [16]byte
	if _, err := io.ReadFull(c, challenge[:]); err != nil {
		return types, err
	}
	resp, err := AuthResponse(pw, challenge[:])
	if err != nil {
		return types, err
	}
	if _, err := c.Write(resp); err != nil {
		return types, err
	}
	var result [4]byte
	if _, err := io.ReadFull(c, result[:]); err != nil {
		return types, err
	}
	if binary.BigEndian.Uint32(result[:]) != 0 {
		reason, _ := readReason(c)
		if strings.Contains(strings.ToLower(reason), "too many") || binary.BigEndian.Uint32(result[:]) == 2 {
			return types, cairn.Errorf(ECodeAuthLockout, "the agent's VNC server refuses authentication for now: %s", bound(reason))
		}
		return types, cairn.Errorf(ECodeAuthFailed, "the agent's VNC server refused the session's credential: %s", bound(reason))
	}
	return types, nil
}

func readReason(c net.Conn) (string, error) {
	var l [4]byte
	if _, err := io.ReadFull(c, l[:]); err != nil {
		return "", err
	}
	n := min(binary.BigEndian.Uint32(l[:]), 4096)
	b := make([]byte, n)
	_, err := io.ReadFull(c, b)
	return string(b), err
}

func bound(s string) string {
	if len(s) > 200 {
		return s[:200]
	}
	return s
}

// AuthResponse is RFB VNC authentication's answer to challenge: DES-ECB
// of the 16-byte challenge under the password (at most 8 bytes, zero
// padded) with each key byte's bits reversed, as the original VNC
// implementation did and every server expects (RFC 6143 7.2.2 leaves this
// out). crypto/des is the standard library's; no well-kept module does
// this small step.
func AuthResponse(password string, challenge []byte) ([]byte, error) {
	if len(challenge) != 16 {
		return nil, errors.New("the VNC challenge must be 16 bytes")
	}
	var key [8]byte
	copy(key[:], password)
	for i, b := range key {
		key[i] = reverseBits(b)
	}
	block, err := des.NewCipher(key[:])
	if err != nil {
		return nil, err
	}
	out := make([]byte, 16)
	block.Encrypt(out[:8], challenge[:8])
	block.Encrypt(out[8:], challenge[8:])
	return out, nil
}

func reverseBits(b byte) byte {
	var r byte
	for i := range 8 {
		r |= ((b >> i) & 1) << (7 - i)
	}
	return r
}
