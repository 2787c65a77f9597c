package engine

import (
	"net/http"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/api"
	"github.com/cairn-rmm/cairn/internal/flows"
	"github.com/cairn-rmm/cairn/workflows"
)

// flowsCapability is multi-step automation workflows (/api/workflows),
// each run a FlowRun workflow. Scheduled jobs run flows too, so core
// builds the flow service.
var flowsCapability = Capability{
	Name: "flows",
	Codes: []cairn.Code{
		{ID: flows.ECodeInUse, Status: http.StatusConflict},
	},
	API:       func(e *Engine) api.Area { return api.FlowsArea{Flows: e.Flows} },
	Workflows: []any{workflows.FlowRun},
}
