package workflows_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/agentgateway"
	"github.com/cairn-rmm/cairn/internal/patches"
	"github.com/cairn-rmm/cairn/workflows"
)

// laneEnv runs a PatchLane over recorded activities: every install is
// answered installed except "i-refused" (the agent refuses it) and
// "i-done" (already finished: its order comes twice).
type laneEnv struct {
	env *testsuite.TestWorkflowEnvironment
	mu  sync.Mutex
	log []string
	out map[string]patches.Outcome
	// reboots are the reboot outcomes concluded.
	reboots map[string]patches.RebootOutcome
	// enforcements are the enforcement outcomes concluded.
	enforcements map[string]patches.EnforcementOutcome
}

func newLaneEnv(t *testing.T) *laneEnv {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	l := &laneEnv{env: suite.NewTestWorkflowEnvironment(), out: map[string]patches.Outcome{}, reboots: map[string]patches.RebootOutcome{},
		enforcements: map[string]patches.EnforcementOutcome{}}
	var acts *activities.PatchInstalls
	var cmds *activities.AgentCommands
	var ops *activities.Operations
	l.env.RegisterActivity(acts)
	l.env.RegisterActivity(cmds)
	l.env.RegisterActivity(ops)
	l.env.OnActivity(acts.BeginPatchInstall, mock.Anything, mock.Anything).Return(func(_ context.Context, id string) (activities.PatchInstallBegun, error) {
		l.add("begin " + id)
		return activities.PatchInstallBegun{Install: patches.Install{ID: id}, Run: id != "i-done"}, nil
	})
	l.env.OnActivity(cmds.SendToAgent, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.CommandInput) (agentgateway.Reply, error) {
		l.add("send " + string(in.Type) + " " + string(in.OperationID) + " grant=" + in.Grant)
		switch {
		case in.Type == proto.EventPatchReboot:
			return agentgateway.Reply{Payload: json.RawMessage(`{"status":"skipped_logged_in_user","message":"1 user(s) signed in","signed_in":["alice"]}`)}, nil
		case in.Type == proto.EventPatchPolicyEnforcement:
			return agentgateway.Reply{Payload: json.RawMessage(`{"mode":"frozen","status":"applied","message":"set","values":[]}`)}, nil
		case in.Type == proto.EventPatchRefresh:
			return agentgateway.Reply{Payload: json.RawMessage(`{"collected_at":"2026-11-29T03:00:00Z","patches":[]}`)}, nil
		case in.OperationID == cairn.OperationID(workflows.PatchInstallOperationID("i-refused")):
			return agentgateway.Reply{}, temporal.NewNonRetryableApplicationError("no installer here", proto.CodeOpUnsupported, nil)
		}
		return agentgateway.Reply{Payload: json.RawMessage(`{"status":"installed","already_installed":false,"exit_code":0,"reboot_required":true}`)}, nil
	})
	l.env.OnActivity(ops.ApplyAgentAnswer, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.ApplyInput) (string, error) {
		l.add("apply " + in.Type)
		return "0 patch rows", nil
	})
	l.env.OnActivity(acts.BeginPatchReboot, mock.Anything, mock.Anything).Return(func(_ context.Context, id string) (bool, error) {
		l.add("begin-reboot " + id)
		return true, nil
	})
	l.env.OnActivity(acts.ConcludePatchReboot, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.ConcludeRebootInput) (string, error) {
		l.mu.Lock()
		l.reboots[in.RebootID] = in.Outcome
		l.mu.Unlock()
		l.add("conclude-reboot " + in.RebootID)
		return patches.RebootSkipped, nil
	})
	l.env.OnActivity(acts.BeginPatchEnforcement, mock.Anything, mock.Anything).Return(func(_ context.Context, id string) (bool, error) {
		l.add("begin-enforcement " + id)
		return id != "e-done", nil
	})
	l.env.OnActivity(acts.ConcludePatchEnforcement, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.ConcludeEnforcementInput) (string, error) {
		l.mu.Lock()
		l.enforcements[in.EnforcementID] = in.Outcome
		l.mu.Unlock()
		l.add("conclude-enforcement " + in.EnforcementID)
		return patches.EnforcementApplied, nil
	})
	l.env.OnActivity(acts.ConcludePatchInstall, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.ConcludePatchInput) (string, error) {
		l.mu.Lock()
		l.out[in.InstallID] = in.Outcome
		l.mu.Unlock()
		l.add("conclude " + in.InstallID)
		return patches.StateInstalled, nil
	})
	return l
}

