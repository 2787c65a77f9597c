package api_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Assemblies keep every version: editing content adds one, renaming does
// not; a quick run records the version it ran, and an old version stays
// readable after later edits.
func TestAssemblyVersions(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "asm")
	a := f.scriptAgent(t, admin, site, "asm-01")

	c := f.do(t, "POST", "/api/assemblies", admin, map[string]any{"name": "Greet", "kind": "script", "language": "sh",
		"description": "says hello", "body": `echo "hello $CAIRN_PARAM_WHO"`, "timeout_seconds": 30,
		"parameters": []map[string]any{{"name": "who", "label": "Who", "type": "string", "default": "world", "required": true}}})
	require.Equal(t, 201, c.Status, c.Raw)
	id := int64(c.Body["id"].(float64))
	path := "/api/assemblies/" + strconv.FormatInt(id, 10)
	require.EqualValues(t, 1, c.Body["version"])
	require.Equal(t, admin != "", c.Body["created_by"] != "")
	require.Len(t, c.Body["body_sha256"], 64)

	run1 := f.quickRun(t, admin, map[string]any{"device_guids": []string{a.guid}, "assembly_id": id})
	r1 := f.finishedRun(t, admin, run1)
	require.Equal(t, "hello world\n", onlyResult(t, r1)["stdout"])
	require.EqualValues(t, 1, r1.Body["assembly_version"])
	require.Equal(t, "Greet", r1.Body["assembly_name"])

	// A rename keeps the version; a body change adds one.
	u := f.do(t, "PUT", path, admin, map[string]any{"name": "Greeter", "kind": "script", "language": "sh", "description": "says hello",
		"body": `echo "hello $CAIRN_PARAM_WHO"`, "timeout_seconds": 30,
		"parameters": []map[string]any{{"name": "who", "label": "Who", "type": "string", "default": "world", "required": true}}})
	require.Equal(t, 200, u.Status, u.Raw)
	require.EqualValues(t, 1, u.Body["version"])
	u = f.do(t, "PUT", path, admin, map[string]any{"name": "Greeter", "kind": "script", "language": "sh",
		"body": `echo "hi $CAIRN_PARAM_WHO"`, "timeout_seconds": 30,
		"parameters": []map[string]any{{"name": "who", "label": "Who", "type": "string", "default": "world", "required": true}}})
	require.Equal(t, 200, u.Status, u.Raw)
	require.EqualValues(t, 2, u.Body["version"])

	v := f.do(t, "GET", path+"/versions", admin, nil)
	require.Equal(t, 200, v.Status, v.Raw)
	versions := v.Body["versions"].([]any)
	require.Len(t, versions, 2)
	require.EqualValues(t, 2, versions[0].(map[string]any)["version"])
	old := f.do(t, "GET", path+"/versions/1", admin, nil)
	require.Equal(t, 200, old.Status, old.Raw)
	require.Equal(t, `echo "hello $CAIRN_PARAM_WHO"`, old.Body["body"])
	require.Equal(t, 404, f.do(t, "GET", path+"/versions/9", admin, nil).Status)

	run2 := f.quickRun(t, admin, map[string]any{"device_guids": []string{a.guid}, "assembly_id": id, "parameters": map[string]any{"who": "ops"}})
	r2 := f.finishedRun(t, admin, run2)
	require.Equal(t, "hi ops\n", onlyResult(t, r2)["stdout"])
	require.EqualValues(t, 2, r2.Body["assembly_version"])
	require.EqualValues(t, 1, f.do(t, "GET", "/api/scripts/quick_run/"+run1, admin, nil).Body["assembly_version"], "the old run keeps its version")

	list := f.do(t, "GET", "/api/assemblies?kind=script&q=greet", admin, nil)
	require.Equal(t, 200, list.Status, list.Raw)
	items := list.Body["assemblies"].([]any)
	require.Len(t, items, 1)
	_, hasBody := items[0].(map[string]any)["body"]
	require.False(t, hasBody, "lists carry no body")
	require.Empty(t, f.do(t, "GET", "/api/assemblies?kind=workflow", admin, nil).Body["assemblies"])

	r := f.do(t, "POST", "/api/assemblies", admin, map[string]any{"name": "greeter", "kind": "script", "language": "sh", "body": "true"})
	require.Equal(t, 409, r.Status, r.Raw)
	require.NotEmpty(t, r.field("name"))

	// A required parameter without default must be given.
	req := f.do(t, "POST", "/api/assemblies", admin, map[string]any{"name": "Needs", "kind": "script", "language": "sh", "body": "true",
		"parameters": []map[string]any{{"name": "target", "type": "string", "required": true}}})
	require.Equal(t, 201, req.Status, req.Raw)
	r = f.do(t, "POST", "/api/scripts/quick_run", admin, map[string]any{"device_guids": []string{a.guid}, "assembly_id": req.Body["id"]})
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("parameters.target"))

	require.Equal(t, 204, f.do(t, "DELETE", path, admin, nil).Status)
	require.Equal(t, 404, f.do(t, "GET", path, admin, nil).Status)
	require.Equal(t, 404, f.do(t, "DELETE", path, admin, nil).Status)
	require.Equal(t, 200, f.do(t, "GET", "/api/scripts/quick_run/"+run1, admin, nil).Status, "runs outlive their assembly")
}

func TestAssemblyValidation(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	params33 := make([]map[string]any, 33)
	for i := range params33 {
		params33[i] = map[string]any{"name": fmt.Sprintf("p%d", i), "type": "string"}
	}
	base := func(over map[string]any) map[string]any {
		b := map[string]any{"name": "x", "kind": "script", "language": "bash", "body": "true"}
		for k, v := range over {
			b[k] = v
		}
		return b
	}
	cases := []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"name required", base(map[string]any{"name": " "}), "name"},
		{"name too long", base(map[string]any{"name": strings.Repeat("n", 201)}), "name"},
		{"kind", base(map[string]any{"kind": "macro"}), "kind"},
		{"language", base(map[string]any{"language": "ruby"}), "language"},
		{"language on a playbook", base(map[string]any{"kind": "ansible_playbook", "language": "sh"}), "language"},
		{"body required", base(map[string]any{"body": ""}), "body"},
		{"body too large", base(map[string]any{"body": strings.Repeat("#", 256<<10+1)}), "body"},
		{"timeout", base(map[string]any{"timeout_seconds": -1}), "timeout_seconds"},
		{"too many parameters", base(map[string]any{"parameters": params33}), "parameters"},
		{"parameter name", base(map[string]any{"parameters": []map[string]any{{"name": "1x", "type": "string"}}}), "parameters[0].name"},
		{"duplicate parameter", base(map[string]any{"parameters": []map[string]any{{"name": "a", "type": "string"}, {"name": "A", "type": "string"}}}), "parameters[1].name"},
		{"parameter type", base(map[string]any{"parameters": []map[string]any{{"name": "a", "type": "date"}}}), "parameters[0].type"},
		{"parameter default", base(map[string]any{"parameters": []map[string]any{{"name": "a", "type": "number", "default": "ten"}}}), "parameters[0].default"},
		{"run_as", base(map[string]any{"run_as": "root"}), "run_as"},
		{"run_as on a playbook", base(map[string]any{"kind": "ansible_playbook", "language": "", "run_as": "current_user"}), "run_as"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := f.do(t, "POST", "/api/assemblies", admin, c.body)
			require.Equal(t, 400, r.Status, r.Raw[:min(len(r.Raw), 400)])
			require.NotEmpty(t, r.field(c.field), r.Raw[:min(len(r.Raw), 400)])
		})
	}
}
