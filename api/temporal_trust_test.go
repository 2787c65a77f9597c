package api_test

import (
	"context"
	"encoding/json"
	"github.com/cairn-rmm/cairn"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/grants"
	"github.com/cairn-rmm/cairn/workers"
	"github.com/cairn-rmm/cairn/workflows"
)

// Whoever reaches Temporal cannot make an agent act (issue 21 item 1): a
// DeviceOperation started straight through a Temporal client, without a
// grant from the API or with one for another request, fails
// operation_not_granted and the agent receives nothing.
func TestOperationStartedThroughTemporalReachesNoAgent(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	slug := uniqueSlug("trust")
	r := f.do(t, "POST", "/api/sites", admin, map[string]any{"name": "Trust boundary", "site_worker_slug": slug})
	require.Equal(t, 201, r.Status, r.Raw)
	site := int64(r.Body["site_id"].(float64))
	a := f.opsAgent(t, admin, site, "trust-01")
	dir := t.TempDir()
	target := devices.OperationTarget{GUID: cairn.DeviceGUID(a.guid), Hostname: "trust-01", SiteID: cairn.SiteID(site), SiteSlug: slug}
	write := func(path string) json.RawMessage {
		raw, err := json.Marshal(proto.FileRequest{Action: proto.FileActionWriteText, Path: path, Content: "* * * * * root id\n"})
		require.NoError(t, err)
		return raw
	}

	// A grant the Engine made for a harmless write, replayed for another.
	grant, err := f.engine.core.Grants.Sign(context.Background(), grants.Operation{GUID: cairn.DeviceGUID(a.guid), OperationID: "granted",
		Type: proto.EventFileManagement, Payload: write(filepath.Join(dir, "harmless"))}, time.Hour)
	require.NoError(t, err)

	for _, tc := range []struct {
		name  string
		grant string
	}{
		{"no grant", ""},
		{"a grant for another payload", grant},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			in := workflows.OperationInput{OperationID: "granted", Target: target, Type: proto.EventFileManagement,
				Payload: write(path), Kind: "file_write", Summary: "write a cron entry", Grant: tc.grant}
			// The raw client an attacker would hold: no codec, no grant key.
			run, err := temporalClient.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{
				ID: "attack:" + uniqueSlug("op"), TaskQueue: workflows.SiteTaskQueue(slug)}, workflows.DeviceOperation, in)
			require.NoError(t, err)
			err = run.Get(context.Background(), nil)
			var app *temporal.ApplicationError
			require.ErrorAs(t, err, &app)
			require.Equal(t, grants.ECodeNotGranted, app.Type())
			require.NoFileExists(t, path)
			require.Zero(t, a.count(proto.EventFileManagement), "the agent received the request")
		})
	}

	// The same request through the API, which grants it, goes out.
	path := filepath.Join(dir, "through-the-api")
	r = f.do(t, "POST", "/api/device/files/trust-01/text", admin, map[string]any{"path": path, "content": "hello\n"})
	require.Equal(t, 200, r.Status, r.Raw)
	require.FileExists(t, path)
	require.Equal(t, 1, a.count(proto.EventFileManagement))
}

// Histories hold ciphertext; an administrator's session reads them through
// the codec server, nobody else does (issue 21 item 1).
func TestHistoriesAreSealedAndTheCodecServerIsAdminsOnly(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	slug := uniqueSlug("codec")
	r := f.do(t, "POST", "/api/sites", admin, map[string]any{"name": "Codec", "site_worker_slug": slug})
	require.Equal(t, 201, r.Status, r.Raw)
	site := int64(r.Body["site_id"].(float64))
	a := f.opsAgent(t, admin, site, "codec-01")
	const marker = "sealed-content-7f3a"
	path := filepath.Join(t.TempDir(), "note.txt")
	r = f.do(t, "POST", "/api/device/files/codec-01/text", admin, map[string]any{"path": path, "content": marker})
	require.Equal(t, 200, r.Status, r.Raw)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, marker, string(b))

	// The operation's history, as the Temporal UI or CLI reads it.
	ctx := context.Background()
	var wfID string
	require.Eventually(t, func() bool {
		list, err := temporalClient.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: "DeviceGUID = '" + a.guid + "' AND JobKind = 'file_write'"})
		if err != nil || len(list.Executions) == 0 {
			return false
		}
		wfID = list.Executions[0].Execution.WorkflowId
		return true
	}, time.Minute, 100*time.Millisecond)
	var sealed []*commonpb.Payload
	iter := temporalClient.GetWorkflowHistory(ctx, wfID, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(t, err)
		raw, err := protojson.Marshal(ev)
		require.NoError(t, err)
		require.NotContains(t, string(raw), marker)
		require.NotContains(t, string(raw), path, "the request's path is in the history in plaintext")
		if in := ev.GetActivityTaskScheduledEventAttributes().GetInput(); in != nil {
			sealed = append(sealed, in.Payloads...)
		}
	}
	require.NotEmpty(t, sealed)
	for _, p := range sealed {
		require.Equal(t, workers.EncodingEncrypted, string(p.Metadata["encoding"]))
	}

	body, err := protojson.Marshal(&commonpb.Payloads{Payloads: sealed})
	require.NoError(t, err)
	decode := func(token string) response {
		return f.do(t, "POST", "/api/temporal/codec/decode", token, string(body))
	}
	res := decode(admin)
	require.Equal(t, 200, res.Status, res.Raw)
	var opened commonpb.Payloads
	require.NoError(t, protojson.Unmarshal([]byte(res.Raw), &opened))
	require.Len(t, opened.Payloads, len(sealed))
	var requests strings.Builder
	for _, p := range opened.Payloads {
		require.Equal(t, "json/plain", string(p.Metadata["encoding"]))
		var in struct{ Payload []byte }
		require.NoError(t, json.Unmarshal(p.Data, &in))
		requests.Write(in.Payload)
	}
	require.Contains(t, requests.String(), path)
	require.Contains(t, requests.String(), marker)

	require.Equal(t, 403, decode(f.operator(t, "codec-operator")).Status)
	require.Equal(t, 401, decode("").Status)
	apiToken, _ := f.newAPIToken(t, admin, "write", 30)
	res = decode(apiToken)
	require.Equal(t, 403, res.Status, res.Raw)
	require.Equal(t, "forbidden", res.Body["error"])
}
