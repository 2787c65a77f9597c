package activities

import (
	"context"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/tunnels"
)

// Tunnels are the tunnel establishment's checks and the teardown a trust
// action runs (internal/tunnels).
type Tunnels struct {
	Tunnels *tunnels.Service
	// Now is the clock handshakes are judged by (nil: time.Now).
	Now func() time.Time
}

// TunnelState is what establishment learned of a device's tunnel.
type TunnelState struct {
	TunnelID        string
	VirtualIP       string
	Endpoint        string
	LastHandshakeAt *time.Time
}

// CheckTunnelReady answers once the agent has reported the tunnel ready
// with a fresh handshake since its last ensure; until then it fails with
// the retryable tunnel_not_ready, so the activity's retry policy is the
// wait. A device without a tunnel fails for good.
func (t *Tunnels) CheckTunnelReady(ctx context.Context, guid string) (TunnelState, error) {
	tun, err := t.Tunnels.Get(ctx, cairn.DeviceGUID(guid))
	if err != nil {
		return TunnelState{}, ApplicationError(err)
	}
	now := time.Now
	if t.Now != nil {
		now = t.Now
	}
	if !tun.Ready || !tunnels.Fresh(tun, now()) {
		msg := "the agent has not reported the tunnel ready with a fresh handshake"
		if tun.LastError != "" {
			msg += ": " + tun.LastError
		}
		return TunnelState{}, temporal.NewApplicationError(msg, tunnels.ECodeNotReady)
	}
	return TunnelState{TunnelID: tun.TunnelID, VirtualIP: tun.VirtualIP, Endpoint: tun.Endpoint, LastHandshakeAt: tun.LastHandshakeAt}, nil
}

// TearDownTunnel removes a device's tunnel after a quarantine, revoke or
// purge: the Engine drops its peer and frees the address.
func (t *Tunnels) TearDownTunnel(ctx context.Context, in TrustActionInput) error {
	if t.Tunnels == nil {
		return nil
	}
	_, err := t.Tunnels.TearDown(ctx, in.GUID)
	if cairn.IsCode(err, cairn.ECodeNotFound) {
		return nil
	}
	return ApplicationError(err)
}
