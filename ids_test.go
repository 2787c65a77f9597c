package cairn_test

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/agentupdates"
	"github.com/cairn-rmm/cairn/internal/automation"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/scheduledjobs"
	"github.com/cairn-rmm/cairn/internal/sites"
	"github.com/cairn-rmm/cairn/workflows"
)

// Identifiers that travel together have distinct types (ids.go), from the
// column (sqlc.yaml overrides) through the services' methods and the
// workflow inputs, so an argument swap does not compile. This keeps the
// overrides and the signatures from drifting back to plain strings.
func TestIdentifiersAreTyped(t *testing.T) {
	t.Parallel()
	var (
		guid = reflect.TypeFor[cairn.DeviceGUID]()
		site = reflect.TypeFor[cairn.SiteID]()
		op   = reflect.TypeFor[cairn.OperationID]()
		run  = reflect.TypeFor[cairn.RunID]()
	)
	fields := []struct {
		row   reflect.Type
		field string
		want  reflect.Type
	}{
		{reflect.TypeFor[db.Device](), "Guid", guid},
		{reflect.TypeFor[db.Device](), "SiteID", site},
		{reflect.TypeFor[db.Site](), "ID", site},
		{reflect.TypeFor[db.DeviceInventory](), "DeviceGuid", guid},
		{reflect.TypeFor[db.FileTransfer](), "DeviceGuid", guid},
		{reflect.TypeFor[db.FileTransfer](), "SiteID", site},
		{reflect.TypeFor[db.JobRun](), "ID", run},
		{reflect.TypeFor[db.JobRunResult](), "RunID", run},
		{reflect.TypeFor[db.JobRunResult](), "DeviceGuid", guid},
		{reflect.TypeFor[db.JobRunResult](), "OperationID", op},
		{reflect.TypeFor[db.AgentRequest](), "OperationID", op},
		{reflect.TypeFor[db.AgentUpdateOperation](), "ID", op},
		{reflect.TypeFor[db.AutomationWorkflowRun](), "ID", run},
		{reflect.TypeFor[db.UserSiteAssignment](), "SiteID", site},
		{reflect.TypeFor[devices.OperationTarget](), "GUID", guid},
		{reflect.TypeFor[devices.OperationTarget](), "SiteID", site},
		{reflect.TypeFor[sites.Site](), "ID", site},
		{reflect.TypeFor[workflows.OperationInput](), "OperationID", op},
		{reflect.TypeFor[workflows.JobRunInput](), "RunID", run},
	}
	for _, f := range fields {
		sf, ok := f.row.FieldByName(f.field)
		require.True(t, ok, "%s.%s", f.row, f.field)
		ft := sf.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		require.Equal(t, f.want, ft, "%s.%s", f.row, f.field)
	}

	methods := []struct {
		svc    reflect.Type
		method string
		takes  []reflect.Type
	}{
		{reflect.TypeFor[*devices.Service](), "Get", []reflect.Type{guid}},
		{reflect.TypeFor[*devices.Service](), "OperationTargetByGUID", []reflect.Type{guid}},
		{reflect.TypeFor[*automation.Service](), "Dispatch", []reflect.Type{run, guid, op}},
		{reflect.TypeFor[*automation.Service](), "NextItems", []reflect.Type{run}},
		{reflect.TypeFor[*agentupdates.Service](), "Begin", []reflect.Type{op}},
		{reflect.TypeFor[*agentupdates.Service](), "History", []reflect.Type{guid, op}},
		{reflect.TypeFor[*scheduledjobs.Service](), "RunStatus", []reflect.Type{run}},
		{reflect.TypeFor[*sites.Service](), "Get", []reflect.Type{site}},
	}
	for _, m := range methods {
		mt, ok := m.svc.MethodByName(m.method)
		require.True(t, ok, "%s.%s", m.svc, m.method)
		var in []reflect.Type
		for i := range mt.Type.NumIn() {
			switch p := mt.Type.In(i); p {
			case guid, site, op, run:
				in = append(in, p)
			}
		}
		require.Equal(t, m.takes, in, "%s.%s takes its identifiers typed, in this order", m.svc, m.method)
	}
}
