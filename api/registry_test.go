package api_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/registry"
	"github.com/cairn-rmm/cairn/agent/registry/registrytest"
	"github.com/cairn-rmm/cairn/agent/runtime"
)

// registryAgent enrolls hostname reporting osName, connects its socket
// and answers registry requests with the real handler over store (the
// real Windows store runs under Wine: agent/registry's Windows test). Like
// cairn-agent run, it reports the registry capability only with a store.
func (f *fixture) registryAgent(t *testing.T, admin string, site int64, hostname, osName string, store registry.Store) *opAgent {
	t.Helper()
	a := f.newAgent(t, hostname)
	a.os = osName
	if store == nil {
		a.caps = proto.AgentCapabilities("linux")
	}
	r := a.request(t, f.enrollmentCode(t, admin, site))
	require.Equal(t, 202, r.Status, r.Raw)
	d := f.do(t, "POST", "/api/admin/device-approvals/"+a.approvalID+"/approve", admin, nil)
	require.Equal(t, 200, d.Status, d.Raw)
	p := a.poll(t)
	require.Equal(t, proto.ApprovalEnrolled, p.Body["status"], p.Raw)
	o := &opAgent{testAgent: a, seen: map[string]int{}}
	handlers := runtime.NewHandlers()
	require.NoError(t, registry.Register(handlers, store, nil))
	o.conn = a.connect(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); o.conn.CloseNow(); <-done })
	go func() {
		defer close(done)
		o.serve(ctx, handlers)
	}()
	return o
}

