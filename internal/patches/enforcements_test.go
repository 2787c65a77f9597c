package patches_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/patches"
)

// Evaluation asks each Windows device for its effective policy's
// enforcement mode on its first evaluation and whenever the mode changes,
// never a Linux device; it records the agent's answer (a mode other than
// the one asked is failed, asked again after EnforcementRetryInterval);
// a frozen device gets no installs.
func TestEvaluateEnforcesTheEffectiveMode(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.device(t, "win-1", "a")
	f.device(t, "win-2", "b")
	f.device(t, "lin-1", "a")
	for guid, os := range map[string]string{"win-1": "Microsoft Windows 11 Pro", "win-2": "Microsoft Windows Server 2022 Standard",
		"lin-1": "Debian GNU/Linux 12"} {
		_, err := f.store.Pool.Exec(t.Context(), `UPDATE devices SET operating_system = $1 WHERE guid = $2`, os, guid)
		require.NoError(t, err)
	}
	site := cairn.SiteID(f.sites["a"])
	in := patches.PolicyInput{Name: "a", Type: patches.TypeSite, RoleScope: patches.RoleWorkstation, SiteID: &site,
		Rules:    []patches.Rule{{RuleType: patches.RuleCategory, MatchType: patches.MatchEquals, Value: "security", Action: patches.ActionApprove}},
		Defaults: patches.Defaults{EnforcementMode: proto.PatchModeManaged}}
	pol, err := f.svc.CreatePolicy(t.Context(), cairn.AllSites, "admin", in)
	require.NoError(t, err)
	evaluate := func() (patches.EvaluateResult, map[string]patches.EvaluatedEnforcement, []patches.Queued) {
		t.Helper()
		res, queued, err := f.svc.Evaluate(t.Context(), cairn.AllSites, "system:test", 0)
		require.NoError(t, err)
		by := map[string]patches.EvaluatedEnforcement{}
		for _, e := range res.Enforcements {
			by[e.Hostname] = e
		}
		return res, by, queued
	}

	_, by, queued := evaluate()
	require.Len(t, by, 2, "Windows devices only")
	require.Equal(t, proto.PatchModeManaged, by["win-1"].Mode)
	require.Equal(t, &pol.ID, by["win-1"].PolicyID)
	require.Equal(t, patches.EnforcementQueued, by["win-1"].State)
	require.Equal(t, proto.PatchModeUnmanaged, by["win-2"].Mode, "a first evaluation asks even for unmanaged")
	require.Nil(t, by["win-2"].PolicyID)
	require.Len(t, queued, 2)
	for _, q := range queued {
		require.NotNil(t, q.Enforcement)
		require.Equal(t, proto.PatchPolicyEnforcementRequest{EnforcementID: q.Enforcement.ID, Mode: q.Enforcement.Mode}, q.Enforcement.AgentRequest())
	}
	require.Equal(t, patches.Target{GUID: "win-1", Hostname: "win-1", SiteSlug: "site-a"}, queued[0].Target)

	_, by, _ = evaluate()
	require.Empty(t, by, "an open enforcement of the same mode is not asked for again")

	// The agents answer: win-1 applied, win-2 with the wrong mode.
	values := []proto.PatchPolicyValue{{Key: `HKLM\SOFTWARE\Policies\Microsoft\Windows\WindowsUpdate\AU`, Name: "AUOptions",
		Present: true, Type: "REG_DWORD", Data: float64(2)}}
	views := map[string]patches.DeviceView{}
	for _, h := range []string{"win-1", "win-2"} {
		v, err := f.svc.Device(t.Context(), cairn.AllSites, h)
		require.NoError(t, err)
		require.Len(t, v.Enforcements, 1)
		views[h] = v
	}
	_, run, err := f.svc.BeginEnforcement(t.Context(), views["win-1"].Enforcements[0].ID)
	require.NoError(t, err)
	require.True(t, run)
	got, err := f.svc.ConcludeEnforcement(t.Context(), views["win-1"].Enforcements[0].ID, patches.EnforcementOutcome{
		Result: &proto.PatchPolicyEnforcementResult{Mode: proto.PatchModeManaged, Status: proto.PatchEnforcementApplied,
			Message: "set", Values: values}})
	require.NoError(t, err)
	require.Equal(t, patches.EnforcementApplied, got.State)
	require.Equal(t, values, got.Values)
	got, err = f.svc.ConcludeEnforcement(t.Context(), views["win-2"].Enforcements[0].ID, patches.EnforcementOutcome{
		Result: &proto.PatchPolicyEnforcementResult{Mode: proto.PatchModeFrozen, Status: proto.PatchEnforcementApplied}})
	require.NoError(t, err)
	require.Equal(t, patches.EnforcementFailed, got.State)
	require.Contains(t, got.Message, "not unmanaged")
	again, err := f.svc.ConcludeEnforcement(t.Context(), views["win-1"].Enforcements[0].ID, patches.EnforcementOutcome{ErrCode: "x"})
	require.NoError(t, err)
	require.Equal(t, patches.EnforcementApplied, again.State, "a finished enforcement keeps its answer")
	v, err := f.svc.Device(t.Context(), cairn.AllSites, "win-1")
	require.NoError(t, err)
	require.Equal(t, patches.EnforcementApplied, v.Enforcements[0].State)

	_, by, _ = evaluate()
	require.Empty(t, by, "a failure is not retried at once")
	_, err = f.store.Pool.Exec(t.Context(), `UPDATE patch_enforcements SET finished_at = finished_at - $1::interval`, "61 minutes")
	require.NoError(t, err)
	_, by, _ = evaluate()
	require.Len(t, by, 1)
	require.Equal(t, proto.PatchModeUnmanaged, by["win-2"].Mode, "asked again after the retry interval")

	// Frozen: a new enforcement, and no install of an approved update.
	f.report(t, "win-1", nil, pending("openssl", "3.0.1", "3.0.2", true))
	in.Defaults.EnforcementMode = proto.PatchModeFrozen
	_, err = f.svc.UpdatePolicy(t.Context(), cairn.AllSites, pol.ID, in)
	require.NoError(t, err)
	res, by, _ := evaluate()
	require.Len(t, by, 1)
	require.Equal(t, proto.PatchModeFrozen, by["win-1"].Mode)
	require.Empty(t, res.Installs, "a frozen device gets no installs")
	require.Equal(t, 1, res.FrozenDeviceCount)

	// Managed again: the update is installed; the mode comes back.
	in.Defaults.EnforcementMode = proto.PatchModeManaged
	_, err = f.svc.UpdatePolicy(t.Context(), cairn.AllSites, pol.ID, in)
	require.NoError(t, err)
	res, by, _ = evaluate()
	require.Equal(t, proto.PatchModeManaged, by["win-1"].Mode)
	require.Len(t, res.Installs, 1)

	eff, err := f.svc.EffectiveFor(t.Context(), cairn.AllSites, "win-1")
	require.NoError(t, err)
	require.Equal(t, proto.PatchModeManaged, eff.EnforcementMode)
	require.Equal(t, pol.ID, eff.EnforcementSource)
}