func (l *laneEnv) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.log = append(l.log, s)
}

func order(id string) workflows.PatchInstallOrder {
	return workflows.PatchInstallOrder{InstallID: id, Request: json.RawMessage(`{"install_id":"` + id + `","package":"p"}`),
		InstallGrant: "g-" + id, RefreshGrant: "r-" + id}
}

// Installs run one after another in arrival order, each followed by a
// re-scan that is stored before the install is concluded; a refused
// install is still re-scanned; a finished install's order runs nothing;
// an idle lane ends.
func TestPatchLaneSerialisesInstallsAndRescansEach(t *testing.T) {
	t.Parallel()
	l := newLaneEnv(t)
	l.env.RegisterDelayedCallback(func() {
		l.env.SignalWorkflow(workflows.SignalPatchInstall, order("i-1"))
		l.env.SignalWorkflow(workflows.SignalPatchInstall, order("i-refused"))
	}, time.Second)
	l.env.RegisterDelayedCallback(func() { l.env.SignalWorkflow(workflows.SignalPatchInstall, order("i-done")) }, time.Minute)
	l.env.ExecuteWorkflow(workflows.PatchLane, workflows.PatchLaneInput{GUID: "g1", Pending: []workflows.PatchInstallOrder{order("i-0")}})
	require.True(t, l.env.IsWorkflowCompleted())
	require.NoError(t, l.env.GetWorkflowError())
	var want []string
	for _, id := range []string{"i-0", "i-1", "i-refused"} {
		want = append(want, "begin "+id,
			"send patch_install_request patch-install:"+id+" grant=g-"+id,
			"send patch_inventory_refresh_request patch-rescan:"+id+" grant=r-"+id,
			"apply patch_inventory_refresh_request",
			"conclude "+id)
	}
	want = append(want, "begin i-done")
	require.Equal(t, want, l.log)
	require.Equal(t, patches.Outcome{Result: &proto.PatchInstallResult{Status: "installed", ExitCode: ptr(0), RebootRequired: true},
		Rescanned: true}, l.out["i-1"])
	require.Equal(t, patches.Outcome{ErrCode: proto.CodeOpUnsupported, ErrMessage: "no installer here", Rescanned: true}, l.out["i-refused"])
}

// A lane that ran its share of installs continues as new with the orders
// still waiting.
func TestPatchLaneContinuesAsNew(t *testing.T) {
	t.Parallel()
	l := newLaneEnv(t)
	var pending []workflows.PatchInstallOrder
	for i := range 52 {
		pending = append(pending, order("i-"+string(rune('A'+i%26))+string(rune('a'+i/26))))
	}
	l.env.ExecuteWorkflow(workflows.PatchLane, workflows.PatchLaneInput{GUID: "g1", Pending: pending})
	require.True(t, l.env.IsWorkflowCompleted())
	err := l.env.GetWorkflowError()
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, err, &can)
	var next workflows.PatchLaneInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &next))
	require.Equal(t, "g1", next.GUID)
	require.Equal(t, pending[50:], next.Pending)
}

func rebootOrder(id string) workflows.PatchInstallOrder {
	return workflows.PatchInstallOrder{Reboot: &workflows.PatchRebootOrder{RebootID: id,
		Request: json.RawMessage(`{"reboot_id":"` + id + `","when_required":true,"forced":false}`), Grant: "g-" + id}}
}

