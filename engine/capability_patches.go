package engine

import (
	"context"
	"net/http"

	"github.com/cairn-rmm/cairn"

	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/api"
	"github.com/cairn-rmm/cairn/internal/patches"
	"github.com/cairn-rmm/cairn/workflowclient"
	"github.com/cairn-rmm/cairn/workflows"
)

// patchesCapability is patch management: devices' normalised patch rows,
// the fleet audit, and installs, each run by its device's PatchLane and
// confirmed by the re-scan after it (issue 24).
var patchesCapability = Capability{
	Name: "patches",
	Wire: func(_ context.Context, e *Engine) error {
		e.Patches = patches.New(e.Store)
		e.Patches.Filters = e.Filters
		e.Jobs.SetPatchKeyChecker(e.Patches)
		return nil
	},
	API: func(e *Engine) api.Area {
		return api.PatchesArea{Patches: e.Patches, Lanes: workflowclient.PatchLaneStarter{Client: e.client(), Grants: e.Grants},
			Fires: e.JobSched}
	},
	Codes: []cairn.Code{
		{ID: patches.ECodePolicyConflict, Status: http.StatusConflict},
	},
	Workflows: []any{workflows.PatchLane},
	Activities: func(e *Engine) []any {
		lanes := workflowclient.PatchLaneStarter{Client: e.client(), Grants: e.Grants}
		return []any{&activities.PatchInstalls{Patches: e.Patches, Jobs: e.Jobs, Lanes: lanes},
			&activities.PatchPolicies{Patches: e.Patches, Lanes: lanes, Fires: e.JobSched}}
	},
	Maintenance: []workflows.MaintenanceJob{
		// Patch policies' evaluation: approved updates inside maintenance
		// windows become installs in the devices' patch lanes.
		{Name: workflows.JobPatchPolicies, Every: workflows.PatchPolicyEvery, Activity: "EvaluatePatchPolicies"},
	},
	AgentOps: []string{proto.EventPatchInstall, proto.EventPatchReboot, proto.EventPatchPolicyEnforcement},
}
