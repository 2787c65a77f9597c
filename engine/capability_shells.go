package engine

import (
	"context"
	"net/http"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/api"
	"github.com/cairn-rmm/cairn/internal/shells"
	"github.com/cairn-rmm/cairn/workflows"
)

// shellsCapability is the remote shell: a browser socket bridged to the
// agent's, with a recorded transcript.
var shellsCapability = Capability{
	Name: "shells",
	Codes: []cairn.Code{
		{ID: shells.ECodeTokenInvalid, Status: http.StatusForbidden},
		{ID: shells.ECodeAgentTimeout, Status: http.StatusGatewayTimeout},
		{ID: shells.ECodeNotImplemented, Status: http.StatusNotImplemented},
	},
	Wire: func(_ context.Context, e *Engine) error {
		e.Shells = shells.New(e.Store, e.Devices, e.Log.With("component", "shells"),
			shells.Config{TranscriptMax: e.cfg.ShellTranscriptMax, NoInputRecording: e.cfg.ShellNoInputRecording})
		return nil
	},
	API:        func(e *Engine) api.Area { return api.ShellsArea{Shells: e.Shells} },
	Activities: func(e *Engine) []any { return []any{&activities.ShellMaintenance{Shells: e.Shells}} },
	Maintenance: []workflows.MaintenanceJob{
		// Sessions whose bridging process died.
		{Name: workflows.JobShellSessions, Every: time.Minute, Activity: "SweepShellSessions"},
	},
	AgentOps: []string{proto.EventShellOpen, proto.EventShellClose},
}
