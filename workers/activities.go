package workers

import (
	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/agentgateway"
	"github.com/cairn-rmm/cairn/internal/agentupdates"
	"github.com/cairn-rmm/cairn/internal/auth"
	"github.com/cairn-rmm/cairn/internal/automation"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
	"github.com/cairn-rmm/cairn/internal/enrollment"
	"github.com/cairn-rmm/cairn/internal/events"
	"github.com/cairn-rmm/cairn/internal/flows"
	"github.com/cairn-rmm/cairn/internal/grants"
	"github.com/cairn-rmm/cairn/internal/scheduledjobs"
	"github.com/cairn-rmm/cairn/internal/shells"
	"github.com/cairn-rmm/cairn/internal/transfers"
)

// ActivityDeps are what the Engine's activities need.
type ActivityDeps struct {
	Store      *db.Store
	Auth       *auth.Service
	Enrollment *enrollment.Service
	Gateway    *agentgateway.Hub
	Devices    *devices.Service
	DPoP       *devicetrust.Verifier
	Tokens     *devicetrust.Tokens
	Presence   *events.Presence
	Bus        *events.Bus
	Shells     *shells.Service
	Updates    *agentupdates.Service
	// UpdateStarter starts the updates of agent_maintenance jobs.
	UpdateStarter activities.UpdateStarter
	// ScheduledJobs and Slots fire scheduled jobs; JobRuns creates their runs.
	ScheduledJobs *scheduledjobs.Service
	Slots         *scheduledjobs.Slots
	JobRuns       scheduledjobs.RunCreator
	Flows         *flows.Service
	Automation    *automation.Service
	Transfers     *transfers.Service
	Grants        *grants.Service
	// JobSchedules reconciles scheduled jobs' Temporal Schedules (the
	// Engine).
	JobSchedules activities.JobScheduleReconciler
}

// Activities lists every activity struct with its dependencies; each
// worker of a process registers them all. A capability adds one line.
func Activities(d ActivityDeps) []any {
	return []any{
		&activities.Enrollment{Service: d.Enrollment},
		&activities.Maintenance{Sessions: d.Auth, RateLimits: d.Store, DPoP: d.DPoP, RefreshTokens: d.Tokens, Presence: d.Presence,
			AgentRequests: d.Store, Shells: d.Shells, Transfers: d.Transfers, JobSchedules: d.JobSchedules},
		&activities.DeviceTrust{Sockets: d.Gateway, Activity: d.Devices, Events: d.Bus},
		&activities.AgentCommands{Gateway: d.Gateway, Devices: d.Devices, Grants: d.Grants},
		&activities.Operations{Devices: d.Devices},
		&activities.AgentUpdates{Updates: d.Updates},
		&activities.ScheduledJobs{Jobs: d.ScheduledJobs, Slots: d.Slots, Runs: d.JobRuns, Flows: d.Flows,
			Updates: d.Updates, UpdateStarter: d.UpdateStarter},
		&activities.JobRuns{Runs: d.Automation, Gateway: d.Gateway, Devices: d.Devices},
		&activities.FileTransfers{Transfers: d.Transfers},
	}
}
