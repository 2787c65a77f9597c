package api_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	ipatches "github.com/cairn-rmm/cairn/internal/patches"
)

// rebootState is the state of reboot id in a device's patch view.
func rebootState(r response, id string) map[string]any {
	rbs, _ := r.Body["reboots"].([]any)
	for _, x := range rbs {
		if m := x.(map[string]any); m["reboot_id"] == id {
			return m
		}
	}
	return nil
}

// awaitReboot waits until reboot id of hostname has finished and returns it.
func (f *fixture) awaitReboot(t *testing.T, token, hostname, id string) map[string]any {
	t.Helper()
	var got map[string]any
	require.Eventually(t, func() bool {
		got = rebootState(f.do(t, "GET", "/api/device/patches/"+hostname, token, nil), id)
		return got != nil && got["state"] != ipatches.RebootQueued && got["state"] != ipatches.RebootRunning
	}, time.Minute, 100*time.Millisecond)
	return got
}

// refreshUntilPending refreshes hostname's patches until key is pending
// again (a scan taken in the same second as the last one stored may be
// kept out as not newer).
func (f *fixture) refreshUntilPending(t *testing.T, token, hostname, key string) {
	t.Helper()
	require.Eventually(t, func() bool {
		require.Equal(t, 200, f.do(t, "POST", "/api/device/patches/"+hostname+"/refresh", token, nil).Status)
		for _, p := range f.do(t, "GET", "/api/device/patches/"+hostname, token, nil).Body["patches"].([]any) {
			if row := p.(map[string]any); row["patch_key"] == key {
				return row["state"] == "pending"
			}
		}
		return false
	}, time.Minute, 200*time.Millisecond)
}

// POST /api/device/patches/{hostname}/reboot: a patch_reboot_request
// through the device's patch lane to a real agent with a fake rebooter;
// skipped with skipped_logged_in_user while a user is signed in (an
// operator cannot force it), not_required when asked "when required" of
// a machine that needs none, scheduled otherwise; scoped; refused for a
// quarantined device.
func TestPatchRebootRoute(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	site := f.createSite(t, admin, "reboot")
	other := f.createSite(t, admin, "reboot-other")
	m := &patchMachine{installed: map[string]bool{}, users: []string{"alice"}}
	a := f.patchAgent(t, admin, site, "rb-01", m)
	post := func(token string, body any) response {
		return f.do(t, "POST", "/api/device/patches/rb-01/reboot", token, body)
	}

	r := post(admin, map[string]any{"forced": true})
	require.Equal(t, 400, r.Status, r.Raw)
	require.Equal(t, "validation_failed", r.Body["error"])
	require.Contains(t, r.Raw, `"forced"`)
	r = post(admin, map[string]any{"when_required": "yes"})
	require.Equal(t, 400, r.Status, r.Raw)
	require.Equal(t, 404, f.do(t, "POST", "/api/device/patches/nobody/reboot", admin, map[string]any{}).Status)
	op := f.scopedOperatorOf(t, admin, "reboot-operator", other)
	require.Equal(t, 404, post(op, map[string]any{}).Status, "a device outside the caller's sites is not found")

	// A user is signed in: skipped, nothing rebooted.
	r = post(admin, map[string]any{})
	require.Equal(t, 202, r.Status, r.Raw)
	require.Equal(t, false, r.Body["forced"])
	rb := f.awaitReboot(t, admin, "rb-01", r.Body["reboot_id"].(string))
	require.Equal(t, ipatches.RebootSkipped, rb["state"], rb)
	require.Equal(t, []any{"alice"}, rb["signed_in"])
	require.Empty(t, m.scheduled())

	// Nobody signed in, "when required" of a machine that needs no reboot.
	m.mu.Lock()
	m.users = nil
	m.mu.Unlock()
	r = post(admin, map[string]any{"when_required": true})
	require.Equal(t, 202, r.Status, r.Raw)
	rb = f.awaitReboot(t, admin, "rb-01", r.Body["reboot_id"].(string))
	require.Equal(t, ipatches.RebootNotRequired, rb["state"], rb)
	require.Empty(t, m.scheduled())

	// Nobody signed in: scheduled through the fake rebooter.
	r = post(admin, nil)
	require.Equal(t, 202, r.Status, r.Raw)
	rb = f.awaitReboot(t, admin, "rb-01", r.Body["reboot_id"].(string))
	require.Equal(t, ipatches.RebootScheduled, rb["state"], rb)
	require.Equal(t, []int{0}, m.scheduled())

	// Quarantined: refused, nothing queued.
	q := f.do(t, "POST", "/api/devices/"+a.guid+"/quarantine", admin, nil)
	require.Equal(t, 200, q.Status, q.Raw)
	r = post(admin, map[string]any{})
	require.Equal(t, 409, r.Status, r.Raw)
	require.Equal(t, "device_quarantined", r.Body["error"])
}