func TestRegistryEditor(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "reg")
	f.registryAgent(t, admin, site, "reg-win", "Microsoft Windows 11 Pro", registrytest.New())
	const base = "/api/device/registry/reg-win"

	r := f.do(t, "GET", base+"/roots", admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	roots := r.Body["roots"].([]any)
	require.Len(t, roots, 5)
	require.Equal(t, map[string]any{"path": "HKLM", "label": "HKEY_LOCAL_MACHINE"}, roots[0])

	r = f.do(t, "POST", base+"/key/create", admin, map[string]any{"path": `HKCU\Software\Cairn`})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, map[string]any{"name": "Cairn", "path": `HKCU\Software\Cairn`}, r.Body["key"])
	r = f.do(t, "POST", base+"/key/create", admin, map[string]any{"path": `HKCU\Software\Cairn`})
	require.Equal(t, 409, r.Status, r.Raw)
	require.Equal(t, "path_exists", r.Body["error"])
	r = f.do(t, "POST", base+"/key/create", admin, map[string]any{"path": `HKCU\Nope\Child`})
	require.Equal(t, 404, r.Status, r.Raw)
	require.Equal(t, "registry_key_not_found", r.Body["error"])
	r = f.do(t, "POST", base+"/key/create", admin, map[string]any{"path": `HKCU\Software\Cairn\Sub`})
	require.Equal(t, 200, r.Status, r.Raw)

	for _, v := range []map[string]any{
		{"name": "Text", "type": "REG_SZ", "data": "hello"},
		{"name": "Path", "type": "REG_EXPAND_SZ", "data": `%SystemRoot%\x`},
		{"name": "List", "type": "REG_MULTI_SZ", "data": []string{"a", "b"}},
		{"name": "Count", "type": "REG_DWORD", "data": 4294967295},
		{"name": "Big", "type": "REG_QWORD", "data": "18446744073709551615"},
		{"name": "Blob", "type": "REG_BINARY", "data": "00FF"},
	} {
		r = f.do(t, "POST", base+"/value/create", admin, map[string]any{"path": `HKCU\Software\Cairn`, "value": v})
		require.Equal(t, 200, r.Status, r.Raw)
		require.Equal(t, `HKCU\Software\Cairn`, r.Body["path"])
	}
	r = f.do(t, "POST", base+"/value/create", admin, map[string]any{"path": `HKCU\Software\Cairn`,
		"value": map[string]any{"name": "text", "type": "REG_SZ", "data": "again"}})
	require.Equal(t, 409, r.Status, r.Raw)
	require.Equal(t, "path_exists", r.Body["error"])
	r = f.do(t, "POST", base+"/value/update", admin, map[string]any{"path": `HKCU\Software\Cairn`,
		"value": map[string]any{"name": "Missing", "type": "REG_SZ", "data": "x"}})
	require.Equal(t, 404, r.Status, r.Raw)
	require.Equal(t, "registry_value_not_found", r.Body["error"])
	r = f.do(t, "POST", base+"/value/update", admin, map[string]any{"path": `HKCU\Software\Cairn`,
		"value": map[string]any{"name": "Text", "type": "REG_SZ", "data": "changed"}})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, map[string]any{"name": "Text", "type": "REG_SZ", "data": "changed"}, r.Body["value"])

	r = f.do(t, "GET", base+`/children?path=HKCU\Software\Cairn`, admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, `HKCU\Software\Cairn`, r.Body["path"])
	require.Equal(t, []any{map[string]any{"name": "Sub", "path": `HKCU\Software\Cairn\Sub`}}, r.Body["subkeys"])
	require.Equal(t, []any{
		map[string]any{"name": "Big", "type": "REG_QWORD", "data": "18446744073709551615"},
		map[string]any{"name": "Blob", "type": "REG_BINARY", "data": "00ff"},
		map[string]any{"name": "Count", "type": "REG_DWORD", "data": float64(4294967295)},
		map[string]any{"name": "List", "type": "REG_MULTI_SZ", "data": []any{"a", "b"}},
		map[string]any{"name": "Path", "type": "REG_EXPAND_SZ", "data": `%SystemRoot%\x`},
		map[string]any{"name": "Text", "type": "REG_SZ", "data": "changed"},
	}, r.Body["values"])

	r = f.do(t, "POST", base+"/value/delete", admin, map[string]any{"path": `HKCU\Software\Cairn`, "name": "Blob"})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, map[string]any{"name": "Blob", "type": "", "data": nil}, r.Body["value"])
	r = f.do(t, "POST", base+"/key/rename", admin, map[string]any{"path": `HKCU\Software\Cairn`, "new_name": "Cairn2"})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, map[string]any{"name": "Cairn2", "path": `HKCU\Software\Cairn2`}, r.Body["key"])
	r = f.do(t, "GET", base+`/children?path=HKCU\Software\Cairn2\Sub`, admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	r = f.do(t, "GET", base+`/children?path=HKCU\Software\Cairn`, admin, nil)
	require.Equal(t, 404, r.Status, r.Raw)
	require.Equal(t, "registry_key_not_found", r.Body["error"])
	r = f.do(t, "POST", base+"/key/delete", admin, map[string]any{"path": `HKCU\Software\Cairn2`})
	require.Equal(t, 200, r.Status, r.Raw)
	r = f.do(t, "GET", base+`/children?path=HKCU\Software`, admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Empty(t, r.Body["subkeys"])

	// Every mutation is in the device's activity and the audit trail.
	var act response
	require.Eventually(t, func() bool {
		act = f.do(t, "GET", "/api/device/activity/reg-win?limit=200", admin, nil)
		return act.Status == 200 && strings.Contains(act.Raw, "registry_key_delete")
	}, 60*time.Second, 50*time.Millisecond, "the key deletion is recorded")
	for _, k := range []string{"registry_key_create", "registry_key_rename", "registry_value_create", "registry_value_update", "registry_value_delete"} {
		require.Contains(t, act.Raw, k)
	}
	require.Contains(t, act.Raw, `Rename registry key HKCU\\Software\\Cairn to Cairn2`)
	audit := f.do(t, "GET", "/api/server/audit?limit=500", admin, nil)
	require.Equal(t, 200, audit.Status, audit.Raw)
	require.Contains(t, audit.Raw, `hostname=reg-win path=HKCU\\Software\\Cairn2`)
}

func TestRegistryEditorRefused(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "regno")
	other := f.createSite(t, admin, "regother")
	win := f.registryAgent(t, admin, site, "regno-win", "Windows 10 Pro", registrytest.New())
	linux := f.registryAgent(t, admin, site, "regno-linux", "Debian GNU/Linux 12", registry.System())
	const base = "/api/device/registry/regno-win"

	for _, tc := range []struct {
		name, method, path string
		body               any
		field              string
	}{
		{"children without path", "GET", base + "/children", nil, "path"},
		{"children bad root", "GET", base + `/children?path=HKEY_LOCAL_MACHINE\Software`, nil, "path"},
		{"empty component", "POST", base + "/key/create", map[string]any{"path": `HKLM\\Software`}, "path"},
		{"create a root", "POST", base + "/key/create", map[string]any{"path": "HKLM"}, "path"},
		{"delete a root", "POST", base + "/key/delete", map[string]any{"path": "HKCU"}, "path"},
		{"key name too long", "POST", base + "/key/create", map[string]any{"path": `HKCU\` + strings.Repeat("k", 256)}, "path"},
		{"rename with a backslash", "POST", base + "/key/rename", map[string]any{"path": `HKCU\a`, "new_name": `b\c`}, "new_name"},
		{"rename without a name", "POST", base + "/key/rename", map[string]any{"path": `HKCU\a`}, "new_name"},
		{"unknown type", "POST", base + "/value/create", map[string]any{"path": `HKCU\a`, "value": map[string]any{"name": "x", "type": "REG_LINK", "data": ""}}, "value.type"},
		{"dword too big", "POST", base + "/value/create", map[string]any{"path": `HKCU\a`, "value": map[string]any{"name": "x", "type": "REG_DWORD", "data": 4294967296}}, "value.data"},
		{"dword as text", "POST", base + "/value/update", map[string]any{"path": `HKCU\a`, "value": map[string]any{"name": "x", "type": "REG_DWORD", "data": "1"}}, "value.data"},
		{"qword out of range", "POST", base + "/value/create", map[string]any{"path": `HKCU\a`, "value": map[string]any{"name": "x", "type": "REG_QWORD", "data": "18446744073709551616"}}, "value.data"},
		{"binary not hex", "POST", base + "/value/create", map[string]any{"path": `HKCU\a`, "value": map[string]any{"name": "x", "type": "REG_BINARY", "data": "xyz"}}, "value.data"},
		{"multi with an empty string", "POST", base + "/value/create", map[string]any{"path": `HKCU\a`, "value": map[string]any{"name": "x", "type": "REG_MULTI_SZ", "data": []string{"a", ""}}}, "value.data"},
		{"value name too long", "POST", base + "/value/delete", map[string]any{"path": `HKCU\a`, "name": strings.Repeat("n", 16384)}, "value.name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := f.do(t, tc.method, tc.path, admin, tc.body)
			require.Equal(t, 400, r.Status, r.Raw)
			require.Equal(t, "validation_failed", r.Body["error"])
			require.NotEmpty(t, r.field(tc.field), r.Raw)
		})
	}
	require.Zero(t, win.count(proto.EventRegistryManagement), "bad input sends nothing")

	t.Run("an agent without the registry capability is unsupported_platform before anything is sent", func(t *testing.T) {
		for _, c := range []struct {
			method, path string
			body         any
		}{
			{"GET", "/api/device/registry/regno-linux/roots", nil},
			{"GET", `/api/device/registry/regno-linux/children?path=HKLM`, nil},
			{"POST", "/api/device/registry/regno-linux/key/create", map[string]any{"path": `HKCU\x`}},
		} {
			r := f.do(t, c.method, c.path, admin, c.body)
			require.Equal(t, 422, r.Status, r.Raw)
			require.Equal(t, "unsupported_platform", r.Body["error"])
		}
		require.Zero(t, linux.count(proto.EventRegistryManagement))
	})

	t.Run("out of scope answers as missing", func(t *testing.T) {
		op := f.scopedOperatorOf(t, admin, "regno-outsider", other)
		r := f.do(t, "GET", base+"/roots", op, nil)
		require.Equal(t, 404, r.Status, r.Raw)
		require.Equal(t, f.do(t, "GET", "/api/device/registry/no-such-host/roots", op, nil).Body, r.Body)
		r = f.do(t, "POST", base+"/key/create", op, map[string]any{"path": `HKCU\x`})
		require.Equal(t, 404, r.Status, r.Raw)
	})

	t.Run("quarantined devices get nothing", func(t *testing.T) {
		before := win.count(proto.EventRegistryManagement)
		q := f.do(t, "POST", "/api/devices/"+win.guid+"/quarantine", admin, nil)
		require.Equal(t, 200, q.Status, q.Raw)
		for _, c := range []struct {
			method, path string
			body         any
		}{
			{"GET", base + "/roots", nil},
			{"POST", base + "/key/create", map[string]any{"path": `HKCU\x`}},
			{"POST", base + "/value/delete", map[string]any{"path": `HKCU\x`, "name": "y"}},
		} {
			r := f.do(t, c.method, c.path, admin, c.body)
			require.Equal(t, 409, r.Status, r.Raw)
			require.Equal(t, "device_quarantined", r.Body["error"])
		}
		require.Equal(t, before, win.count(proto.EventRegistryManagement), "nothing was sent")
	})
}

// The registry editor follows the agent's capabilities, not the operating
// system's name: an agent reporting the registry capability is served
// whatever its OS string says, one without it is refused.
func TestRegistryEditorFollowsCapability(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "regcap")
	f.registryAgent(t, admin, site, "regcap-odd", "Some Unnamed OS", registrytest.New())
	r := f.do(t, "GET", "/api/device/registry/regcap-odd/roots", admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Len(t, r.Body["roots"], 5)

	win := f.registryAgent(t, admin, site, "regcap-win", "Microsoft Windows 11 Pro", nil)
	r = f.do(t, "GET", "/api/device/registry/regcap-win/roots", admin, nil)
	require.Equal(t, 422, r.Status, r.Raw)
	require.Equal(t, proto.CodeUnsupportedPlatform, r.Body["error"])
	require.Zero(t, win.count(proto.EventRegistryManagement))
}
