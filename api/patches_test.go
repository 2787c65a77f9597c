package api_test

import (
	"context"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/operations"
	"github.com/cairn-rmm/cairn/agent/patches"
	patchops "github.com/cairn-rmm/cairn/agent/patches/ops"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/runtime"
	ipatches "github.com/cairn-rmm/cairn/internal/patches"
	"github.com/cairn-rmm/cairn/workflowclient"
)

// patchMachine is a device's package state as the agent's handlers see
// it: hello and bash have upgrades pending until installed. An install
// of a package in lies answers installed and changes nothing.
type patchMachine struct {
	mu        sync.Mutex
	installed map[string]bool
	lies      map[string]bool
	// users are signed in; needsReboot says the machine waits for a
	// reboot; reboots are the reboots the fake rebooter scheduled, each
	// with how many installs had run before it.
	users       []string
	needsReboot bool
	reboots     []int
	installs    int
}

func (m *patchMachine) ScheduleReboot(context.Context, string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reboots = append(m.reboots, m.installs)
	return nil
}

func (m *patchMachine) signedIn(context.Context) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.users, nil
}

func (m *patchMachine) rebootRequired(context.Context) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.needsReboot, nil
}

func (m *patchMachine) scheduled() []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]int(nil), m.reboots...)
}

func (m *patchMachine) Processes(context.Context) ([]proto.Process, error) {
	return []proto.Process{}, nil
}
func (m *patchMachine) Services(context.Context) ([]proto.Service, error) {
	return []proto.Service{}, nil
}
func (m *patchMachine) Software(context.Context) ([]proto.Software, error) {
	return []proto.Software{}, nil
}
func (m *patchMachine) InitDir() string       { return "" }
func (m *patchMachine) UsesInitScripts() bool { return true }

func (m *patchMachine) Patches(context.Context) ([]proto.PatchEntry, *proto.PatchStatus, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rows := []proto.PatchEntry{}
	reboot := false
	for _, p := range []string{"bash", "hello"} {
		if m.installed[p] {
			rows = append(rows, proto.PatchEntry{Title: p + " 1.1", State: "installed", Source: "apt_history", Package: p, InstalledVersion: "1.1"})
			reboot = true
			continue
		}
		rows = append(rows, proto.PatchEntry{Title: p + " 1.1", State: "pending", Source: "apt", Package: p, InstalledVersion: "1.0",
			CandidateVersion: "1.1", Security: p == "hello", Origin: "Local:1/stable-security"})
	}
	return rows, &proto.PatchStatus{Provider: "apt", RebootRequired: reboot}, nil
}

func (m *patchMachine) Install(_ context.Context, req proto.PatchInstallRequest, progress func(patches.Progress)) (proto.PatchInstallResult, error) {
	progress(patches.Progress{Phase: proto.PatchPhaseInstalling, Percent: 50, Message: "Unpacking " + req.Package})
	m.mu.Lock()
	defer m.mu.Unlock()
	m.installs++
	if m.installed[req.Package] {
		return proto.PatchInstallResult{Status: proto.PatchInstallAlready, AlreadyInstalled: true}, nil
	}
	if !m.lies[req.Package] {
		m.installed[req.Package] = true
	}
	code := 0
	return proto.PatchInstallResult{Status: proto.PatchInstallDone, ExitCode: &code, Message: req.Package + " 1.0 -> 1.1"}, nil
}

// patchAgent enrolls hostname and serves the real operation and patch
// install handlers over m on its socket.
// patchHost is a device's machine as the agent's operation and patch
// install handlers see it.
type patchHost interface {
	operations.Inventory
	patches.Installer
}

// rebootHost is a patchHost whose reboots and sessions are faked.
type rebootHost interface {
	patches.Rebooter
	signedIn(context.Context) ([]string, error)
	rebootRequired(context.Context) (bool, error)
}

func (f *fixture) patchAgent(t *testing.T, admin string, site int64, hostname string, m patchHost) *testAgent {
	t.Helper()
	a := f.enrolled(t, admin, site, hostname)
	handlers := runtime.NewHandlers()
	require.NoError(t, operations.Register(handlers, operations.Options{Inventory: m}))
	opts := patchops.Options{Installer: m}
	if rb, ok := m.(rebootHost); ok {
		opts.Rebooter, opts.SignedIn, opts.RebootRequired = rb, rb.signedIn, rb.rebootRequired
	}
	require.NoError(t, patchops.Register(handlers, opts))
	conn := a.connect(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); conn.CloseNow(); <-done })
	go func() {
		defer close(done)
		serveSocket(ctx, conn, handlers, &scriptAgent{testAgent: a})
	}()
	return a
}

func (f *fixture) installPatch(t *testing.T, guid, key string) string {
	t.Helper()
	core := f.engine.core
	inst, target, err := core.Patches.RequestInstall(t.Context(), cairn.AllSites, ipatches.Request{DeviceGUID: cairn.DeviceGUID(guid), PatchKey: key, Actor: "admin"})
	require.NoError(t, err)
	require.NoError(t, workflowclient.PatchLaneStarter{Client: core.Temporal, Grants: core.Grants}.Enqueue(t.Context(), inst, target, "admin"))
	return inst.ID
}

func installState(r response, id string) map[string]any {
	for _, i := range r.Body["installs"].([]any) {
		if m := i.(map[string]any); m["install_id"] == id {
			return m
		}
	}
	return nil
}

