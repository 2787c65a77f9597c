package api_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFlowCRUDAndValidation(t *testing.T) {
	t.Parallel()
	f := setup(t)
	fl := f.fleet(t)
	check := f.testAssembly(t, fl.admin, "check disk", "script")
	fix := f.testAssembly(t, fl.admin, "clean disk", "script")
	play := f.testAssembly(t, fl.admin, "a playbook", "ansible_playbook")

	body := map[string]any{"name": "Disk care", "description": "check, then clean when the check fails", "steps": []any{
		map[string]any{"id": "check", "name": "Check", "assembly_id": check, "parameters": map[string]any{"min_gb": 5}},
		map[string]any{"id": "clean", "name": "Clean", "assembly_id": fix, "condition": "on_failure", "timeout_seconds": 600},
	}}
	r := f.do(t, "POST", "/api/workflows", fl.admin, body)
	require.Equal(t, 201, r.Status, r.Raw)
	id := int64(r.Body["id"].(float64))
	require.Equal(t, "Disk care", r.Body["name"])
	require.Equal(t, "admin", r.Body["created_by"])
	steps := r.Body["steps"].([]any)
	require.Len(t, steps, 2)
	require.Equal(t, "always", steps[0].(map[string]any)["condition"], "the default condition")
	require.Equal(t, "on_failure", steps[1].(map[string]any)["condition"])
	require.Equal(t, map[string]any{"min_gb": float64(5)}, steps[0].(map[string]any)["parameters"])

	r = f.do(t, "POST", "/api/workflows", fl.admin, body)
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("name"), "names are unique")

	step := func(m map[string]any) map[string]any {
		b := map[string]any{"name": "x", "steps": []any{m}}
		return b
	}
	cases := []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"blank name", map[string]any{"name": " ", "steps": []any{map[string]any{"assembly_id": check}}}, "name"},
		{"no steps", map[string]any{"name": "x", "steps": []any{}}, "steps"},
		{"unknown assembly", step(map[string]any{"assembly_id": 99999}), "steps[0].assembly_id"},
		{"not a script", step(map[string]any{"assembly_id": play}), "steps[0].assembly_id"},
		{"bad condition", step(map[string]any{"assembly_id": check, "condition": "sometimes"}), "steps[0].condition"},
		{"bad step id", step(map[string]any{"assembly_id": check, "id": "no spaces"}), "steps[0].id"},
		{"bad timeout", step(map[string]any{"assembly_id": check, "timeout_seconds": 90000}), "steps[0].timeout_seconds"},
		{"duplicate step ids", map[string]any{"name": "x", "steps": []any{map[string]any{"id": "a", "assembly_id": check},
			map[string]any{"id": "a", "assembly_id": fix}}}, "steps[1].id"},
	}
	for _, c := range cases {
		r := f.do(t, "POST", "/api/workflows", fl.admin, c.body)
		require.Equal(t, 400, r.Status, "%s: %s", c.name, r.Raw)
		require.NotEmpty(t, r.field(c.field), "%s: %s", c.name, r.Raw)
	}

	body["name"] = "Disk care v2"
	r = f.do(t, "PUT", fmt.Sprintf("/api/workflows/%d", id), fl.admin, body)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, "Disk care v2", r.Body["name"])
	r = f.do(t, "GET", "/api/workflows", fl.admin, nil)
	require.Len(t, r.Body["workflows"], 1)
	r = f.do(t, "GET", fmt.Sprintf("/api/workflows/%d/runs", id), fl.admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Empty(t, r.Body["runs"])

	// Start checks its devices against scope.
	op := f.scopedOperatorOf(t, fl.admin, "flow-op", fl.siteA)
	for _, guids := range [][]string{{}, {"guid-off"}, {"nope"}} {
		r = f.do(t, "POST", fmt.Sprintf("/api/workflows/%d/start", id), op, map[string]any{"device_guids": guids})
		require.Equal(t, 400, r.Status, r.Raw)
		require.NotEmpty(t, r.field("device_guids"))
	}

	// A workflow job runs it; while it does, the workflow stays.
	r = f.do(t, "POST", "/api/scheduled_jobs", fl.admin, map[string]any{"name": "weekly disk care", "kind": "workflow", "workflow_id": id,
		"targets": map[string]any{"sites": []int64{fl.siteA}}, "schedule": map[string]any{"type": "cron", "expression": "0 2 * * 0"}})
	require.Equal(t, 201, r.Status, r.Raw)
	job := int64(r.Body["id"].(float64))
	require.Equal(t, float64(id), r.Body["workflow_id"])
	r = f.do(t, "DELETE", fmt.Sprintf("/api/workflows/%d", id), fl.admin, nil)
	require.Equal(t, 409, r.Status, r.Raw)
	require.Equal(t, "workflow_in_use", r.Body["error"])
	r = f.do(t, "DELETE", fmt.Sprintf("/api/scheduled_jobs/%d", job), fl.admin, nil)
	require.Equal(t, 204, r.Status, r.Raw)
	r = f.do(t, "DELETE", fmt.Sprintf("/api/workflows/%d", id), fl.admin, nil)
	require.Equal(t, 204, r.Status, r.Raw)
	r = f.do(t, "GET", fmt.Sprintf("/api/workflows/%d", id), fl.admin, nil)
	require.Equal(t, 404, r.Status, r.Raw)
	r = f.do(t, "GET", "/api/workflows/runs/nope", fl.admin, nil)
	require.Equal(t, 404, r.Status, r.Raw)
}

