package api

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/agentupdates"
	"github.com/cairn-rmm/cairn/internal/automation"
	"github.com/cairn-rmm/cairn/internal/devicefilters"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/flows"
	"github.com/cairn-rmm/cairn/internal/inventory"
	"github.com/cairn-rmm/cairn/internal/metadata"
	"github.com/cairn-rmm/cairn/internal/scheduledjobs"
	"github.com/cairn-rmm/cairn/internal/transfers"
)

// tagMax is the max= of the `limit` tag of t's field whose JSON name is
// field (-1: none).
func tagMax(t *testing.T, typ reflect.Type, field string) int64 {
	t.Helper()
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != field {
			continue
		}
		l, ok := parseLimit(f.Tag.Get(limitTag))
		if !ok || l.max == nil {
			return -1
		}
		return *l.max
	}
	t.Fatalf("%s has no field %q", typ, field)
	return 0
}

// The limits the document states are the domain's own constants where the
// domain exports them: a constant changed without its tag fails here.
func TestLimitTagsMatchTheDomainConstants(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		typ   reflect.Type
		field string
		want  int
	}{
		{typeOf[assemblyRequest](), "name", automation.MaxName},
		{typeOf[assemblyRequest](), "description", automation.MaxDescription},
		{typeOf[assemblyRequest](), "body", automation.MaxBody},
		{typeOf[assemblyRequest](), "parameters", automation.MaxParameters},
		{typeOf[assemblyRequest](), "timeout_seconds", automation.MaxTimeoutSeconds},
		{typeOf[quickRunRequest](), "device_guids", automation.MaxTargets},
		{typeOf[quickRunRequest](), "body", automation.MaxBody},
		{typeOf[filterRequest](), "name", devicefilters.MaxName},
		{typeOf[filterRequest](), "description", devicefilters.MaxDescription},
		{typeOf[viewRequest](), "name", devicefilters.MaxName},
		{typeOf[viewRequest](), "columns", devicefilters.MaxColumns},
		{typeOf[jobRequest](), "name", scheduledjobs.MaxName},
		{typeOf[jobRequest](), "parameters", scheduledjobs.MaxParameters},
		{typeOf[scheduledjobs.Targets](), "devices", scheduledjobs.MaxTargetDevices},
		{typeOf[scheduledjobs.Targets](), "sites", scheduledjobs.MaxTargetSites},
		{typeOf[scheduledjobs.Targets](), "filters", scheduledjobs.MaxTargetFilters},
		{typeOf[metadataLabelRequest](), "description", metadata.DescriptionMax},
		{typeOf[flowStartRequest](), "device_guids", flows.MaxDevices},
		{typeOf[flows.Input](), "name", flows.MaxName},
		{typeOf[flows.Input](), "steps", flows.MaxSteps},
		{typeOf[flows.Step](), "name", flows.MaxName},
		{typeOf[filePathsRequest](), "paths", maxFilePaths},
		{typeOf[filePathsRequest](), "destination", maxFilePathLen},
		{typeOf[fileDeleteRequest](), "paths", maxFilePaths},
		{typeOf[filePathRequest](), "path", maxFilePathLen},
		{typeOf[fileRenameRequest](), "path", maxFilePathLen},
		{typeOf[fileWriteTextRequest](), "path", maxFilePathLen},
		{typeOf[fileWriteTextRequest](), "content", proto.MaxTextBytes},
		{typeOf[fileConflictsRequest](), "destination", maxFilePathLen},
		{typeOf[fileConflictsRequest](), "names", maxFilePaths},
		{typeOf[fileDownloadRequest](), "paths", transfers.MaxPaths},
		{typeOf[maintenanceReq](), "guids", agentupdates.MaxDevices},
		{typeOf[proto.UpdateProgress](), "events", agentupdates.MaxEvents},
		{typeOf[descriptionRequest](), "description", devices.MaxDescription},
		{typeOf[proto.Inventory](), "network", inventory.MaxNetwork},
		{typeOf[proto.Inventory](), "sessions", inventory.MaxSessions},
		{typeOf[proto.Inventory](), "software", inventory.MaxSoftware},
		{typeOf[proto.Inventory](), "services", inventory.MaxServices},
		{typeOf[proto.Inventory](), "processes", inventory.MaxProcesses},
		{typeOf[proto.Inventory](), "patches", inventory.MaxPatches},
		{typeOf[proto.Hardware](), "disks", inventory.MaxDisks},
	} {
		require.Equal(t, int64(c.want), tagMax(t, c.typ, c.field), "%s.%s", c.typ, c.field)
	}
}

