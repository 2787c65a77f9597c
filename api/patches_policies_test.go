package api_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/agent/patches"
	"github.com/cairn-rmm/cairn/agent/patches/apttest"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/workflowclient"

	ipatches "github.com/cairn-rmm/cairn/internal/patches"
)

// policyRows are the list route's rows by name.
func policyRows(t *testing.T, r response) map[string]map[string]any {
	t.Helper()
	require.Equal(t, 200, r.Status, r.Raw)
	out := map[string]map[string]any{}
	for _, x := range r.Body["policies"].([]any) {
		m := x.(map[string]any)
		out[m["name"].(string)] = m
	}
	return out
}

func sitePolicy(name string, site int64, rules ...map[string]any) map[string]any {
	if rules == nil {
		rules = []map[string]any{}
	}
	return map[string]any{"name": name, "type": "site", "role_scope": "Server", "site_id": site, "rules": rules}
}

func pkgRule(pkg, action string) map[string]any {
	return map[string]any{"rule_type": "package", "match_type": "equals", "value": pkg, "action": action}
}

// Patch policies: the seeded global layer, site policies with counts,
// conflicts, locked global refusals, the effective hierarchy, preview,
// scope, and an evaluation that installs an approved update through the
// device's patch lane only inside the maintenance window.
func TestPatchPolicyRoutes(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	siteA := f.createSite(t, admin, "pola")
	siteB := f.createSite(t, admin, "polb")
	m := &patchMachine{installed: map[string]bool{}}
	a := f.patchAgent(t, admin, siteA, "pol-a1", m)
	f.patchAgent(t, admin, siteB, "pol-b1", &patchMachine{installed: map[string]bool{}})
	for _, h := range []string{"pol-a1", "pol-b1"} {
		r := f.do(t, "POST", "/api/device/patches/"+h+"/refresh", admin, nil)
		require.Equal(t, 200, r.Status, r.Raw)
	}
	list := func(token, query string) map[string]map[string]any {
		return policyRows(t, f.do(t, "GET", "/api/patches/policies"+query, token, nil))
	}

	// The global layer is seeded, one locked policy per role scope.
	rows := list(admin, "?type=global")
	require.Len(t, rows, 2)
	server := rows["Global (Server)"]
	require.Equal(t, true, server["locked"])
	require.Equal(t, "Server", server["role_scope"])
	require.Equal(t, float64(2), server["raw_device_count"])
	require.Equal(t, float64(2), server["eligible_device_count"], "Linux devices are of the Server role scope")
	require.Equal(t, float64(0), rows["Global (Workstation)"]["eligible_device_count"])
	require.Equal(t, float64(0), server["pending_update_count"])
	globalID := int64(server["policy_id"].(float64))

	meta := f.do(t, "GET", "/api/patches/policies/metadata", admin, nil)
	require.Equal(t, 200, meta.Status, meta.Raw)
	require.Contains(t, meta.Raw, `{"rule_type":"title","match_types":["equals","title_contains"]}`)
	require.Contains(t, meta.Raw, `"role_scopes":["Server","Workstation"]`)
	require.Contains(t, meta.Raw, `"reboot_policies":["never","when_required","always"]`)

	// Validation: the field says what is wrong, nothing is saved.
	for _, c := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"name": "x", "type": "site", "role_scope": "Server"}, "site_id"},
		{map[string]any{"name": "x", "type": "site", "role_scope": "Desktop", "site_id": siteA}, "role_scope"},
		{map[string]any{"name": "x", "type": "device_filter", "role_scope": "Server"}, "device_filter_id"},
		{map[string]any{"name": "x", "type": "site", "role_scope": "Server", "site_id": siteA,
			"exclusions": []map[string]any{{"hostname": "pol-a1"}}}, "exclusions[0].site_id"},
		{map[string]any{"name": "x", "type": "site", "role_scope": "Server", "site_id": siteA,
			"rules": []map[string]any{{"rule_type": "kb", "match_type": "title_contains", "value": "1", "action": "approve"}}}, "rules[0].match_type"},
		{map[string]any{"name": "x", "type": "site", "role_scope": "Server", "site_id": siteA,
			"maintenance_window": map[string]any{"time_zone": "Nowhere/Else", "ranges": []map[string]any{{"weekday": "monday", "start": "01:00", "end": "02:00"}}}},
			"maintenance_window.time_zone"},
		{map[string]any{"name": "x", "type": "device_filter", "role_scope": "Server", "device_filter_id": 999999}, "device_filter_id"},
	} {
		r := f.do(t, "POST", "/api/patches/policies", admin, c.body)
		require.Equal(t, 400, r.Status, r.Raw)
		require.Equal(t, "validation_failed", r.Body["error"])
		require.NotEmpty(t, r.field(c.field), "%s: %s", c.field, r.Raw)
	}
	require.Len(t, list(admin, "?type=site"), 0)
	r := f.do(t, "GET", "/api/patches/policies?type=fleet", admin, nil)
	require.Equal(t, 400, r.Status)
	require.NotEmpty(t, r.field("type"))
	require.Equal(t, 404, f.do(t, "POST", "/api/patches/policies", admin, sitePolicy("ghost", 999999)).Status)

	// Global policies are seeded and locked.
	r = f.do(t, "POST", "/api/patches/policies", admin, map[string]any{"name": "g", "type": "global", "role_scope": "Server"})
	require.Equal(t, 409, r.Status, r.Raw)
	require.Equal(t, "conflict", r.Body["error"])
	r = f.do(t, "DELETE", fmt.Sprintf("/api/patches/policies/%d", globalID), admin, nil)
	require.Equal(t, 409, r.Status, r.Raw)
	r = f.do(t, "PUT", fmt.Sprintf("/api/patches/policies/%d", globalID), admin,
		map[string]any{"name": "Global (Server)", "type": "global", "role_scope": "Workstation"})
	require.Equal(t, 409, r.Status, r.Raw)
	r = f.do(t, "PUT", fmt.Sprintf("/api/patches/policies/%d", globalID), admin,
		map[string]any{"name": "Global (Server)", "type": "global", "role_scope": "Server", "site_id": siteA})
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("site_id"))
	r = f.do(t, "PUT", fmt.Sprintf("/api/patches/policies/%d", globalID), admin,
		map[string]any{"name": "Global (Server)", "type": "site", "role_scope": "Server", "site_id": siteA})
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("type"))
	// Its rules can change: the global layer blocks bash.
	r = f.do(t, "PUT", fmt.Sprintf("/api/patches/policies/%d", globalID), admin,
		map[string]any{"name": "Global (Server)", "type": "global", "role_scope": "Server", "rules": []map[string]any{pkgRule("bash", "block")}})
	require.Equal(t, 200, r.Status, r.Raw)

	// A site policy approving hello: its row counts the approved update.
	r = f.do(t, "POST", "/api/patches/policies", admin, sitePolicy("A servers", siteA, pkgRule("hello", "approve")))
	require.Equal(t, 201, r.Status, r.Raw)
	siteID := int64(r.Body["policy_id"].(float64))
	row := list(admin, "")["A servers"]
	require.Equal(t, float64(1), row["raw_device_count"])
	require.Equal(t, float64(1), row["eligible_device_count"])
	require.Equal(t, []any{float64(siteA)}, row["target_sites"])
	require.Equal(t, float64(1), row["pending_update_count"])
	require.Equal(t, float64(1), row["pending_update_device_count"])
	require.Equal(t, []any{map[string]any{"layer": "site", "count": float64(1), "device_count": float64(1)}}, row["pending_update_breakdown"])

	// Same layer, same site, contradicting rule: policy_conflict, and the
	// conflicts route says so without saving.
	blocker := sitePolicy("A blocker", siteA, pkgRule("HELLO", "block"))
	r = f.do(t, "POST", "/api/patches/policies", admin, blocker)
	require.Equal(t, 409, r.Status, r.Raw)
	require.Equal(t, "policy_conflict", r.Body["error"])
	r = f.do(t, "POST", "/api/patches/policies/conflicts", admin, blocker)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, true, r.Body["conflict"])
	require.Len(t, r.Body["same_layer_conflicts"], 1)
	// Another site's policy does not share the layer's devices.
	r = f.do(t, "POST", "/api/patches/policies", admin, sitePolicy("B blocker", siteB, pkgRule("hello", "block")))
	require.Equal(t, 201, r.Status, r.Raw)

	// Approving what the global layer blocks needs confirmation.
	override := sitePolicy("A servers", siteA, pkgRule("hello", "approve"), pkgRule("bash", "approve"))
	r = f.do(t, "PUT", fmt.Sprintf("/api/patches/policies/%d", siteID), admin, override)
	require.Equal(t, 409, r.Status, r.Raw)
	require.Equal(t, "policy_conflict", r.Body["error"])
	require.Contains(t, r.Raw, "confirm_parent_override")
	override["confirm_parent_override"] = true
	r = f.do(t, "PUT", fmt.Sprintf("/api/patches/policies/%d", siteID), admin, override)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, float64(2), r.Body["pending_update_count"])

	// The effective hierarchy of the device.
	eff := f.do(t, "GET", "/api/patches/policies/effective?hostname=POL-A1", admin, nil)
	require.Equal(t, 200, eff.Status, eff.Raw)
	require.Len(t, eff.Body["layers"], 2)
	decisions := map[string]map[string]any{}
	for _, d := range eff.Body["decisions"].([]any) {
		m := d.(map[string]any)
		decisions[m["patch_key"].(string)] = m
	}
	require.Equal(t, "approved", decisions["pkg:hello=1.1"]["patch_policy_status"])
	require.Equal(t, "site", decisions["pkg:bash=1.1"]["patch_policy_source_layer"])
	require.Equal(t, true, decisions["pkg:bash=1.1"]["patch_policy_overrides_parent"])
	// The device's rows carry the same sources.
	dev := f.do(t, "GET", "/api/device/patches/pol-a1", admin, nil)
	require.Equal(t, 200, dev.Status, dev.Raw)
	for _, p := range dev.Body["patches"].([]any) {
		row := p.(map[string]any)
		if row["patch_key"] != "pkg:bash=1.1" {
			continue
		}
		require.Equal(t, map[string]any{"policy_id": float64(siteID), "name": "A servers", "layer": "site"}, row["patch_policy_source"])
		require.Len(t, row["patch_policy_hierarchy"], 2)
		require.Len(t, row["patch_policy_linked_policies"], 2, "the global block and the site approval both match bash")
	}
	// And so do the fleet audit's rows (pending rows only).
	audit := f.do(t, "GET", "/api/patches/audit?hostname=pol-a1", admin, nil)
	require.Equal(t, 200, audit.Status, audit.Raw)
	sawBash := false
	for _, p := range audit.Body["rows"].([]any) {
		row := p.(map[string]any)
		if row["state"] != "pending" {
			require.Nil(t, row["patch_policy_source"], row["patch_key"])
			continue
		}
		require.Len(t, row["patch_policy_hierarchy"], 2, row["patch_key"])
		if row["patch_key"] == "pkg:bash=1.1" {
			sawBash = true
			require.Equal(t, map[string]any{"policy_id": float64(siteID), "name": "A servers", "layer": "site"}, row["patch_policy_source"])
			require.Len(t, row["patch_policy_linked_policies"], 2)
		}
	}
	require.True(t, sawBash, audit.Raw)
	require.Equal(t, 400, f.do(t, "GET", "/api/patches/policies/effective", admin, nil).Status)
	require.Equal(t, 404, f.do(t, "GET", "/api/patches/policies/effective?hostname=nobody", admin, nil).Status)

	r = f.do(t, "POST", fmt.Sprintf("/api/patches/policies/%d/preview", siteID), admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Len(t, r.Body["targets"], 1)
	require.Len(t, r.Body["parent_overrides"], 1)
	require.Equal(t, false, r.Body["conflict"])
	require.Equal(t, 404, f.do(t, "POST", "/api/patches/policies/999999/preview", admin, nil).Status)
	require.Equal(t, 404, f.do(t, "GET", "/api/patches/policies/nope", admin, nil).Status)

	// Scope: an operator of site B sees neither site A's policy nor its
	// device; they may not write policies.
	op := f.scopedOperatorOf(t, admin, "policy-operator", siteB)
	opRows := list(op, "")
	require.NotContains(t, opRows, "A servers")
	require.Contains(t, opRows, "B blocker")
	require.Equal(t, float64(1), opRows["Global (Server)"]["eligible_device_count"], "counts cover visible devices")
	require.Equal(t, 404, f.do(t, "GET", fmt.Sprintf("/api/patches/policies/%d", siteID), op, nil).Status)
	require.Equal(t, 404, f.do(t, "GET", "/api/patches/policies/effective?hostname=pol-a1", op, nil).Status)
	require.Equal(t, 403, f.do(t, "POST", "/api/patches/policies", op, sitePolicy("mine", siteB)).Status)

	// Evaluation outside the maintenance window installs nothing.
	tomorrow := ipatches.Weekdays[(int(time.Now().UTC().Weekday())+1)%7]
	closed := sitePolicy("A servers", siteA, pkgRule("hello", "approve"))
	closed["maintenance_window"] = map[string]any{"time_zone": "UTC", "ranges": []map[string]any{{"weekday": tomorrow, "start": "00:00", "end": "24:00"}}}
	r = f.do(t, "PUT", fmt.Sprintf("/api/patches/policies/%d", siteID), admin, closed)
	require.Equal(t, 200, r.Status, r.Raw)
	r = f.do(t, "POST", "/api/patches/policies/evaluate", admin, map[string]any{"policy_id": siteID})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, float64(1), r.Body["outside_window_device_count"])
	require.Len(t, r.Body["installs"], 0)

	// Inside it (no window: always), the approved update is installed
	// through the device's lane and confirmed by the re-scan; bash, which
	// the global layer blocks, is not.
	r = f.do(t, "PUT", fmt.Sprintf("/api/patches/policies/%d", siteID), admin, sitePolicy("A servers", siteA, pkgRule("hello", "approve")))
	require.Equal(t, 200, r.Status, r.Raw)
	r = f.do(t, "POST", "/api/patches/policies/evaluate", admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	installs := r.Body["installs"].([]any)
	require.Len(t, installs, 1, r.Raw)
	inst := installs[0].(map[string]any)
	require.Equal(t, "pkg:hello=1.1", inst["patch_key"])
	require.Equal(t, float64(siteID), inst["policy_id"])
	require.Equal(t, a.guid, inst["device_guid"])
	id := inst["install_id"].(string)
	require.Eventually(t, func() bool {
		i := installState(f.do(t, "GET", "/api/device/patches/pol-a1", admin, nil), id)
		return i != nil && i["state"] == ipatches.StateInstalled
	}, time.Minute, 100*time.Millisecond)
	// Evaluating again asks for nothing more: hello is installed.
	r = f.do(t, "POST", "/api/patches/policies/evaluate", admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Len(t, r.Body["installs"], 0, r.Raw)
	require.Equal(t, 400, f.do(t, "POST", "/api/patches/policies/evaluate", admin, map[string]any{"policy_id": -1}).Status)

	r = f.do(t, "DELETE", fmt.Sprintf("/api/patches/policies/%d", siteID), admin, nil)
	require.Equal(t, 204, r.Status, r.Raw)
	require.Equal(t, 404, f.do(t, "GET", fmt.Sprintf("/api/patches/policies/%d", siteID), admin, nil).Status)
	require.False(t, strings.Contains(f.do(t, "GET", "/api/patches/policies", admin, nil).Raw, "A servers"))
}

// The Schedule's activity (maintenance job patch_policies) evaluates every
// policy and hands what it approves to the devices' lanes, like the route.
func TestPatchPolicyScheduledEvaluation(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	site := f.createSite(t, admin, "polsched")
	a := f.patchAgent(t, admin, site, "sched-a1", &patchMachine{installed: map[string]bool{}})
	r := f.do(t, "POST", "/api/device/patches/sched-a1/refresh", admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	r = f.do(t, "POST", "/api/patches/policies", admin, map[string]any{"name": "security", "type": "site", "role_scope": "Server",
		"site_id": site, "rules": []map[string]any{{"rule_type": "category", "match_type": "equals", "value": "security", "action": "approve"}}})
	require.Equal(t, 201, r.Status, r.Raw)

	core := f.engine.core
	act := &activities.PatchPolicies{Patches: core.Patches, Lanes: workflowclient.PatchLaneStarter{Client: core.Temporal, Grants: core.Grants},
		Fires: core.JobSched}
	n, err := act.EvaluatePatchPolicies(t.Context())
	require.NoError(t, err)
	require.Equal(t, int64(1), n, "hello comes from a security archive; bash does not")
	require.Eventually(t, func() bool {
		v := f.do(t, "GET", "/api/device/patches/sched-a1", admin, nil)
		for _, i := range v.Body["installs"].([]any) {
			m := i.(map[string]any)
			if m["patch_key"] == "pkg:hello=1.1" && m["state"] == ipatches.StateInstalled && m["requested_by"] == activities.PatchPolicyActor {
				return true
			}
		}
		return false
	}, time.Minute, 100*time.Millisecond)
	n, err = act.EvaluatePatchPolicies(t.Context())
	require.NoError(t, err)
	require.Zero(t, n, "nothing approved is pending any more")
	require.NotEmpty(t, a.guid)
}

// aptMachine is a device whose patches are a real private dpkg/apt root
// (apttest): the agent's apt provider scans it and its apt installer
// upgrades packages in it.
type aptMachine struct {
	*patchMachine
	scan *patches.Apt
	inst *patches.AptInstaller
}

func (m aptMachine) Patches(ctx context.Context) ([]proto.PatchEntry, *proto.PatchStatus, error) {
	s, err := m.scan.Scan(ctx)
	if err != nil {
		return nil, nil, err
	}
	st := s.Status
	return s.Rows(), &st, nil
}

func (m aptMachine) Install(ctx context.Context, req proto.PatchInstallRequest, progress func(patches.Progress)) (proto.PatchInstallResult, error) {
	return m.inst.Install(ctx, req, progress)
}

// A policy-approved update installed for real: a site policy approves
// cairn-hello, the evaluation creates the install, the device's lane
// sends it to an agent whose installer runs apt-get and dpkg against a
// local repository the test builds, and the re-scan shows 1.1 installed.
func TestPatchPolicyInstallsForRealWithApt(t *testing.T) {
	t.Parallel()
	root := apttest.New(t)
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	site := f.createSite(t, admin, "polapt")
	m := aptMachine{patchMachine: &patchMachine{},
		scan: &patches.Apt{Extra: root.Opts, HistoryDir: root.Path("var/log/apt"), RebootFile: root.Path("run/reboot-required")},
		inst: &patches.AptInstaller{Extra: root.Opts, AdminDir: root.Path("var/lib/dpkg"), RebootFile: root.Path("run/reboot-required")}}
	f.patchAgent(t, admin, site, "apt-01", m)
	r := f.do(t, "POST", "/api/device/patches/apt-01/refresh", admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	key := ""
	for _, p := range f.do(t, "GET", "/api/device/patches/apt-01", admin, nil).Body["patches"].([]any) {
		row := p.(map[string]any)
		if row["package"] == apttest.Package && row["state"] == "pending" {
			key = row["patch_key"].(string)
		}
	}
	require.NotEmpty(t, key, "the scan lists the upgrade the repository offers")

	r = f.do(t, "POST", "/api/patches/policies", admin, sitePolicy("apt servers", site, pkgRule(apttest.Package, "approve")))
	require.Equal(t, 201, r.Status, r.Raw)
	require.Equal(t, float64(1), r.Body["pending_update_count"])
	r = f.do(t, "POST", "/api/patches/policies/evaluate", admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Len(t, r.Body["installs"], 1, r.Raw)
	id := r.Body["installs"].([]any)[0].(map[string]any)["install_id"].(string)
	require.Eventually(t, func() bool {
		i := installState(f.do(t, "GET", "/api/device/patches/apt-01", admin, nil), id)
		return i != nil && (i["state"] == ipatches.StateInstalled || i["state"] == ipatches.StateFailed || i["state"] == ipatches.StateNotConfirmed)
	}, 2*time.Minute, 200*time.Millisecond)
	view := f.do(t, "GET", "/api/device/patches/apt-01", admin, nil)
	i := installState(view, id)
	require.Equal(t, ipatches.StateInstalled, i["state"], "%v", i)
	require.Equal(t, float64(0), i["exit_code"])
	b, err := os.ReadFile(root.Path("usr/share/cairn-hello/version"))
	require.NoError(t, err)
	require.Equal(t, "1.1\n", string(b), "dpkg unpacked the new version")
	for _, p := range view.Body["patches"].([]any) {
		row := p.(map[string]any)
		if row["package"] == apttest.Package {
			require.Equal(t, "installed", row["state"], "the re-scan's history row replaces the pending one")
			require.Equal(t, "1.1", row["installed_version"])
		}
	}
	row := policyRows(t, f.do(t, "GET", "/api/patches/policies?type=site", admin, nil))["apt servers"]
	require.Equal(t, float64(0), row["pending_update_count"], "nothing approved is pending any more")
}

// Device filter policies: the layer below site; targets and target_sites
// come from the filter's devices; overlapping filters share the layer
// (policy_conflict), disjoint ones do not; a filter policy's approval
// propagates its devices' counts into the site row above it.
func TestPatchPolicyDeviceFilterLayer(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	siteA := f.createSite(t, admin, "dfa")
	siteB := f.createSite(t, admin, "dfb")
	for _, h := range []struct {
		host string
		site int64
	}{{"web-a1", siteA}, {"web-b1", siteB}, {"db-a1", siteA}} {
		f.patchAgent(t, admin, h.site, h.host, &patchMachine{installed: map[string]bool{}})
		r := f.do(t, "POST", "/api/device/patches/"+h.host+"/refresh", admin, nil)
		require.Equal(t, 200, r.Status, r.Raw)
	}
	web := f.saveFilter(t, admin, "web servers", "web-")
	webA := f.saveFilter(t, admin, "web a", "web-a")
	db := f.saveFilter(t, admin, "db servers", "db-")
	filterPolicy := func(name string, filter int64, rules ...map[string]any) map[string]any {
		return map[string]any{"name": name, "type": "device_filter", "role_scope": "Server", "device_filter_id": filter, "rules": rules}
	}
	r := f.do(t, "POST", "/api/patches/policies", admin, filterPolicy("web", web, pkgRule("hello", "approve")))
	require.Equal(t, 201, r.Status, r.Raw)
	require.Equal(t, float64(2), r.Body["eligible_device_count"])
	require.ElementsMatch(t, []any{float64(siteA), float64(siteB)}, r.Body["target_sites"])
	require.Equal(t, []any{map[string]any{"layer": "device_filter", "count": float64(1), "device_count": float64(2)}}, r.Body["pending_update_breakdown"])

	// web-a overlaps web: a contradicting rule conflicts; db does not overlap.
	r = f.do(t, "POST", "/api/patches/policies", admin, filterPolicy("web a", webA, pkgRule("hello", "block")))
	require.Equal(t, 409, r.Status, r.Raw)
	require.Equal(t, "policy_conflict", r.Body["error"])
	r = f.do(t, "POST", "/api/patches/policies", admin, filterPolicy("db", db, pkgRule("hello", "block")))
	require.Equal(t, 201, r.Status, r.Raw)

	// The site row above counts what its devices' filter policy approves.
	r = f.do(t, "POST", "/api/patches/policies", admin, sitePolicy("site a", siteA))
	require.Equal(t, 201, r.Status, r.Raw)
	require.Equal(t, float64(2), r.Body["eligible_device_count"])
	require.Equal(t, float64(1), r.Body["pending_update_device_count"], "web-a1 only: db-a1's filter policy blocks hello")
	require.Equal(t, []any{map[string]any{"layer": "device_filter", "count": float64(1), "device_count": float64(1)}}, r.Body["pending_update_breakdown"])

	eff := f.do(t, "GET", "/api/patches/policies/effective?hostname=db-a1", admin, nil)
	require.Equal(t, 200, eff.Status, eff.Raw)
	require.Len(t, eff.Body["layers"], 3, "global, site a, db")
}
