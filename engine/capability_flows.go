package engine

import (
	"context"
	"net/http"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/api"
	"github.com/cairn-rmm/cairn/internal/flows"
	"github.com/cairn-rmm/cairn/workflows"
)

// flowsCapability is multi-step automation workflows (/api/workflows),
// each run a FlowRun workflow, and their inbound webhooks. Scheduled
// jobs run flows too, so core builds the flow service.
var flowsCapability = Capability{
	Name: "flows",
	Codes: []cairn.Code{
		{ID: flows.ECodeInUse, Status: http.StatusConflict},
		{ID: flows.ECodeWebhookSignatureInvalid, Status: http.StatusUnauthorized},
		{ID: flows.ECodeWebhookSignatureStale, Status: http.StatusUnauthorized},
		{ID: flows.ECodeWebhookReplayed, Status: http.StatusConflict},
	},
	Wire: func(_ context.Context, e *Engine) error {
		e.FlowWebhooks = flows.NewWebhooks(e.Flows, e.Cipher, e.Internal)
		return nil
	},
	API:       func(e *Engine) api.Area { return api.FlowsArea{Flows: e.Flows, Webhooks: e.FlowWebhooks} },
	Workflows: []any{workflows.FlowRun},
}
