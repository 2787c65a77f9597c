package api_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/automation"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/runtime"
)

// User-context jobs (issue 27 item 3, SPEC agent behaviour 12). A script
// chooses run_as; current_user is signed with the rest and goes only to
// agents advertising the currentuser helper context. Others fail with
// user_context_unsupported and get nothing; a Linux agent that
// advertised it anyway still refuses, through the normal result path.
func TestUserContextJobs(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "userctx")
	plain := f.scriptAgent(t, admin, site, "userctx-linux")
	claims := f.helperScriptAgent(t, admin, site, "userctx-claims", []string{proto.HelperCurrentUser})

	// The device records what the agent advertised at connect_agent.
	for _, c := range []struct {
		a    *scriptAgent
		want []any
	}{{plain, []any{}}, {claims, []any{proto.HelperCurrentUser}}} {
		r := f.do(t, "GET", "/api/devices/"+c.a.guid, admin, nil)
		require.Equal(t, 200, r.Status, r.Raw)
		require.Equal(t, c.want, r.Body["helper_contexts"], c.a.hostname)
	}

	// An assembly carries run_as; a change of it is a new version.
	c := f.do(t, "POST", "/api/assemblies", admin, map[string]any{"name": "Whoami", "kind": "script", "language": "sh", "body": "id -un"})
	require.Equal(t, 201, c.Status, c.Raw)
	require.Equal(t, proto.RunAsSystem, c.Body["run_as"])
	id := int64(c.Body["id"].(float64))
	u := f.do(t, "PUT", "/api/assemblies/"+strconv.FormatInt(id, 10), admin, map[string]any{"name": "Whoami", "kind": "script",
		"language": "sh", "body": "id -un", "run_as": proto.RunAsCurrentUser})
	require.Equal(t, 200, u.Status, u.Raw)
	require.Equal(t, proto.RunAsCurrentUser, u.Body["run_as"])
	require.EqualValues(t, 2, u.Body["version"])

	runID := f.quickRun(t, admin, map[string]any{"device_guids": []string{plain.guid, claims.guid}, "assembly_id": id})
	run := f.finishedRun(t, admin, runID)
	require.Equal(t, proto.RunAsCurrentUser, run.Body["run_as"])
	byHost := map[string]map[string]any{}
	for _, x := range run.Body["results"].([]any) {
		m := x.(map[string]any)
		byHost[m["hostname"].(string)] = m
	}
	// Refused by the Engine: the agent never advertised the context.
	require.Equal(t, "failed", byHost["userctx-linux"]["status"])
	require.Equal(t, proto.CodeUserContextUnsupported, byHost["userctx-linux"]["error_code"])
	require.Contains(t, byHost["userctx-linux"]["error_message"], "does not advertise the currentuser helper context")
	require.Empty(t, byHost["userctx-linux"]["operation_id"], "nothing was sent to it")
	// Refused by the agent (a Linux runner): the signed payload said
	// current_user, and the refusal came back as the job's result.
	require.Equal(t, "failed", byHost["userctx-claims"]["status"])
	require.Equal(t, proto.CodeUserContextUnsupported, byHost["userctx-claims"]["error_code"])
	require.Contains(t, byHost["userctx-claims"]["error_message"], "user-context jobs are not supported on linux")

	// Ad-hoc content chooses too; system (the default) runs as before.
	runID = f.quickRun(t, admin, map[string]any{"device_guids": []string{plain.guid}, "language": "sh", "body": "echo sys", "run_as": "system"})
	res := onlyResult(t, f.finishedRun(t, admin, runID))
	require.Equal(t, "succeeded", res["status"])
	require.Equal(t, "sys\n", res["stdout"])
	runID = f.quickRun(t, admin, map[string]any{"device_guids": []string{plain.guid}, "language": "sh", "body": "echo user", "run_as": "current_user"})
	res = onlyResult(t, f.finishedRun(t, admin, runID))
	require.Equal(t, proto.CodeUserContextUnsupported, res["error_code"])
}

// helperScriptAgent is scriptAgent advertising helper contexts.
func (f *fixture) helperScriptAgent(t *testing.T, admin string, site int64, hostname string, helpers []string) *scriptAgent {
	t.Helper()
	a := f.enrolled(t, admin, site, hostname)
	a.helpers = helpers
	s := &scriptAgent{testAgent: a, trusted: a.scriptKeys}
	handlers := runtime.NewHandlers()
	require.NoError(t, automation.Register(handlers, automation.Options{Config: s.config, OutputInterval: 100 * time.Millisecond,
		TempDir: t.TempDir(), UserSession: automation.NewUserSession()}))
	s.handlers = handlers
	s.serve(t)
	return s
}