// An install runs in the device's patch lane: the agent installs, posts
// progress, the lane re-scans, and the install is "installed" only when
// that scan shows it; an agent that says installed while the scan still
// lists the update leaves it not_confirmed.
func TestPatchInstallThroughTheLane(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	site := f.createSite(t, admin, "patch")
	m := &patchMachine{installed: map[string]bool{}, lies: map[string]bool{"bash": true}}
	a := f.patchAgent(t, admin, site, "patch-01", m)

	r := f.do(t, "POST", "/api/device/patches/patch-01/refresh", admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	list := f.do(t, "GET", "/api/device/patches/patch-01", admin, nil)
	require.Equal(t, 200, list.Status, list.Raw)
	require.Equal(t, false, list.Body["reboot_required"])
	require.Equal(t, float64(2), list.Body["pending_count"])
	require.Equal(t, float64(1), list.Body["security_pending_count"])

	hello := f.installPatch(t, a.guid, "pkg:hello=1.1")
	require.Eventually(t, func() bool {
		r := f.do(t, "GET", "/api/device/patches/patch-01", admin, nil)
		i := installState(r, hello)
		return i != nil && i["state"] == ipatches.StateInstalled
	}, time.Minute, 100*time.Millisecond)
	list = f.do(t, "GET", "/api/device/patches/patch-01", admin, nil)
	i := installState(list, hello)
	require.Equal(t, "finished", i["phase"])
	require.Equal(t, float64(100), i["percent"])
	require.Equal(t, float64(0), i["exit_code"])
	require.NotNil(t, i["progress_at"], "the agent's progress post was recorded")
	require.Equal(t, true, list.Body["reboot_required"], "the re-scan after the install was stored")
	rows := map[string]any{}
	for _, p := range list.Body["patches"].([]any) {
		rows[p.(map[string]any)["patch_key"].(string)] = p.(map[string]any)["state"]
	}
	require.Equal(t, map[string]any{"pkg:hello=1.1": "installed", "pkg:bash=1.1": "pending"}, rows)

	bash := f.installPatch(t, a.guid, "pkg:bash=1.1")
	require.Eventually(t, func() bool {
		i := installState(f.do(t, "GET", "/api/device/patches/patch-01", admin, nil), bash)
		return i != nil && i["state"] == ipatches.StateNotConfirmed
	}, time.Minute, 100*time.Millisecond)

	// Asking again for what the re-scan shows installed: the agent answers
	// already_installed.
	again := f.installPatch(t, a.guid, "pkg:hello=1.1")
	require.NotEqual(t, hello, again)
	require.Eventually(t, func() bool {
		i := installState(f.do(t, "GET", "/api/device/patches/patch-01", admin, nil), again)
		return i != nil && i["state"] == ipatches.StateAlreadyInstalled && i["already_installed"] == true
	}, time.Minute, 100*time.Millisecond)
}

func TestPatchAuditRoute(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	siteA := f.createSite(t, admin, "pa")
	siteB := f.createSite(t, admin, "pb")
	for _, h := range []struct {
		host string
		site int64
	}{{"audit-a1", siteA}, {"audit-a2", siteA}, {"audit-b1", siteB}} {
		f.patchAgent(t, admin, h.site, h.host, &patchMachine{installed: map[string]bool{}})
		r := f.do(t, "POST", "/api/device/patches/"+h.host+"/refresh", admin, nil)
		require.Equal(t, 200, r.Status, r.Raw)
	}
	get := func(token, query string) response {
		return f.do(t, "GET", "/api/patches/audit?"+query, token, nil)
	}
	r := get(admin, "")
	require.Equal(t, 200, r.Status, r.Raw)
	require.Len(t, r.Body["rows"], 6)
	require.Nil(t, r.Body["next_cursor"])
	row := r.Body["rows"].([]any)[0].(map[string]any)
	require.Equal(t, "audit-a1", row["hostname"])
	require.Contains(t, row, "active_install_job")
	require.Contains(t, row, "patch_policy_source")

	page := get(admin, "limit=4")
	require.Len(t, page.Body["rows"], 4)
	next := get(admin, "limit=4&cursor="+url.QueryEscape(page.Body["next_cursor"].(string)))
	require.Equal(t, 200, next.Status, next.Raw)
	require.Len(t, next.Body["rows"], 2)

	require.Len(t, get(admin, "security=true").Body["rows"], 3)
	require.Len(t, get(admin, "q=HELLO&state=pending").Body["rows"], 3)

	op := f.scopedOperatorOf(t, admin, "patch-operator", siteB)
	scoped := get(op, "")
	require.Equal(t, 200, scoped.Status, scoped.Raw)
	require.Len(t, scoped.Body["rows"], 2, "an operator sees the devices of their sites only")
	require.Equal(t, 404, f.do(t, "GET", "/api/device/patches/audit-a1", op, nil).Status)

	for query, field := range map[string]string{"state=done": "state", "limit=0": "limit", "security=maybe": "security",
		"cursor=%21%21": "cursor", "site_id=x": "site_id"} {
		r := get(admin, query)
		require.Equal(t, 400, r.Status, query)
		require.Equal(t, "validation_failed", r.Body["error"], query)
		require.NotEmpty(t, r.field(field), "%s: %s", query, r.Raw)
	}
}

func TestPatchInstallProgressRoute(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	site := f.createSite(t, admin, "pp")
	a := f.enrolled(t, admin, site, "progress-01")
	r := a.device(t, "POST", proto.PathPatchInstallProgress, proto.PatchInstallProgress{InstallID: "nope", Phase: "installing",
		Percent: 5, CapturedAt: time.Now()})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, false, r.Body["recorded"])
	r = a.device(t, "POST", proto.PathPatchInstallProgress, map[string]any{"install_id": "x", "phase": "dancing", "percent": 500})
	require.Equal(t, 400, r.Status, r.Raw)
	require.Equal(t, "validation_failed", r.Body["error"])
	require.NotEmpty(t, r.field("phase"))
	require.Equal(t, 401, f.do(t, "POST", proto.PathPatchInstallProgress, admin, map[string]any{}).Status, "operators are not agents")
}
