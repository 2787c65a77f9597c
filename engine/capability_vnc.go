package engine

import (
	"context"
	"net/http"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/api"
	"github.com/cairn-rmm/cairn/internal/vnc"
	"github.com/cairn-rmm/cairn/workflowclient"
	"github.com/cairn-rmm/cairn/workflows"
)

// vncCapability is remote desktop over VNC (issue 23): the agent's VNC
// role, the RemoteDesktop establishment workflow on the device's site
// queue, and the gateway that relays RFB between the browser's socket and
// the agent's server through the Engine's WireGuard.
var vncCapability = Capability{
	Name: "vnc",
	Codes: []cairn.Code{
		{ID: vnc.ECodeNoRFBBanner, Status: http.StatusBadGateway, Retryable: true},
		{ID: vnc.ECodePasswordNotEnabled, Status: http.StatusBadGateway},
		{ID: vnc.ECodeAuthLockout, Status: http.StatusConflict},
		{ID: vnc.ECodeAuthFailed, Status: http.StatusBadGateway},
		{ID: vnc.ECodeBackendNotReady, Status: http.StatusConflict, Retryable: true},
		{ID: vnc.ECodeEstablishTimeout, Status: http.StatusGatewayTimeout, Retryable: true},
		{ID: vnc.ECodeTokenInvalid, Status: http.StatusForbidden},
		{ID: vnc.ECodeSessionEnded, Status: http.StatusGone},
		{ID: vnc.ECodeAuthRetryInProgress, Status: http.StatusConflict, Retryable: true},
		{ID: vnc.ECodeAuthRetrySettling, Status: http.StatusConflict, Retryable: true},
		{ID: proto.CodeVNCNotReady, Status: http.StatusConflict, Retryable: true, Agent: true},
	},
	Wire: func(_ context.Context, e *Engine) error {
		cfg := vnc.DefaultConfig()
		if e.cfg.VNC != nil {
			cfg = *e.cfg.VNC
		}
		e.VNC = vnc.New(e.Store, cfg)
		return nil
	},
	API: func(e *Engine) api.Area {
		return api.VNCArea{VNC: e.VNC, Tunnels: e.Tunnels, Server: e.TunnelReach, Gateway: e.DesktopGateway,
			Starter: workflowclient.DesktopStarter{Client: e.client(), Grants: e.Grants}, RDP: e.RDP, Credentials: e.Credentials}
	},
	Workflows: []any{workflows.RemoteDesktop},
	Activities: func(e *Engine) []any {
		return []any{&activities.VNC{Store: e.Store, VNC: e.VNC, Devices: e.Devices, Tunnels: e.Tunnels, Server: e.TunnelReach}}
	},
	AgentOps: []string{proto.EventVNCStart, proto.EventVNCStop, proto.EventVNCCredentialRequest, proto.EventVNCRefresh},
}
