package engine

import (
	"net/http"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/api"
	"github.com/cairn-rmm/cairn/internal/agentgateway"
	"github.com/cairn-rmm/cairn/internal/grants"
	"github.com/cairn-rmm/cairn/workflows"
)

// operationsCapability is the command path: a DeviceOperation workflow
// sends an operation to the device's agent over its socket and waits for
// the answer (process and service control, inventory refreshes), and the
// activities every other capability's agent operations go through.
var operationsCapability = Capability{
	Name: "operations",
	Codes: []cairn.Code{
		// What the agent answered (the gateway passes only Agent codes on)
		// and how the command path ended.
		{ID: proto.CodeOpMismatch, Status: http.StatusConflict, Agent: true},
		{ID: proto.CodeOpInvalid, Status: http.StatusBadRequest, Agent: true},
		{ID: proto.CodeOpUnsupported, Status: http.StatusNotImplemented, Agent: true},
		{ID: proto.CodeOpNotFound, Status: http.StatusNotFound, Agent: true},
		{ID: proto.CodeOpFailed, Status: http.StatusBadGateway, Agent: true},
		{ID: proto.CodeOpPermission, Status: http.StatusBadGateway, Agent: true},
		{ID: proto.CodeOpTimedOut, Status: http.StatusGatewayTimeout, Agent: true},
		{ID: proto.CodeOpShellLimit, Status: http.StatusTooManyRequests, Agent: true},
		{ID: proto.CodeOpAlreadyRunning, Status: http.StatusConflict, Agent: true},
		// The agent refused the operation's grant or script signature.
		{ID: proto.CodeSignatureInvalid, Status: http.StatusBadGateway, Agent: true},
		{ID: workflows.ECodeOperationTimedOut, Status: http.StatusGatewayTimeout},
		{ID: grants.ECodeNotGranted, Status: http.StatusForbidden},
		{ID: agentgateway.FailureSocketClosed, Status: http.StatusServiceUnavailable},
	},
	API:       func(*Engine) api.Area { return api.OperationsArea },
	Workflows: []any{workflows.DeviceOperation},
	Activities: func(e *Engine) []any {
		return []any{
			&activities.AgentCommands{Gateway: e.Gateway, Devices: e.Devices, Grants: e.Grants},
			&activities.Operations{Devices: e.Devices},
		}
	},
	Maintenance: []workflows.MaintenanceJob{
		// Command-path requests past their deadline whose holder died
		// before it could take them.
		{Name: workflows.JobAgentRequests, Every: 5 * time.Minute, Activity: "SweepAgentRequests"},
	},
	AgentOps: []string{proto.EventProcessManagement, proto.EventServiceControl, proto.EventSoftwareRefresh,
		proto.EventPatchRefresh},
}
