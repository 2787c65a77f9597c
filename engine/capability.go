package engine

import (
	"context"

	"go.temporal.io/sdk/client"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/api"
	"github.com/cairn-rmm/cairn/workflows"
)

// Capability is one thing the Engine does (file transfers, quick runs,
// agent updates, …), declared in one place it owns: its
// engine/capability_<name>.go. The Engine constructor goes through
// Capabilities; the API's routes and error statuses, the agent gateway's
// allow-list of agent codes, every worker's workflows and activities and
// the maintenance Schedules are read from the declarations, never listed
// by hand elsewhere. docs/architecture.md "Capabilities" walks through
// adding one.
type Capability struct {
	// Name is the capability's one name, which its internal/ package,
	// route file, workflow, activity and query files share.
	Name string
	// Codes are the error codes its domain and routes answer with: HTTP
	// status, retryability, whether an agent may return them.
	Codes []cairn.Code
	// Wire builds the services only this capability uses, over the
	// Engine's shared ones, and keeps them on the Engine (nil: nothing).
	Wire func(ctx context.Context, e *Engine) error
	// API is its route area over those services (nil: no routes).
	API func(e *Engine) api.Area
	// Workflows are its workflow functions; every worker registers them.
	Workflows []any
	// Activities are its activity structs over its services (nil: none).
	Activities func(e *Engine) []any
	// Maintenance are its periodic jobs: each gets a Temporal Schedule,
	// maintenance:<name>, that runs the Maintenance workflow with it.
	Maintenance []workflows.MaintenanceJob
	// AgentOps are the request types it sends to agents (agent/proto);
	// together they are every type proto.EventCapability knows (a test
	// keeps them so). Files and transfers share file_management_request.
	AgentOps []string
}

// Capabilities are every capability of the Engine, in wiring order (a
// capability's Wire may use the services of those before it). Adding a
// capability: its file, and one line here.
var Capabilities = []Capability{
	coreCapability,
	directoryCapability,
	passkeysCapability,
	credentialsCapability,
	sourceHostCapability,
	enrollmentCapability,
	onboardingCapability,
	deviceTrustCapability,
	devicesCapability,
	operationsCapability,
	filesCapability,
	registryCapability,
	shellsCapability,
	rolesCapability,
	scriptSignCapability,
	agentUpdatesCapability,
	automationCapability,
	scheduledJobsCapability,
	flowsCapability,
	softwareCapability,
	deviceFiltersCapability,
	metadataCapability,
	transfersCapability,
	backupCapability,
	serverAdminCapability,
	clusterCapability,
	watchdogsCapability,
	patchesCapability,
	tunnelsCapability,
	vncCapability,
	rdpCapability,
}

// Codes gathers every capability's error codes into one book.
func Codes() (*cairn.CodeBook, error) {
	decls := make([][]cairn.Code, 0, len(Capabilities))
	for _, c := range Capabilities {
		decls = append(decls, c.Codes)
	}
	return cairn.NewCodeBook(decls...)
}

// Workflows are every capability's workflow functions.
func Workflows() []any {
	var out []any
	for _, c := range Capabilities {
		out = append(out, c.Workflows...)
	}
	return out
}

// MaintenanceJobs are every capability's periodic jobs.
func MaintenanceJobs() []workflows.MaintenanceJob {
	var out []workflows.MaintenanceJob
	for _, c := range Capabilities {
		out = append(out, c.Maintenance...)
	}
	return out
}

// areas are the route areas of every capability over e's services.
func areas(e *Engine) []api.Area {
	var out []api.Area
	for _, c := range Capabilities {
		if c.API != nil {
			out = append(out, c.API(e))
		}
	}
	return out
}

// activitiesOf are every capability's activity structs over e's services.
func activitiesOf(e *Engine) []any {
	var out []any
	for _, c := range Capabilities {
		if c.Activities != nil {
			out = append(out, c.Activities(e)...)
		}
	}
	return out
}

// DocumentJSON is the API document of every capability's routes, as
// committed in docs/openapi.json (scripts/openapi writes it).
func DocumentJSON() ([]byte, error) {
	book, err := Codes()
	if err != nil {
		return nil, err
	}
	return api.DocumentJSON(book, areas(&Engine{})...)
}

// AreasForTest are the route areas over an Engine without services, for
// tests that build an api.Server of their own.
func AreasForTest() []api.Area { return areas(&Engine{}) }

// client is the Temporal client capabilities start and reach workflows
// with: the gated one, which fails fast while Temporal is away (nil before
// New made it, as for the API document).
func (e *Engine) client() client.Client {
	if e.gate == nil {
		return nil
	}
	return e.gate
}