// A reboot order is a step of the lane: it runs after the installs
// queued before it, never during one, is sent as a patch_reboot_request
// with its own grant, gets no re-scan, and its answer is concluded; an
// install queued after it runs after it.
func TestPatchLaneRebootsAfterInstalls(t *testing.T) {
	t.Parallel()
	l := newLaneEnv(t)
	l.env.RegisterDelayedCallback(func() {
		l.env.SignalWorkflow(workflows.SignalPatchInstall, rebootOrder("rb-1"))
		l.env.SignalWorkflow(workflows.SignalPatchInstall, order("i-2"))
	}, time.Second)
	l.env.ExecuteWorkflow(workflows.PatchLane, workflows.PatchLaneInput{GUID: "g1", Pending: []workflows.PatchInstallOrder{order("i-1")}})
	require.True(t, l.env.IsWorkflowCompleted())
	require.NoError(t, l.env.GetWorkflowError())
	install := func(id string) []string {
		return []string{"begin " + id,
			"send patch_install_request patch-install:" + id + " grant=g-" + id,
			"send patch_inventory_refresh_request patch-rescan:" + id + " grant=r-" + id,
			"apply patch_inventory_refresh_request",
			"conclude " + id}
	}
	want := install("i-1")
	want = append(want, "begin-reboot rb-1", "send patch_reboot_request patch-reboot:rb-1 grant=g-rb-1", "conclude-reboot rb-1")
	want = append(want, install("i-2")...)
	require.Equal(t, want, l.log)
	require.Equal(t, patches.RebootOutcome{Result: &proto.PatchRebootResult{Status: proto.PatchRebootSkippedLoggedIn,
		Message: "1 user(s) signed in", SignedIn: []string{"alice"}}}, l.reboots["rb-1"])
}

// An enforcement order in the lane sends the
// patch_policy_enforcement_request between the installs around it, no
// re-scan after it, and records the agent's answer; a finished
// enforcement's order (delivered twice) sends nothing.
func TestPatchLaneEnforces(t *testing.T) {
	t.Parallel()
	l := newLaneEnv(t)
	enforcement := func(id string) workflows.PatchInstallOrder {
		return workflows.PatchInstallOrder{Enforcement: &workflows.PatchEnforcementOrder{EnforcementID: id,
			Request: json.RawMessage(`{"enforcement_id":"` + id + `","mode":"frozen"}`), Grant: "g-" + id}}
	}
	l.env.RegisterDelayedCallback(func() {
		l.env.SignalWorkflow(workflows.SignalPatchInstall, enforcement("e-1"))
		l.env.SignalWorkflow(workflows.SignalPatchInstall, enforcement("e-done"))
		l.env.SignalWorkflow(workflows.SignalPatchInstall, order("i-2"))
	}, time.Second)
	l.env.ExecuteWorkflow(workflows.PatchLane, workflows.PatchLaneInput{GUID: "g1", Pending: []workflows.PatchInstallOrder{order("i-1")}})
	require.True(t, l.env.IsWorkflowCompleted())
	require.NoError(t, l.env.GetWorkflowError())
	install := func(id string) []string {
		return []string{"begin " + id,
			"send patch_install_request patch-install:" + id + " grant=g-" + id,
			"send patch_inventory_refresh_request patch-rescan:" + id + " grant=r-" + id,
			"apply patch_inventory_refresh_request",
			"conclude " + id}
	}
	want := install("i-1")
	want = append(want, "begin-enforcement e-1", "send patch_policy_enforcement_request patch-enforcement:e-1 grant=g-e-1",
		"conclude-enforcement e-1", "begin-enforcement e-done")
	want = append(want, install("i-2")...)
	require.Equal(t, want, l.log)
	require.Equal(t, patches.EnforcementOutcome{Result: &proto.PatchPolicyEnforcementResult{Mode: proto.PatchModeFrozen,
		Status: proto.PatchEnforcementApplied, Message: "set", Values: []proto.PatchPolicyValue{}}}, l.enforcements["e-1"])
}

func ptr[T any](v T) *T { return &v }
