package engine

import (
	"context"
	"net/http"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/api"
	"github.com/cairn-rmm/cairn/internal/rdp"
)

// rdpCapability is remote desktop over RDP (issue 23; SPEC "Remote
// desktop rules" 3-5, agent behaviour 14): the agent's RDP role and its
// ensure route, and the Engine's per-session bridge (internal/rdp) that
// the RemoteDesktop workflow (vncCapability's) starts for protocol rdp
// and the RFB gateway relays to the browser.
var rdpCapability = Capability{
	Name: "rdp",
	Codes: []cairn.Code{
		{ID: rdp.ECodeBackendNotReady, Status: http.StatusConflict, Retryable: true},
		{ID: rdp.ECodeCredentialInvalid, Status: http.StatusConflict},
		{ID: rdp.ECodeAuthFailed, Status: http.StatusBadGateway},
		{ID: rdp.ECodeConnectFailed, Status: http.StatusBadGateway, Retryable: true},
		{ID: rdp.ECodeBridgeUnavailable, Status: http.StatusServiceUnavailable},
		{ID: proto.CodeRDPNotReady, Status: http.StatusConflict, Retryable: true, Agent: true},
	},
	Wire: func(_ context.Context, e *Engine) error {
		e.RDP = rdp.NewService()
		return nil
	},
	API: func(e *Engine) api.Area { return api.RDPArea{Tunnels: e.Tunnels} },
	Activities: func(e *Engine) []any {
		return []any{&activities.RDP{RDP: e.RDP, Credentials: e.Credentials, Server: e.TunnelReach}}
	},
	AgentOps: []string{proto.EventRDPStart, proto.EventRDPTransportRecovery},
}
