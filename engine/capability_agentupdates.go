package engine

import (
	"net/http"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/api"
	"github.com/cairn-rmm/cairn/internal/agentartifacts"
	"github.com/cairn-rmm/cairn/internal/agentupdates"
	"github.com/cairn-rmm/cairn/internal/installlinks"
	"github.com/cairn-rmm/cairn/workflowclient"
	"github.com/cairn-rmm/cairn/workflows"
)

// agentUpdatesCapability is the agent builds this Engine serves, the
// sites' install links, and agent updates (an AgentUpdate workflow per
// device). Scheduled agent_maintenance jobs share the update service, so
// core builds it.
var agentUpdatesCapability = Capability{
	Name: "agentupdates",
	Codes: []cairn.Code{
		{ID: agentartifacts.ECodeUnavailable, Status: http.StatusNotFound},
		{ID: installlinks.ECodeInvalid, Status: http.StatusForbidden},
		{ID: agentupdates.ECodeUpdateInProgress, Status: http.StatusConflict},
	},
	API: func(e *Engine) api.Area {
		return api.AgentUpdatesArea{Artifacts: e.Artifacts, Updates: e.Updates, UpdateStarter: e.updateStarter()}
	},
	Workflows:  []any{workflows.AgentUpdate},
	Activities: func(e *Engine) []any { return []any{&activities.AgentUpdates{Updates: e.Updates}} },
	AgentOps:   []string{proto.EventAgentUpdate},
}

// updateStarter starts and signals agent updates (the routes and the
// scheduled agent_maintenance jobs).
func (e *Engine) updateStarter() workflowclient.AgentUpdateStarter {
	return workflowclient.AgentUpdateStarter{Client: e.client(), Deadline: e.cfg.UpdateDeadline, Grants: e.Grants}
}
