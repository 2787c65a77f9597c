package engine

import (
	"context"
	"net/http"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/api"
	"github.com/cairn-rmm/cairn/internal/automation"
	"github.com/cairn-rmm/cairn/internal/watchdogs"
	"github.com/cairn-rmm/cairn/workflowclient"
	"github.com/cairn-rmm/cairn/workflows"
)

// watchdogsCapability is monitoring (issue 25): watchdog policies
// evaluated against device data in PostgreSQL, incidents with an alert
// queue, device overrides; a save evaluates at once (WatchdogEvaluate),
// the watchdogs maintenance job evaluates what is due, and each opened
// incident's WatchdogIncident workflow runs its actions once.
var watchdogsCapability = Capability{
	Name: "watchdogs",
	Codes: []cairn.Code{
		{ID: watchdogs.ECodeIncidentState, Status: http.StatusConflict},
		// A notification channel's receiver refused a delivery for good
		// (recorded on the delivery, never an API answer of its own).
		{ID: watchdogs.ECodeDeliveryRefused, Status: http.StatusBadGateway},
	},
	Wire: func(_ context.Context, e *Engine) error {
		e.Watchdogs = watchdogs.New(e.Store, e.Filters, e.Bus, watchdogs.Config{OnlineWindow: e.Devices.OnlineWindow(),
			Log: e.Log.With("component", "watchdogs"), Assemblies: watchdogAssemblies{e.Automation}, Cipher: e.Cipher})
		return nil
	},
	API: func(e *Engine) api.Area {
		return api.WatchdogsArea{Watchdogs: e.Watchdogs, Starter: e.watchdogStarter()}
	},
	Workflows: []any{workflows.WatchdogEvaluate, workflows.WatchdogIncident},
	Activities: func(e *Engine) []any {
		w := &activities.Watchdogs{Svc: e.Watchdogs, Incidents: e.watchdogStarter(), Devices: e.Devices, Grants: e.Grants,
			Runs: e.Automation, Log: e.Log}
		return []any{w, &activities.WatchdogMaintenance{Due: activities.WatchdogDue{W: w}}}
	},
	Maintenance: []workflows.MaintenanceJob{
		// Every enabled watchdog whose evaluation interval has passed, in
		// batches; incidents whose workflow never started are started.
		{Name: workflows.JobWatchdogs, Every: time.Minute, Activity: "EvaluateDueWatchdogs"},
	},
}

// watchdogStarter starts watchdog evaluations and incident workflows on
// the Engine queue. Their IDs are incident:<id> and the like; an Engine on
// a queue of its own (tests sharing one Temporal server, one database
// each) prefixes them with its queue, since incident IDs repeat across
// databases.
func (e *Engine) watchdogStarter() workflowclient.WatchdogStarter {
	prefix := ""
	if e.cfg.EngineQueue != "" && e.cfg.EngineQueue != workflows.EngineTaskQueue {
		prefix = e.cfg.EngineQueue + "/"
	}
	return workflowclient.WatchdogStarter{Client: e.client(), TaskQueue: e.cfg.EngineQueue, Prefix: prefix, Watchdogs: e.Watchdogs}
}

// watchdogAssemblies checks a run_assembly action's assembly at save.
type watchdogAssemblies struct{ a *automation.Service }

func (w watchdogAssemblies) ScriptSHA256(ctx context.Context, id int64, version int) (string, error) {
	asm, err := w.a.GetAssembly(ctx, id, version)
	if err != nil {
		return "", err
	}
	if asm.Kind != automation.KindScript {
		return "", cairn.Invalid("assembly_id", "is not a script")
	}
	return asm.BodySHA256, nil
}
