package api_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/patches/enforce"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/registry"
	"github.com/cairn-rmm/cairn/agent/registry/registrytest"
	"github.com/cairn-rmm/cairn/agent/runtime"
	ipatches "github.com/cairn-rmm/cairn/internal/patches"
)

// enforcementAgent is a connected Windows agent whose
// patch_policy_enforcement_request handler edits an in-memory registry.
func (f *fixture) enforcementAgent(t *testing.T, admin string, site int64, hostname string, reg registry.Store) *testAgent {
	t.Helper()
	a := f.enrolled(t, admin, site, hostname)
	_, err := f.store.Pool.Exec(t.Context(), `UPDATE devices SET operating_system = 'Microsoft Windows 11 Pro' WHERE guid = $1`, a.guid)
	require.NoError(t, err)
	handlers := runtime.NewHandlers()
	require.NoError(t, enforce.Register(handlers, reg, nil))
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

// awaitEnforcement waits until enforcement id of hostname has finished.
func (f *fixture) awaitEnforcement(t *testing.T, token, hostname, id string) map[string]any {
	t.Helper()
	var got map[string]any
	require.Eventually(t, func() bool {
		r := f.do(t, "GET", "/api/device/patches/"+hostname, token, nil)
		list, _ := r.Body["enforcements"].([]any)
		for _, x := range list {
			if m := x.(map[string]any); m["enforcement_id"] == id {
				got = m
			}
		}
		return got != nil && got["state"] != ipatches.EnforcementQueued && got["state"] != ipatches.EnforcementRunning
	}, time.Minute, 100*time.Millisecond)
	return got
}

// Policy evaluation sends a Windows device its policy's enforcement mode
// through the device's patch lane; the agent sets the Windows Update
// policy values and the Engine records its answer; a change to unmanaged
// restores what was there; an unknown mode is refused.
func TestPatchPolicyEnforcementThroughTheLane(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	site := f.createSite(t, admin, "enforce")
	reg := registrytest.New()
	f.enforcementAgent(t, admin, site, "win-01", reg)

	pol := sitePolicy("freeze workstations", site)
	pol["role_scope"] = "Workstation"
	pol["defaults"] = map[string]any{"enforcement_mode": "paused"}
	r := f.do(t, "POST", "/api/patches/policies", admin, pol)
	require.Equal(t, 400, r.Status, r.Raw)
	require.Equal(t, "validation_failed", r.Body["error"])
	require.Contains(t, r.Raw, "defaults.enforcement_mode")

	pol["defaults"] = map[string]any{"enforcement_mode": "managed"}
	r = f.do(t, "POST", "/api/patches/policies", admin, pol)
	require.Equal(t, 201, r.Status, r.Raw)
	policyID := r.Body["policy_id"]
	eff := f.do(t, "GET", "/api/patches/policies/effective?hostname=win-01", admin, nil)
	require.Equal(t, "managed", eff.Body["enforcement_mode"], eff.Raw)

	r = f.do(t, "POST", "/api/patches/policies/evaluate", admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Len(t, r.Body["enforcements"], 1, r.Raw)
	e := r.Body["enforcements"].([]any)[0].(map[string]any)
	require.Equal(t, "managed", e["mode"])
	require.Equal(t, policyID, e["policy_id"])
	got := f.awaitEnforcement(t, admin, "win-01", e["enforcement_id"].(string))
	require.Equal(t, ipatches.EnforcementApplied, got["state"], got)
	require.Contains(t, got["values"], map[string]any{"key": enforce.AUKey.String(), "name": "AUOptions", "present": true,
		"type": "REG_DWORD", "data": float64(2)})
	_, values, err := reg.Children(enforce.AUKey)
	require.NoError(t, err, "the agent set the policy values")
	require.Len(t, values, len(enforce.Managed()))

	r = f.do(t, "POST", "/api/patches/policies/evaluate", admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Empty(t, r.Body["enforcements"], "the mode did not change")

	pol["defaults"] = map[string]any{"enforcement_mode": "unmanaged"}
	require.Equal(t, 200, f.do(t, "PUT", fmt.Sprintf("/api/patches/policies/%v", policyID), admin, pol).Status)
	r = f.do(t, "POST", "/api/patches/policies/evaluate", admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Len(t, r.Body["enforcements"], 1, r.Raw)
	e = r.Body["enforcements"].([]any)[0].(map[string]any)
	got = f.awaitEnforcement(t, admin, "win-01", e["enforcement_id"].(string))
	require.Equal(t, ipatches.EnforcementRestored, got["state"], got)
	_, _, err = reg.Children(enforce.WindowsUpdateKey)
	require.Error(t, err, "the keys the agent created are gone again")
	require.Equal(t, proto.PatchModeUnmanaged, got["mode"])
}