// Policy evaluation asks for the reboot after the installs it queues, in
// the same lane: a policy that forces reboots reboots with a user signed
// in, after the install ran; a when_required policy leaves a machine that
// needs no reboot alone; never asks for none.
func TestPatchPolicyRebootsAfterInstalls(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	site := f.createSite(t, admin, "polreboot")
	m := &patchMachine{installed: map[string]bool{}, users: []string{"alice"}, needsReboot: true}
	f.patchAgent(t, admin, site, "prb-01", m)
	require.Equal(t, 200, f.do(t, "POST", "/api/device/patches/prb-01/refresh", admin, nil).Status)

	bad := sitePolicy("forced without policy", site, pkgRule("hello", "approve"))
	bad["defaults"] = map[string]any{"reboot_forced": true}
	r := f.do(t, "POST", "/api/patches/policies", admin, bad)
	require.Equal(t, 400, r.Status, r.Raw)
	require.Contains(t, r.Raw, "defaults.reboot_forced")

	pol := sitePolicy("reboot servers", site, pkgRule("hello", "approve"))
	pol["defaults"] = map[string]any{"reboot_policy": "always", "reboot_forced": true}
	r = f.do(t, "POST", "/api/patches/policies", admin, pol)
	require.Equal(t, 201, r.Status, r.Raw)
	policyID := r.Body["policy_id"]
	eff := f.do(t, "GET", "/api/patches/policies/effective?hostname=prb-01", admin, nil)
	require.Equal(t, "always", eff.Body["reboot_policy"], eff.Raw)
	require.Equal(t, true, eff.Body["reboot_forced"], eff.Raw)

	r = f.do(t, "POST", "/api/patches/policies/evaluate", admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Len(t, r.Body["installs"], 1, r.Raw)
	require.Len(t, r.Body["reboots"], 1, r.Raw)
	rb := r.Body["reboots"].([]any)[0].(map[string]any)
	require.Equal(t, true, rb["forced"])
	require.Equal(t, false, rb["when_required"])
	require.Equal(t, policyID, rb["policy_id"])
	got := f.awaitReboot(t, admin, "prb-01", rb["reboot_id"].(string))
	require.Equal(t, ipatches.RebootScheduled, got["state"], got)
	require.Equal(t, []any{"alice"}, got["signed_in"])
	require.Equal(t, []int{1}, m.scheduled(), "rebooted once, after the install ran")

	// when_required of a machine that needs none: the agent answers
	// not_required and reboots nothing.
	m.mu.Lock()
	m.needsReboot = false
	m.installed = map[string]bool{}
	m.mu.Unlock()
	f.refreshUntilPending(t, admin, "prb-01", "pkg:hello=1.1")
	pol["defaults"] = map[string]any{"reboot_policy": "when_required"}
	r = f.do(t, "PUT", fmt.Sprintf("/api/patches/policies/%v", policyID), admin, pol)
	require.Equal(t, 200, r.Status, r.Raw)
	r = f.do(t, "POST", "/api/patches/policies/evaluate", admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Len(t, r.Body["reboots"], 1, r.Raw)
	rb = r.Body["reboots"].([]any)[0].(map[string]any)
	require.Equal(t, true, rb["when_required"])
	require.Equal(t, false, rb["forced"])
	got = f.awaitReboot(t, admin, "prb-01", rb["reboot_id"].(string))
	require.Equal(t, ipatches.RebootNotRequired, got["state"], got)
	require.Equal(t, []int{1}, m.scheduled())

	// never: installs, no reboot.
	m.mu.Lock()
	m.installed = map[string]bool{}
	m.mu.Unlock()
	f.refreshUntilPending(t, admin, "prb-01", "pkg:hello=1.1")
	pol["defaults"] = map[string]any{"reboot_policy": "never"}
	require.Equal(t, 200, f.do(t, "PUT", fmt.Sprintf("/api/patches/policies/%v", policyID), admin, pol).Status)
	r = f.do(t, "POST", "/api/patches/policies/evaluate", admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Len(t, r.Body["installs"], 1, r.Raw)
	require.Len(t, r.Body["reboots"], 0, r.Raw)
}
