package activities

import (
	"context"
	"errors"
	"net"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/credentials"
	"github.com/cairn-rmm/cairn/internal/rdp"
	"github.com/cairn-rmm/cairn/internal/tunnels"
)

// RDP are an RDP session's probe and bridge (internal/rdp). Both need the
// process that holds the Engine's WireGuard (cairn serve with its
// in-process site workers); elsewhere they answer tunnel_unavailable, so
// the activity is retried where it can run.
type RDP struct {
	RDP         *rdp.Service
	Credentials *credentials.Service
	Server      tunnels.Reach
}

// RDPProbeInput is one rule-5 probe of the agent's RDP port.
type RDPProbeInput struct {
	GUID string
	Wait time.Duration
}

func (a *RDP) dialer(guid string) rdp.Dialer {
	return func(ctx context.Context) (net.Conn, error) {
		return a.Server.Dial(ctx, cairn.DeviceGUID(guid), proto.RDPPort)
	}
}

// ProbeRDP connects to the agent's TCP 3389 through the tunnel and asks
// for an X.224 Connection Confirm (rule 5); no answer is
// rdp_backend_not_ready (the workflow recovers once, then gives up).
func (a *RDP) ProbeRDP(ctx context.Context, in RDPProbeInput) (rdp.ProbeResult, error) {
	if a.Server == nil {
		return rdp.ProbeResult{}, temporal.NewApplicationError("this worker serves no tunnels: the remote desktop gateway runs in cairn serve", tunnels.ECodeUnavailable)
	}
	res, err := rdp.Probe(ctx, a.dialer(in.GUID), in.Wait)
	if err != nil {
		var ce *cairn.Error
		if errors.As(err, &ce) {
			return res, ApplicationError(err)
		}
		return res, temporal.NewApplicationError("the agent's RDP port did not answer through the tunnel: "+err.Error(), rdp.ECodeBackendNotReady)
	}
	return res, nil
}

// RDPBridgeInput names a session's bridge: the device, the stored
// credential (CredentialID) or the manual one held for the session in
// this process, the display and quality. It never carries a secret.
type RDPBridgeInput struct {
	SessionID    string
	GUID         string
	SiteID       int64
	CredentialID int64
	Width        int
	Height       int
	DPI          int
	Quality      string
}

// StartRDPBridge resolves the credential here, so the secret is in no
// workflow history (a stored one re-checked for the device's site and
// its types before it is decrypted: credentials.Reveal), and runs the
// session's bridge until StopRDPBridge. Refused credentials, unusable
// ones and a host without the tools fail for good.
func (a *RDP) StartRDPBridge(ctx context.Context, in RDPBridgeInput) error {
	if a.Server == nil {
		return temporal.NewApplicationError("this worker serves no tunnels: the remote desktop gateway runs in cairn serve", tunnels.ECodeUnavailable)
	}
	var creds rdp.Credentials
	if in.CredentialID > 0 {
		sec, err := a.Credentials.Reveal(ctx, in.CredentialID, cairn.SiteID(in.SiteID))
		if err != nil {
			why := "it cannot be read"
			var ce *cairn.Error
			if errors.As(err, &ce) {
				why = ce.Message
			}
			return temporal.NewNonRetryableApplicationError("the stored credential cannot be used for this device: "+why,
				rdp.ECodeCredentialInvalid, nil)
		}
		creds = rdp.FromStored(sec)
	} else {
		c, ok := a.RDP.TakeManual(in.SessionID)
		if !ok {
			return temporal.NewNonRetryableApplicationError("the session's manual credentials are not held by this Engine process (they live in memory only); establish again",
				rdp.ECodeCredentialInvalid, nil)
		}
		creds = c
	}
	_, err := a.RDP.Start(ctx, in.SessionID, a.dialer(in.GUID), creds,
		rdp.Params{Width: in.Width, Height: in.Height, DPI: in.DPI, Quality: in.Quality})
	if err != nil {
		var ce *cairn.Error
		if errors.As(err, &ce) {
			return temporal.NewNonRetryableApplicationError(ce.Message, ce.Code, nil)
		}
		return temporal.NewNonRetryableApplicationError("the RDP bridge did not start: "+err.Error(), rdp.ECodeConnectFailed, nil)
	}
	return nil
}

// StopRDPBridge ends the session's bridge and forgets its credentials.
func (a *RDP) StopRDPBridge(_ context.Context, sessionID string) error {
	a.RDP.Stop(sessionID)
	return nil
}