// An enforcement mode outside unmanaged, managed and frozen is refused
// with the field.
func TestPolicyEnforcementModeIsChecked(t *testing.T) {
	t.Parallel()
	f := setup(t)
	site := cairn.SiteID(f.sites["a"])
	_, err := f.svc.CreatePolicy(t.Context(), cairn.AllSites, "admin", patches.PolicyInput{Name: "a", Type: patches.TypeSite,
		RoleScope: patches.RoleWorkstation, SiteID: &site, Rules: []patches.Rule{}, Defaults: patches.Defaults{EnforcementMode: "paused"}})
	require.True(t, cairn.IsCode(err, cairn.ECodeValidation), "%v", err)
	var ce *cairn.Error
	require.ErrorAs(t, err, &ce)
	require.Contains(t, ce.Fields, "defaults.enforcement_mode")
}

// EnforcementDue: first evaluation, a changed mode, and a failure after
// the retry interval.
func TestEnforcementDue(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	recent, old := now.Add(-time.Minute), now.Add(-patches.EnforcementRetryInterval)
	for _, tc := range []struct {
		name string
		last *patches.Enforcement
		want bool
	}{
		{"never asked", nil, true},
		{"same mode applied", &patches.Enforcement{Mode: "managed", State: patches.EnforcementApplied, FinishedAt: &old}, false},
		{"same mode queued", &patches.Enforcement{Mode: "managed", State: patches.EnforcementQueued}, false},
		{"other mode queued", &patches.Enforcement{Mode: "frozen", State: patches.EnforcementQueued}, true},
		{"other mode applied", &patches.Enforcement{Mode: "unmanaged", State: patches.EnforcementNotManaged}, true},
		{"failed recently", &patches.Enforcement{Mode: "managed", State: patches.EnforcementFailed, FinishedAt: &recent}, false},
		{"failed long ago", &patches.Enforcement{Mode: "managed", State: patches.EnforcementFailed, FinishedAt: &old}, true},
	} {
		require.Equal(t, tc.want, patches.EnforcementDue("managed", tc.last, now), tc.name)
	}
}
