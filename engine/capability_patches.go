package engine

import (
	"context"

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
		return nil
	},
	API: func(e *Engine) api.Area {
		return api.PatchesArea{Patches: e.Patches, Lanes: workflowclient.PatchLaneStarter{Client: e.client(), Grants: e.Grants}}
	},
	Workflows:  []any{workflows.PatchLane},
	Activities: func(e *Engine) []any { return []any{&activities.PatchInstalls{Patches: e.Patches}} },
	AgentOps:   []string{proto.EventPatchInstall},
}
