package workers

import (
	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/internal/agentgateway"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/enrollment"
)

// ActivityDeps are what the Engine's activities need.
type ActivityDeps struct {
	Enrollment *enrollment.Service
	Gateway    *agentgateway.Hub
	Devices    *devices.Service
}

// Activities lists every activity struct with its dependencies; each
// worker of a process registers them all. A capability adds one line.
func Activities(d ActivityDeps) []any {
	return []any{
		&activities.Enrollment{Service: d.Enrollment},
		&activities.AgentCommands{Gateway: d.Gateway, Devices: d.Devices},
		&activities.Operations{Devices: d.Devices},
	}
}