// checkLimits refuses what a `limit` tag bounds, naming each field as the
// client sent it, at any depth; what is within bounds passes.
func TestCheckLimits(t *testing.T) {
	t.Parallel()
	type item struct {
		Name string `json:"name" limit:"max=3"`
	}
	type body struct {
		Name  *string           `json:"name" limit:"max=5"`
		Port  int               `json:"port" limit:"min=1,max=10"`
		Items []item            `json:"items" limit:"max=2"`
		Paths []string          `json:"paths" limit:"itemmax=2"`
		Tags  map[string]string `json:"tags,omitempty" limit:"max=1"`
	}
	long, ok := "héllo!", "héllo"
	for _, c := range []struct {
		name string
		in   body
		want map[string]string
	}{
		{"within", body{Name: &ok, Port: 1, Items: []item{{"abc"}}, Paths: []string{"/é"}}, nil},
		{"absent pointer", body{Port: 10}, nil},
		{"each bound", body{Name: &long, Port: 11, Items: []item{{"abcd"}, {"a"}, {"b"}}, Paths: []string{"ok", "abc"},
			Tags: map[string]string{"a": "1", "b": "2"}},
			map[string]string{"name": "must be at most 5 characters", "port": "must be from 1 to 10",
				"items": "must have at most 2 entries", "items[0].name": "must be at most 3 characters",
				"paths[1]": "must be at most 2 characters", "tags": "must have at most 1 entries"}},
	} {
		err := checkLimits(&c.in)
		if c.want == nil {
			require.NoError(t, err, c.name)
			continue
		}
		var ce *cairn.Error
		require.ErrorAs(t, err, &ce, c.name)
		require.Equal(t, cairn.ECodeValidation, ce.Code, c.name)
		require.Equal(t, c.want, ce.Fields, c.name)
	}
}

// The document states each tag's bounds on the request schema only.
func TestLimitTagsAreInTheDocument(t *testing.T) {
	t.Parallel()
	srv := New(Deps{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, everyArea()...)
	doc, err := document(srv.routes, srv.Codes)
	require.NoError(t, err)
	site := doc.Components.Schemas["SiteCreateRequest"].Value.Properties["name"].Value
	require.NotNil(t, site.MaxLength)
	require.EqualValues(t, 100, *site.MaxLength)
	paths := doc.Components.Schemas["FilePathsRequest"].Value.Properties["paths"].Value
	require.EqualValues(t, 1000, *paths.MaxItems)
	require.EqualValues(t, 4096, *paths.Items.Value.MaxLength)
	timeout := doc.Components.Schemas["AssemblyRequest"].Value.Properties["timeout_seconds"].Value
	require.EqualValues(t, 0, *timeout.Min)
	require.EqualValues(t, automation.MaxTimeoutSeconds, *timeout.Max)
	require.Equal(t, "int64", timeout.Format)
	// A response is not held to a request's bounds.
	require.Nil(t, doc.Components.Schemas["Site"].Value.Properties["name"].Value.MaxLength)
}

// A path parameter beyond maxPathParam is refused naming it, before the
// handler runs; the document states the bound on every path parameter.
func TestPathParamLimit(t *testing.T) {
	t.Parallel()
	srv := New(Deps{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, everyArea()...)
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/api/agent/install/download/"+strings.Repeat("é", maxPathParam+1), nil))
	require.Equal(t, http.StatusBadRequest, rec.Code, rec.Body.String())
	var body struct {
		Error  string            `json:"error"`
		Fields map[string]string `json:"fields"`
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
	require.Equal(t, cairn.ECodeValidation, body.Error)
	require.Contains(t, body.Fields, "platform")

	doc, err := document(srv.routes, srv.Codes)
	require.NoError(t, err)
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for _, p := range op.Parameters {
				if p.Value.In == "path" {
					require.NotNil(t, p.Value.Schema.Value.MaxLength, "%s %s %s", method, path, p.Value.Name)
					require.EqualValues(t, maxPathParam, *p.Value.Schema.Value.MaxLength)
				}
			}
		}
	}
}

// decodeJSON, which every JSON route reads its body with, holds the body
// to its type's limit tags.
func TestDecodeJSONChecksLimits(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, body string
		want       map[string]string
	}{
		{"within", `{"paths":["/a"],"destination":"/b"}`, nil},
		{"too many", `{"paths":[` + strings.TrimSuffix(strings.Repeat(`"/a",`, maxFilePaths+1), ",") + `],"destination":"/b"}`,
			map[string]string{"paths": "must have at most 1000 entries"}},
		{"too long", `{"paths":["/` + strings.Repeat("é", maxFilePathLen) + `"],"destination":"/b"}`,
			map[string]string{"paths[0]": "must be at most 4096 characters"}},
	} {
		r := httptest.NewRequest("POST", "/", strings.NewReader(c.body))
		var req filePathsRequest
		err := decodeJSON(httptest.NewRecorder(), r, &req, false)
		if c.want == nil {
			require.NoError(t, err, c.name)
			continue
		}
		var ce *cairn.Error
		require.ErrorAs(t, err, &ce, c.name)
		require.Equal(t, c.want, ce.Fields, c.name)
	}
}

// everyArea is every capability's area without services (engine's
// capability list declares them; this package's tests cannot import it).
func everyArea() []Area {
	return []Area{FilesArea, RegistryArea, OperationsArea, DevicesArea, ScriptSignArea, AutomationArea, ScheduledJobsArea,
		SoftwareArea, DeviceFiltersArea, MetadataArea, PasskeysArea, DirectoryArea{}, CredentialsArea{}, SourceHostArea{},
		EnrollmentArea{}, DeviceTrustArea{}, FlowsArea{}, AgentUpdatesArea{}, TransfersArea{}, ShellsArea{}}
}