// A flow's steps are its nodes: listed, added at a position, replaced and
// removed one at a time, each change checked as a whole-flow update is
// (issue 27 item 6).
func TestFlowNodes(t *testing.T) {
	t.Parallel()
	f := setup(t)
	fl := f.fleet(t)
	check := f.testAssembly(t, fl.admin, "check", "script")
	fix := f.testAssembly(t, fl.admin, "fix", "script")
	r := f.do(t, "POST", "/api/workflows", fl.admin, map[string]any{"name": "care", "steps": []any{
		map[string]any{"id": "check", "assembly_id": check}}})
	require.Equal(t, 201, r.Status, r.Raw)
	id := int64(r.Body["id"].(float64))
	nodes := fmt.Sprintf("/api/workflows/%d/nodes", id)
	ids := func() []string {
		r := f.do(t, "GET", nodes, fl.admin, nil)
		require.Equal(t, 200, r.Status, r.Raw)
		var out []string
		for _, n := range r.Body["nodes"].([]any) {
			out = append(out, n.(map[string]any)["id"].(string))
		}
		return out
	}
	require.Equal(t, []string{"check"}, ids())

	r = f.do(t, "POST", nodes, fl.admin, map[string]any{"id": "fix", "assembly_id": fix, "condition": "on_failure"})
	require.Equal(t, 201, r.Status, r.Raw)
	r = f.do(t, "POST", nodes, fl.admin, map[string]any{"id": "pre", "assembly_id": check, "position": 0})
	require.Equal(t, 201, r.Status, r.Raw)
	require.Equal(t, []string{"pre", "check", "fix"}, ids())
	steps := r.Body["steps"].([]any)
	require.NotZero(t, steps[0].(map[string]any)["assembly_version"], "a new node is pinned like any step")

	r = f.do(t, "PUT", nodes+"/fix", fl.admin, map[string]any{"assembly_id": fix, "condition": "on_success", "timeout_seconds": 60})
	require.Equal(t, 200, r.Status, r.Raw)
	fixed := r.Body["steps"].([]any)[2].(map[string]any)
	require.Equal(t, "fix", fixed["id"], "a replaced node keeps its ID")
	require.Equal(t, "on_success", fixed["condition"])

	cases := []struct {
		name, method, path string
		body               map[string]any
		status             int
		field              string
	}{
		{"bad condition", "PUT", nodes + "/fix", map[string]any{"assembly_id": fix, "condition": "sometimes"}, 400, "steps[2].condition"},
		{"unknown assembly", "POST", nodes, map[string]any{"id": "x", "assembly_id": 99999}, 400, "steps[3].assembly_id"},
		{"duplicate ID", "POST", nodes, map[string]any{"id": "check", "assembly_id": fix}, 400, "steps[3].id"},
		{"no ID", "POST", nodes, map[string]any{"assembly_id": fix}, 400, "id"},
		{"position out of range", "POST", nodes, map[string]any{"id": "y", "assembly_id": fix, "position": 9}, 400, "position"},
		{"unknown node", "PUT", nodes + "/nope", map[string]any{"assembly_id": fix}, 404, ""},
		{"unknown flow", "GET", "/api/workflows/99999/nodes", nil, 404, ""},
	}
	for _, c := range cases {
		r := f.do(t, c.method, c.path, fl.admin, c.body)
		require.Equal(t, c.status, r.Status, "%s: %s", c.name, r.Raw)
		if c.field != "" {
			require.NotEmpty(t, r.field(c.field), "%s: %s", c.name, r.Raw)
		}
	}
	require.Equal(t, []string{"pre", "check", "fix"}, ids(), "a refused change changes nothing")

	r = f.do(t, "DELETE", nodes+"/pre", fl.admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	r = f.do(t, "DELETE", nodes+"/fix", fl.admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, []string{"check"}, ids())
	r = f.do(t, "DELETE", nodes+"/check", fl.admin, nil)
	require.Equal(t, 400, r.Status, "a flow keeps one node: %s", r.Raw)
	require.NotEmpty(t, r.field("steps"))

	// A scoped operator edits nodes of a flow it may change, and only those.
	op := f.scopedOperatorOf(t, fl.admin, "nodes-op", fl.siteA)
	r = f.do(t, "POST", nodes, op, map[string]any{"id": "more", "assembly_id": fix})
	require.Equal(t, 403, r.Status, "the flow was saved for every site: %s", r.Raw)
}
