package api_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/automation"
	"github.com/cairn-rmm/cairn/internal/metadata"
)

// heartbeat sends a heartbeat with metadata writes and the agent's revision.
func (a *testAgent) heartbeat(t *testing.T, rev int64, writes ...proto.MetadataWrite) proto.HeartbeatResponse {
	t.Helper()
	r := a.device(t, "POST", proto.PathHeartbeat, proto.Heartbeat{SentAt: a.f.clk.Now().UTC(), AgentVersion: "1.0.0",
		BootID: "boot", MetadataFields: writes, MetadataRevision: rev})
	require.Equal(t, 200, r.Status, r.Raw)
	var resp proto.HeartbeatResponse
	require.NoError(t, json.Unmarshal([]byte(r.Raw), &resp))
	return resp
}

// metadataValue is field n of a device as GET /api/devices/<guid>/metadata_fields shows it.
func (f *fixture) metadataValue(t *testing.T, token, guid string, n int) map[string]any {
	t.Helper()
	r := f.do(t, "GET", "/api/devices/"+guid+"/metadata_fields", token, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	fields := r.Body["fields"].([]any)
	require.Len(t, fields, 500)
	row := fields[n-1].(map[string]any)
	require.EqualValues(t, n, row["field_number"])
	return row
}

func TestMetadataDefinitions(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)

	r := f.do(t, "GET", "/api/metadata_fields", admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.EqualValues(t, 1024, r.Body["value_max_length"])
	fields := r.Body["fields"].([]any)
	require.Len(t, fields, 500)
	row := func(n int) map[string]any { return fields[n-1].(map[string]any) }
	for n, want := range map[int]string{1: "Server Roles", 2: "Bitlocker Drive Encryption", 3: "Reserved", 10: "Reserved"} {
		require.Equal(t, want, row(n)["description"], n)
		require.Equal(t, true, row(n)["reserved"], n)
		require.Nil(t, row(n)["updated_at"])
	}
	require.Nil(t, row(3)["linked_assembly_id"])
	require.Equal(t, false, row(11)["reserved"])
	require.Equal(t, "", row(11)["description"])
	require.Nil(t, row(11)["updated_at"])
	require.EqualValues(t, 500, row(500)["field_number"])

	// Fields 1 and 2 link to bundled PowerShell assemblies that write the
	// field with the agent's command line; bundled assemblies cannot be deleted.
	for n, field := range map[int]string{1: "--metadata set 1 ", 2: "--metadata set 2 "} {
		id := row(n)["linked_assembly_id"]
		require.NotNil(t, id, n)
		a := f.do(t, "GET", fmt.Sprintf("/api/assemblies/%v", id), admin, nil)
		require.Equal(t, 200, a.Status, a.Raw)
		require.Equal(t, "script", a.Body["kind"])
		require.Equal(t, "powershell", a.Body["language"])
		require.Equal(t, true, a.Body["bundled"])
		require.Contains(t, a.Body["body"], field)
		require.Contains(t, a.Body["body"], "$env:CAIRN_AGENT_BIN")
		d := f.do(t, "DELETE", fmt.Sprintf("/api/assemblies/%v", id), admin, nil)
		require.Equal(t, 409, d.Status, d.Raw)
		require.Equal(t, "bundled_read_only", d.Body["error"])
		require.Equal(t, 200, f.do(t, "GET", fmt.Sprintf("/api/assemblies/%v", id), admin, nil).Status)
	}
	list := f.do(t, "GET", "/api/assemblies", admin, nil)
	require.Equal(t, 2, strings.Count(list.Raw, `"bundled":true`), list.Raw)

	// Renames: Admin only, reserved numbers refused, bounds checked.
	ok := f.do(t, "PUT", "/api/metadata_fields/11", admin, map[string]any{"description": "  Asset tag  "})
	require.Equal(t, 200, ok.Status, ok.Raw)
	require.Equal(t, "Asset tag", ok.Body["description"])
	require.Equal(t, "admin", ok.Body["updated_by"])
	require.NotNil(t, ok.Body["updated_at"])
	for _, n := range []int{1, 2, 7, 10} {
		res := f.do(t, "PUT", fmt.Sprintf("/api/metadata_fields/%d", n), admin, map[string]any{"description": "Mine"})
		require.Equal(t, 409, res.Status, res.Raw)
		require.Equal(t, "reserved_metadata_field", res.Body["error"])
	}
	for path, body := range map[string]any{
		"/api/metadata_fields/0":   map[string]any{"description": "x"},
		"/api/metadata_fields/501": map[string]any{"description": "x"},
		"/api/metadata_fields/abc": map[string]any{"description": "x"},
		"/api/metadata_fields/12":  map[string]any{"description": strings.Repeat("x", 121)},
		"/api/metadata_fields/13":  map[string]any{"description": "two\nlines"},
		"/api/metadata_fields/14":  map[string]any{},
	} {
		res := f.do(t, "PUT", path, admin, body)
		require.Equal(t, 400, res.Status, "%s: %s", path, res.Raw)
		require.Equal(t, "validation_failed", res.Body["error"])
	}
	op := f.operator(t, "meta-op")
	require.Equal(t, 403, f.do(t, "PUT", "/api/metadata_fields/15", op, map[string]any{"description": "x"}).Status)
	require.Equal(t, 200, f.do(t, "GET", "/api/metadata_fields", op, nil).Status, "operators read definitions")

	// A description stored for a reserved number (an import) is ignored.
	_, err := f.store.MetadataDefinitionUpsert(context.Background(), db.MetadataDefinitionUpsertParams{FieldNumber: 2,
		Description: "Hijacked", UpdatedAt: time.Now(), UpdatedBy: "import"})
	require.NoError(t, err)
	after := f.do(t, "GET", "/api/metadata_fields", admin, nil).Body["fields"].([]any)
	require.Equal(t, "Bitlocker Drive Encryption", after[1].(map[string]any)["description"])
	require.Equal(t, "", after[1].(map[string]any)["updated_by"])
	require.Equal(t, "Asset tag", after[10].(map[string]any)["description"])
	require.Equal(t, "admin", after[10].(map[string]any)["updated_by"])
}

// Seeding the bundle again changes nothing; a release with a new body adds
// a version of the same assembly.
func TestBundledAssembliesSeedIdempotently(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	svc := f.engine.core.Automation
	first, err := svc.EnsureBundled(ctx, metadata.BundledAssemblies())
	require.NoError(t, err)
	require.Len(t, first, 2)
	again, err := svc.EnsureBundled(ctx, metadata.BundledAssemblies())
	require.NoError(t, err)
	require.Equal(t, first, again)
	id := first[metadata.BundledServerRoles]
	versions, err := svc.ListVersions(ctx, id)
	require.NoError(t, err)
	require.Len(t, versions, 1)

	next := metadata.BundledAssemblies()
	next[0].Input.Body += "\n# a later release\n"
	ids, err := svc.EnsureBundled(ctx, next)
	require.NoError(t, err)
	require.Equal(t, id, ids[metadata.BundledServerRoles])
	a, err := svc.GetAssembly(ctx, id, 0)
	require.NoError(t, err)
	require.Equal(t, 2, a.Version)
	require.Equal(t, next[0].Input.Body, a.Body)
	require.Equal(t, automation.BundledActor, a.UpdatedBy)
	old, err := svc.GetAssembly(ctx, id, 1)
	require.NoError(t, err)
	require.Equal(t, metadata.BundledAssemblies()[0].Input.Body, old.Body, "version 1 stays as it ran")
	_, err = svc.EnsureBundled(ctx, next)
	require.NoError(t, err)
	versions, err = svc.ListVersions(ctx, id)
	require.NoError(t, err)
	require.Len(t, versions, 2, "the same release again adds nothing")

	// An edit made while bundled assemblies were still writable (an
	// operator's, before this release) is replaced by the shipped body.
	require.NoError(t, f.store.AssemblyVersionInsert(ctx, db.AssemblyVersionInsertParams{AssemblyID: id, Version: 3,
		Language: "powershell", Body: "Write-Output hijacked", Parameters: []byte(`[]`), TimeoutSeconds: 60,
		BodySha256: []byte("not the shipped body's hash..."), Actor: "operator"}))
	require.NoError(t, f.store.AssemblyUpdate(ctx, db.AssemblyUpdateParams{ID: id, Name: a.Name, Kind: a.Kind, Language: "powershell",
		Description: a.Description, CurrentVersion: 3, Actor: "operator"}))
	_, err = svc.EnsureBundled(ctx, next)
	require.NoError(t, err)
	a, err = svc.GetAssembly(ctx, id, 0)
	require.NoError(t, err)
	require.Equal(t, 4, a.Version)
	require.Equal(t, next[0].Input.Body, a.Body, "the shipped body is current again")
}

func TestMetadataDeviceValues(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "meta")
	other := f.createSite(t, admin, "elsewhere")
	a := f.enrolled(t, admin, site, "meta-01")
	put := func(token string, n int, value any) response {
		return f.do(t, "PUT", fmt.Sprintf("/api/devices/%s/metadata_fields/%d", a.guid, n), token, map[string]any{"value": value})
	}

	empty := f.metadataValue(t, admin, a.guid, 20)
	require.Equal(t, "", empty["value"])
	require.Nil(t, empty["modified_at"])
	require.Equal(t, "", empty["source"])
	require.Equal(t, "Server Roles", f.metadataValue(t, admin, a.guid, 1)["description"])

	r := put(admin, 20, "Rack 4, shelf 2")
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, "Rack 4, shelf 2", r.Body["value"])
	require.Equal(t, "operator:admin", r.Body["source"])
	at, err := time.Parse(time.RFC3339Nano, r.Body["modified_at"].(string))
	require.NoError(t, err)
	require.True(t, at.Equal(f.clk.Now()), "operator writes use the Engine's now")
	require.Equal(t, "Rack 4, shelf 2", f.metadataValue(t, admin, a.guid, 20)["value"])

	// Stored base64; the device list carries the sparse decoded values.
	var b64 string
	require.NoError(t, f.store.Pool.QueryRow(context.Background(),
		"SELECT value_b64 FROM device_metadata_values WHERE device_guid = $1 AND field_number = 20", a.guid).Scan(&b64))
	require.Equal(t, base64.StdEncoding.EncodeToString([]byte("Rack 4, shelf 2")), b64)
	require.Equal(t, 200, put(admin, 1, "Web Server (IIS)").Status, "reserved fields' values stay editable")
	list := f.do(t, "GET", "/api/devices", admin, nil)
	require.Equal(t, 200, list.Status)
	dev := list.Body["devices"].([]any)[0].(map[string]any)
	require.Equal(t, map[string]any{"1": "Web Server (IIS)", "20": "Rack 4, shelf 2"}, dev["metadata_fields"])

	// Bounds: characters, not bytes; control characters; field numbers.
	require.Equal(t, 200, put(admin, 21, strings.Repeat("é", 1024)).Status)
	require.Equal(t, 200, put(admin, 22, "line 1\n\tline 2").Status)
	for _, bad := range []response{put(admin, 21, strings.Repeat("a", 1025)), put(admin, 22, "bell\x07"), put(admin, 0, "x"),
		put(admin, 501, "x"), put(admin, 20, nil)} {
		require.Equal(t, 400, bad.Status, bad.Raw)
		require.Equal(t, "validation_failed", bad.Body["error"])
	}
	require.Equal(t, strings.Repeat("é", 1024), f.metadataValue(t, admin, a.guid, 21)["value"])

	// Blank clears: the row keeps who cleared it and when; the list drops it.
	f.clk.Advance(time.Second)
	c := put(admin, 20, "   ")
	require.Equal(t, 200, c.Status, c.Raw)
	require.Equal(t, "", c.Body["value"])
	cleared := f.metadataValue(t, admin, a.guid, 20)
	require.Equal(t, "", cleared["value"])
	require.Equal(t, "operator:admin", cleared["source"])
	require.NotNil(t, cleared["modified_at"])
	dev = f.do(t, "GET", "/api/devices", admin, nil).Body["devices"].([]any)[0].(map[string]any)
	require.NotContains(t, dev["metadata_fields"], "20")

	// Each operator write is in the device's activity history.
	act := f.do(t, "GET", "/api/device/activity/meta-01", admin, nil)
	require.Equal(t, 200, act.Status)
	require.Contains(t, act.Raw, "Metadata field 20 cleared")
	require.Contains(t, act.Raw, "metadata_field_changed")

	// Scope: another site's operator sees nothing and changes nothing.
	outsider := f.scopedOperatorOf(t, admin, "meta-outsider", other)
	require.Equal(t, 404, f.do(t, "GET", "/api/devices/"+a.guid+"/metadata_fields", outsider, nil).Status)
	require.Equal(t, 404, put(outsider, 23, "x").Status)
	require.Equal(t, 404, f.do(t, "GET", "/api/devices/no-such-guid/metadata_fields", admin, nil).Status)
	insider := f.scopedOperatorOf(t, admin, "meta-insider", site)
	ins := put(insider, 23, "by a site operator")
	require.Equal(t, 200, ins.Status, ins.Raw)
	require.Equal(t, "operator:meta-insider", ins.Body["source"])
}

