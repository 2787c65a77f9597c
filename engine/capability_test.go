package engine

import (
	"reflect"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/api"
)

// The capability list is the one place the Engine's parts are listed:
// these checks keep its declarations consistent, since nothing else lists
// them by hand to catch a slip.
func TestCapabilitiesAreConsistent(t *testing.T) {
	t.Parallel()
	names := map[string]bool{}
	for _, c := range Capabilities {
		require.NotEmpty(t, c.Name)
		require.False(t, names[c.Name], "capability %s declared twice", c.Name)
		names[c.Name] = true
		require.True(t, c.API != nil || len(c.Workflows) > 0 || c.Activities != nil || len(c.Maintenance) > 0,
			"capability %s contributes nothing", c.Name)
	}

	_, err := Codes()
	require.NoError(t, err, "two capabilities declare a code differently")

	workflowNames := map[string]bool{}
	for _, wf := range Workflows() {
		name := runtime.FuncForPC(reflect.ValueOf(wf).Pointer()).Name()
		require.False(t, workflowNames[name], "workflow %s registered twice", name)
		workflowNames[name] = true
	}

	// Every maintenance job's activity is a method of an activity struct
	// some capability registers, and no two structs register one name.
	methods := map[string]string{}
	for _, a := range activitiesOf(&Engine{}) {
		typ := reflect.TypeOf(a)
		for i := range typ.NumMethod() {
			m := typ.Method(i).Name
			require.Empty(t, methods[m], "activity %s registered by %s and %s", m, methods[m], typ)
			methods[m] = typ.String()
		}
	}
	// Every request type the Engine can send an agent is some capability's,
	// and no capability names one the agent protocol does not know.
	ops := map[string]bool{}
	for _, c := range Capabilities {
		for _, op := range c.AgentOps {
			_, known := proto.EventCapability[op]
			require.True(t, known, "capability %s sends %q, which agent/proto does not know", c.Name, op)
			ops[op] = true
		}
	}
	for op := range proto.EventCapability {
		require.True(t, ops[op], "no capability declares that it sends %q", op)
	}

	jobs := map[string]bool{}
	for _, j := range MaintenanceJobs() {
		require.False(t, jobs[j.Name], "maintenance job %s declared twice", j.Name)
		jobs[j.Name] = true
		require.Positive(t, j.Every, j.Name)
		require.NotEmpty(t, methods[j.Activity], "maintenance job %s: no capability registers activity %q", j.Name, j.Activity)
	}
}

// Every capability with an area serves routes of its own beyond the core's.
func TestEveryCapabilityAreaHasRoutes(t *testing.T) {
	t.Parallel()
	core := len(api.New(api.Deps{}).Routes())
	e := &Engine{}
	for _, c := range Capabilities {
		if c.API == nil {
			continue
		}
		require.Greater(t, len(api.New(api.Deps{}, c.API(e)).Routes()), core, c.Name)
	}
}
