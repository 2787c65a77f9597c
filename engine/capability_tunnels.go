package engine

import (
	"context"
	"net/http"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/api"
	"github.com/cairn-rmm/cairn/internal/gateway"
	"github.com/cairn-rmm/cairn/internal/tunnels"
	"github.com/cairn-rmm/cairn/workflowclient"
	"github.com/cairn-rmm/cairn/workflows"
)

// tunnelsCapability is the managed WireGuard tunnel between the Engine
// and each device (issue 23): the Engine's end in user space on the
// replica holding the owner lease, the agents' ensure and ready calls,
// the TunnelEstablish workflow, and teardown with the device's trust.
var tunnelsCapability = Capability{
	Name: "tunnels",
	Codes: []cairn.Code{
		{ID: tunnels.ECodeNoTunnel, Status: http.StatusNotFound},
		{ID: tunnels.ECodeNotReady, Status: http.StatusConflict, Retryable: true},
		{ID: tunnels.ECodeUnavailable, Status: http.StatusServiceUnavailable, Retryable: true},
		{ID: tunnels.ECodeAddressesExhausted, Status: http.StatusConflict},
		{ID: tunnels.ECodeUnreachable, Status: http.StatusBadGateway},
		{ID: proto.CodeTunnelToolsMissing, Status: http.StatusBadGateway, Agent: true},
		{ID: proto.CodeTunnelNoHandshake, Status: http.StatusBadGateway, Agent: true},
	},
	Wire: func(_ context.Context, e *Engine) error {
		svc, err := tunnels.New(e.Store, e.Cipher, func(ctx context.Context) error { return e.Bus.Signal(ctx, tunnels.ControlTunnels) },
			e.cfg.Tunnels, e.Log.With("component", "tunnels"))
		if err != nil {
			return err
		}
		e.Tunnels = svc
		switch {
		case e.cfg.GatewayURL != "":
			// A gateway process holds the WireGuard (internal/gateway):
			// this process binds none and reaches tunnels through it.
			e.DesktopGateway = &gateway.Client{URL: e.cfg.GatewayURL, Tunnels: svc, Keys: e.Internal, Now: e.cfg.Now}
			e.TunnelReach = e.DesktopGateway
		case e.cfg.Role == RoleServe:
			e.TunnelServer = tunnels.NewServer(svc, e.Presence.ReplicaID, e.Cipher.Unlocked, e.Bus.OnControl(tunnels.ControlTunnels))
			e.TunnelReach = e.TunnelServer
		}
		return nil
	},
	API: func(e *Engine) api.Area {
		return api.TunnelsArea{Tunnels: e.Tunnels, Server: e.TunnelReach,
			Starter: workflowclient.TunnelStarter{Client: e.client(), Grants: e.Grants}}
	},
	Workflows:  []any{workflows.TunnelEstablish},
	Activities: func(e *Engine) []any { return []any{&activities.Tunnels{Tunnels: e.Tunnels}} },
	AgentOps:   []string{proto.EventVPNTunnelStart},
}