// Agent sync through the heartbeat: acks, the conflict and clamping rules,
// refused values, and operator edits reaching the agent by revision.
func TestMetadataAgentSync(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "msync")
	a := f.enrolled(t, admin, site, "msync-01")
	now := f.clk.Now().UTC()
	ctx := context.Background()

	// Nothing to do: no acks, no revision.
	resp := a.heartbeat(t, 0)
	require.Empty(t, resp.MetadataFieldAcks)
	require.Zero(t, resp.MetadataRevision)
	require.Empty(t, resp.MetadataChangedFields)

	// Writes are applied and acked with the agent's modified_at; a future
	// timestamp is stored clamped to the Engine's now but acked as sent.
	past, future := now.Add(-time.Hour), now.Add(48*time.Hour)
	resp = a.heartbeat(t, 0,
		proto.MetadataWrite{FieldNumber: 30, Value: "from agent", ModifiedAt: past},
		proto.MetadataWrite{FieldNumber: 31, Value: "clock ahead", ModifiedAt: future},
		proto.MetadataWrite{FieldNumber: 32, Value: "bad\x1b", ModifiedAt: past})
	require.Len(t, resp.MetadataFieldAcks, 3)
	require.Equal(t, proto.MetadataAck{FieldNumber: 30, ModifiedAt: past}, resp.MetadataFieldAcks[0])
	require.Equal(t, proto.MetadataAck{FieldNumber: 31, ModifiedAt: future}, resp.MetadataFieldAcks[1])
	require.Equal(t, 32, resp.MetadataFieldAcks[2].FieldNumber)
	require.True(t, resp.MetadataFieldAcks[2].Superseded)
	require.Contains(t, resp.MetadataFieldAcks[2].Rejected, "control characters")
	v30 := f.metadataValue(t, admin, a.guid, 30)
	require.Equal(t, "from agent", v30["value"])
	require.Equal(t, "agent", v30["source"])
	v31 := f.metadataValue(t, admin, a.guid, 31)
	at31, err := time.Parse(time.RFC3339Nano, v31["modified_at"].(string))
	require.NoError(t, err)
	require.True(t, at31.Equal(now), "clamped to the Engine's now, got %s", at31)
	require.Equal(t, "", f.metadataValue(t, admin, a.guid, 32)["value"])

	// The same write again (its ack was lost) is accepted again.
	resp = a.heartbeat(t, 0, proto.MetadataWrite{FieldNumber: 30, Value: "from agent", ModifiedAt: past})
	require.Equal(t, []proto.MetadataAck{{FieldNumber: 30, ModifiedAt: past}}, resp.MetadataFieldAcks)

	// An operator edit is newer than the agent's older write: superseded.
	require.Equal(t, 200, f.do(t, "PUT", "/api/devices/"+a.guid+"/metadata_fields/30", admin, map[string]any{"value": "operator says"}).Status)
	resp = a.heartbeat(t, 0, proto.MetadataWrite{FieldNumber: 30, Value: "stale", ModifiedAt: past.Add(time.Minute)})
	require.Equal(t, []proto.MetadataAck{{FieldNumber: 30, ModifiedAt: past.Add(time.Minute), Superseded: true}}, resp.MetadataFieldAcks)
	require.Equal(t, "operator says", f.metadataValue(t, admin, a.guid, 30)["value"])

	// The operator edit reached this replica's cache at once: the answer
	// names the changed field and the revision to hold.
	require.Positive(t, resp.MetadataRevision)
	require.Equal(t, []int{30}, resp.MetadataChangedFields)
	rev := resp.MetadataRevision
	got := a.device(t, "GET", proto.PathAgentMetadata(30), nil)
	require.Equal(t, 200, got.Status, got.Raw)
	require.Equal(t, "operator says", got.Body["value"])
	require.Equal(t, "operator:admin", got.Body["source"])
	require.NotNil(t, got.Body["modified_at"])
	none := a.device(t, "GET", proto.PathAgentMetadata(99), nil)
	require.Equal(t, 200, none.Status)
	require.Equal(t, "", none.Body["value"])
	require.Nil(t, none.Body["modified_at"])
	require.Equal(t, 400, a.device(t, "GET", proto.PathAgentMetadataPrefix+"501", nil).Status)
	require.Equal(t, 401, f.do(t, "GET", proto.PathAgentMetadata(30), admin, nil).Status, "Device auth only")

	// Caught up: nothing more.
	resp = a.heartbeat(t, rev)
	require.Zero(t, resp.MetadataRevision)
	require.Empty(t, resp.MetadataChangedFields)

	// An edit made on another replica reaches this one's answers with its
	// next heartbeat flush (until then it answers from its cache).
	replica := f.newEngine(t)
	unlock := f.call(t, replica.http.URL, "POST", "/api/bootstrap/aegis/unlock", "", map[string]any{"passphrase": passphrase})
	require.Equal(t, 200, unlock.Status, unlock.Raw)
	f.clk.Advance(time.Second)
	edit := f.call(t, replica.http.URL, "PUT", "/api/devices/"+a.guid+"/metadata_fields/33", admin, map[string]any{"value": "another"})
	require.Equal(t, 200, edit.Status, edit.Raw)
	resp = a.heartbeat(t, rev)
	require.Empty(t, resp.MetadataChangedFields, "not flushed yet")
	require.NoError(t, f.engine.devices.Flush(ctx))
	resp = a.heartbeat(t, rev)
	require.Equal(t, []int{33}, resp.MetadataChangedFields)
	require.Greater(t, resp.MetadataRevision, rev)
	resp0 := a.heartbeat(t, 0)
	require.Equal(t, []int{30, 33}, resp0.MetadataChangedFields, "an agent at revision 0 reads every operator edit")
	require.Equal(t, resp.MetadataRevision, resp0.MetadataRevision)

	// A newer agent write wins over the operator's value.
	f.clk.Advance(time.Second)
	newer := f.clk.Now().UTC()
	resp = a.heartbeat(t, resp.MetadataRevision, proto.MetadataWrite{FieldNumber: 33, Value: "agent again", ModifiedAt: newer})
	require.Equal(t, []proto.MetadataAck{{FieldNumber: 33, ModifiedAt: newer}}, resp.MetadataFieldAcks)
	require.Equal(t, "agent again", f.metadataValue(t, admin, a.guid, 33)["value"])
	// A blank agent write clears.
	f.clk.Advance(time.Second)
	resp = a.heartbeat(t, resp.MetadataRevision, proto.MetadataWrite{FieldNumber: 33, Value: " ", ModifiedAt: f.clk.Now()})
	require.Len(t, resp.MetadataFieldAcks, 1)
	require.False(t, resp.MetadataFieldAcks[0].Superseded)
	require.Equal(t, "", f.metadataValue(t, admin, a.guid, 33)["value"])
}
