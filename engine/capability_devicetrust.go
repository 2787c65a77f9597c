package engine

import (
	"net/http"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/api"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
	"github.com/cairn-rmm/cairn/workflowclient"
	"github.com/cairn-rmm/cairn/workflows"
)

// deviceTrustCapability is quarantine, release, revoke and purge, whose
// follow-up (closing sockets, recording the action) is a workflow. Device
// authentication, which every agent route uses, is core's.
var deviceTrustCapability = Capability{
	Name: "devicetrust",
	API: func(e *Engine) api.Area {
		return api.DeviceTrustArea{TrustActions: workflowclient.TrustStarter{Client: e.client(), TaskQueue: e.cfg.EngineQueue}}
	},
	// device_cloned answers a copy of an installed agent (docs/architecture.md
	// "Device identity and clones").
	Codes:     []cairn.Code{{ID: devicetrust.ECodeDeviceCloned, Status: http.StatusConflict}},
	Workflows: []any{workflows.DeviceTrustAction},
	Activities: func(e *Engine) []any {
		return []any{&activities.DeviceTrust{Sockets: e.Gateway, Activity: e.Devices, Events: e.Bus}}
	},
}
