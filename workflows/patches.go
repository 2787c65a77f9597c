package workflows

import (
	"encoding/json"
	"errors"
	"github.com/cairn-rmm/cairn"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/agentgateway"
	"github.com/cairn-rmm/cairn/internal/patches"
)

// PatchLaneWorkflowID names a device's patch lane: one per device, so its
// installs run one after another (SPEC agent behaviour 10).
func PatchLaneWorkflowID(guid string) string { return "patch-lane:" + guid }

// SignalPatchInstall hands an install to a lane (PatchInstallOrder);
// starters use signal-with-start, so the lane exists once an install
// waits for it.
const SignalPatchInstall = "patch-install"

// JobKindPatchInstall is the JobKind search attribute of patch lanes.
const JobKindPatchInstall = "patch_install"

// Patch lane timing. An install may take long (a kernel, a cumulative
// update); the socket holder heartbeats it. An idle lane ends and the
// next install starts a new one; a lane continues as new after
// patchLaneRunsPerHistory installs to keep its history short.
const (
	PatchInstallTimeout     = 2 * time.Hour
	PatchRescanTimeout      = 10 * time.Minute
	PatchLaneIdle           = time.Hour
	patchLaneRunsPerHistory = 50
)

// PatchLaneInput is the lane's device and the orders a previous run
// handed over (continue-as-new).
type PatchLaneInput struct {
	GUID    string
	Pending []PatchInstallOrder
	// Idle is how long the lane waits for another order before it ends
	// (0: PatchLaneIdle).
	Idle time.Duration
}

// PatchInstallOrder is one install for the lane: the request and its
// re-scan, each granted by the API that authorised the install.
type PatchInstallOrder struct {
	InstallID string
	// Request is the patch_install_request payload; InstallGrant signs it
	// under operation ID "patch-install:<install_id>".
	Request      json.RawMessage
	InstallGrant string
	// RefreshGrant signs the patch_inventory_refresh_request that follows
	// under operation ID "patch-rescan:<install_id>".
	RefreshGrant string
	// Reboot, when set, makes the order a reboot instead of an install
	// (InstallID empty): it runs after the orders ahead of it, never
	// during an install.
	Reboot *PatchRebootOrder `json:",omitempty"`
	// Enforcement, when set, makes the order a
	// patch_policy_enforcement_request (InstallID empty).
	Enforcement *PatchEnforcementOrder `json:",omitempty"`
}

// PatchEnforcementOrder is one patch_policy_enforcement_request for the
// lane, granted by the evaluation that asked for it.
type PatchEnforcementOrder struct {
	EnforcementID string
	// Request is the payload; Grant signs it under operation ID
	// "patch-enforcement:<enforcement_id>".
	Request json.RawMessage
	Grant   string
}

// PatchEnforcementOperationID is an enforcement request's operation ID.
func PatchEnforcementOperationID(id string) string { return "patch-enforcement:" + id }

// PatchEnforcementTimeout bounds an enforcement request: a few registry
// writes.
const PatchEnforcementTimeout = 10 * time.Minute

// versionPatchEnforcement names the workflow.GetVersion change that
// brought enforcement orders to the lane.
const versionPatchEnforcement = "patch-enforcement"

// PatchRebootOrder is one patch_reboot_request for the lane, granted by
// the API or evaluation that asked for it.
type PatchRebootOrder struct {
	RebootID string
	// Request is the patch_reboot_request payload; Grant signs it under
	// operation ID "patch-reboot:<reboot_id>".
	Request json.RawMessage
	Grant   string
}

// PatchRebootOperationID is a reboot request's operation ID.
func PatchRebootOperationID(rebootID string) string { return "patch-reboot:" + rebootID }

// PatchRebootTimeout bounds a reboot request: the agent waits for an
// install in flight on the machine, then answers at once.
const PatchRebootTimeout = 10 * time.Minute

// versionPatchLaneKeepsOrders names the workflow.GetVersion change after
// which an idle lane keeps every order that arrives together.
const versionPatchLaneKeepsOrders = "patch-lane-keeps-orders"

// awaitOrders waits up to idle for orders and returns every one waiting
// (none: the lane stayed idle).
func awaitOrders(ctx workflow.Context, orders workflow.ReceiveChannel, idle time.Duration) []PatchInstallOrder {
	timerCtx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	var got []PatchInstallOrder
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(workflow.NewTimer(timerCtx, idle), func(workflow.Future) {})
	sel.AddReceive(orders, func(c workflow.ReceiveChannel, _ bool) {
		var first PatchInstallOrder
		c.Receive(ctx, &first)
		got = append(got, first)
		for {
			var o PatchInstallOrder
			if !c.ReceiveAsync(&o) {
				break
			}
			got = append(got, o)
		}
	})
	sel.Select(ctx)
	return got
}

// versionPatchReboot names the workflow.GetVersion change that brought
// reboot orders to the lane.
const versionPatchReboot = "patch-reboot"

// PatchInstallOperationID and PatchRescanOperationID are the command
// path's operation IDs of an install's request and its re-scan.
func PatchInstallOperationID(installID string) string { return "patch-install:" + installID }

// PatchRescanOperationID is the re-scan's operation ID.
func PatchRescanOperationID(installID string) string { return "patch-rescan:" + installID }

// PatchLane runs a device's installs in the order they arrive: each is
// marked running, sent to the agent, followed by a fresh patch scan
// stored like any refresh, and concluded from that scan ("installed" only
// when the scan shows it). An order for an install that already finished
// is skipped, so a redelivered order installs nothing twice.
func PatchLane(ctx workflow.Context, in PatchLaneInput) error {
	orders := workflow.GetSignalChannel(ctx, SignalPatchInstall)
	// Lanes before this change kept only the last of the orders that
	// reached an idle lane together (an install followed by its reboot
	// lost the install); they replay as they ran.
	keepsOrders := workflow.GetVersion(ctx, versionPatchLaneKeepsOrders, workflow.DefaultVersion, 1) >= 1
	queue := append([]PatchInstallOrder(nil), in.Pending...)
	done := 0
	for {
		for {
			var o PatchInstallOrder
			if !orders.ReceiveAsync(&o) {
				break
			}
			queue = append(queue, o)
		}
		if len(queue) == 0 {
			idle := in.Idle
			if idle <= 0 {
				idle = PatchLaneIdle
			}
			if keepsOrders {
				got := awaitOrders(ctx, orders, idle)
				if len(got) == 0 {
					return nil
				}
				queue = append(queue, got...)
				continue
			}
			o, signalled := awaitChange[PatchInstallOrder](ctx, orders, idle)
			if !signalled {
				return nil
			}
			queue = append(queue, o)
			continue
		}
		if done >= patchLaneRunsPerHistory {
			return workflow.NewContinueAsNewError(ctx, PatchLane, PatchLaneInput{GUID: in.GUID, Pending: queue, Idle: in.Idle})
		}
		o := queue[0]
		queue = queue[1:]
		run := runPatchInstall
		switch {
		case o.Enforcement != nil:
			run = runPatchEnforcement
		case o.Reboot != nil:
			run = runPatchReboot
		}
		if err := run(ctx, in.GUID, o); err != nil {
			return err
		}
		done++
	}
}

// runPatchInstall runs one order.
func runPatchInstall(ctx workflow.Context, guid string, o PatchInstallOrder) error {
	local := withRecording(ctx)
	var acts *activities.PatchInstalls
	var cmds *activities.AgentCommands
	var ops *activities.Operations
	var begun activities.PatchInstallBegun
	if err := workflow.ExecuteLocalActivity(local, acts.BeginPatchInstall, o.InstallID).Get(ctx, &begun); err != nil {
		return err
	}
	if !begun.Run {
		return nil
	}
	var out patches.Outcome
	var reply agentgateway.Reply
	err := workflow.ExecuteActivity(withSending(ctx, PatchInstallTimeout, ""), cmds.SendToAgent, activities.CommandInput{
		OperationID: cairn.OperationID(PatchInstallOperationID(o.InstallID)), GUID: cairn.DeviceGUID(guid), Type: proto.EventPatchInstall,
		Payload: o.Request, Grant: o.InstallGrant,
	}).Get(ctx, &reply)
	if err == nil {
		var res proto.PatchInstallResult
		if jerr := json.Unmarshal(reply.Payload, &res); jerr != nil {
			out.ErrCode, out.ErrMessage = proto.CodeOpFailed, "the agent's answer is malformed: "+jerr.Error()
		} else {
			out.Result = &res
		}
	} else {
		out.ErrCode, out.ErrMessage = operationFailure(err, PatchInstallTimeout)
	}
	// Inventory refreshes after each attempt, whatever it did.
	var scan agentgateway.Reply
	err = workflow.ExecuteActivity(withSending(ctx, PatchRescanTimeout, ""), cmds.SendToAgent, activities.CommandInput{
		OperationID: cairn.OperationID(PatchRescanOperationID(o.InstallID)), GUID: cairn.DeviceGUID(guid), Type: proto.EventPatchRefresh,
		Payload: json.RawMessage(`{}`), Grant: o.RefreshGrant,
	}).Get(ctx, &scan)
	if err == nil {
		err = workflow.ExecuteLocalActivity(local, ops.ApplyAgentAnswer, activities.ApplyInput{
			GUID: cairn.DeviceGUID(guid), Type: proto.EventPatchRefresh, Payload: scan.Payload,
		}).Get(ctx, nil)
	}
	if err == nil {
		out.Rescanned = true
	} else {
		_, out.RescanErr = operationFailure(err, PatchRescanTimeout)
	}
	var state string
	err = workflow.ExecuteLocalActivity(local, acts.ConcludePatchInstall, activities.ConcludePatchInput{
		InstallID: o.InstallID, Outcome: out}).Get(ctx, &state)
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.NonRetryable() {
		// The install is gone (its device was purged): the lane goes on.
		return nil
	}
	return err
}

// runPatchReboot runs a reboot order: marked running, sent to the agent
// (which skips it while a user is signed in unless forced), its answer
// recorded. No re-scan follows: the machine is going down.
func runPatchReboot(ctx workflow.Context, guid string, o PatchInstallOrder) error {
	if workflow.GetVersion(ctx, versionPatchReboot, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return nil // no lane before this change was handed a reboot
	}
	local := withRecording(ctx)
	var acts *activities.PatchInstalls
	var cmds *activities.AgentCommands
	var run bool
	if err := workflow.ExecuteLocalActivity(local, acts.BeginPatchReboot, o.Reboot.RebootID).Get(ctx, &run); err != nil {
		return err
	}
	if !run {
		return nil
	}
	var out patches.RebootOutcome
	var reply agentgateway.Reply
	err := workflow.ExecuteActivity(withSending(ctx, PatchRebootTimeout, ""), cmds.SendToAgent, activities.CommandInput{
		OperationID: cairn.OperationID(PatchRebootOperationID(o.Reboot.RebootID)), GUID: cairn.DeviceGUID(guid), Type: proto.EventPatchReboot,
		Payload: o.Reboot.Request, Grant: o.Reboot.Grant,
	}).Get(ctx, &reply)
	if err == nil {
		var res proto.PatchRebootResult
		if jerr := json.Unmarshal(reply.Payload, &res); jerr != nil {
			out.ErrCode, out.ErrMessage = proto.CodeOpFailed, "the agent's answer is malformed: "+jerr.Error()
		} else {
			out.Result = &res
		}
	} else {
		out.ErrCode, out.ErrMessage = operationFailure(err, PatchRebootTimeout)
	}
	err = workflow.ExecuteLocalActivity(local, acts.ConcludePatchReboot, activities.ConcludeRebootInput{
		RebootID: o.Reboot.RebootID, Outcome: out}).Get(ctx, nil)
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.NonRetryable() {
		return nil // the reboot is gone (its device was purged)
	}
	return err
}

// runPatchEnforcement runs an enforcement order: marked running, sent to
// the agent (which sets or restores Windows Update policy values), its
// answer recorded. No re-scan follows: the inventory is unchanged.
func runPatchEnforcement(ctx workflow.Context, guid string, o PatchInstallOrder) error {
	if workflow.GetVersion(ctx, versionPatchEnforcement, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return nil // no lane before this change was handed an enforcement
	}
	local := withRecording(ctx)
	var acts *activities.PatchInstalls
	var cmds *activities.AgentCommands
	var run bool
	if err := workflow.ExecuteLocalActivity(local, acts.BeginPatchEnforcement, o.Enforcement.EnforcementID).Get(ctx, &run); err != nil {
		return err
	}
	if !run {
		return nil
	}
	var out patches.EnforcementOutcome
	var reply agentgateway.Reply
	err := workflow.ExecuteActivity(withSending(ctx, PatchEnforcementTimeout, ""), cmds.SendToAgent, activities.CommandInput{
		OperationID: cairn.OperationID(PatchEnforcementOperationID(o.Enforcement.EnforcementID)), GUID: cairn.DeviceGUID(guid),
		Type: proto.EventPatchPolicyEnforcement, Payload: o.Enforcement.Request, Grant: o.Enforcement.Grant,
	}).Get(ctx, &reply)
	if err == nil {
		var res proto.PatchPolicyEnforcementResult
		if jerr := json.Unmarshal(reply.Payload, &res); jerr != nil {
			out.ErrCode, out.ErrMessage = proto.CodeOpFailed, "the agent's answer is malformed: "+jerr.Error()
		} else {
			out.Result = &res
		}
	} else {
		out.ErrCode, out.ErrMessage = operationFailure(err, PatchEnforcementTimeout)
	}
	err = workflow.ExecuteLocalActivity(local, acts.ConcludePatchEnforcement, activities.ConcludeEnforcementInput{
		EnforcementID: o.Enforcement.EnforcementID, Outcome: out}).Get(ctx, nil)
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.NonRetryable() {
		return nil // the enforcement is gone (its device was purged)
	}
	return err
}

// JobPatchPolicies is the maintenance job that evaluates patch policies:
// approved updates of devices inside their maintenance window become
// installs in each device's lane. An offline device's installs wait in
// its lane; a window that closes stops new installs (the next evaluation
// outside it creates none), never one in flight.
const JobPatchPolicies = "patch_policies"

// PatchPolicyEvery is how often the Schedule evaluates patch policies.
const PatchPolicyEvery = 15 * time.Minute

// Patch install job timing: a patch_install fire looks whether its
// installs ended first after patchRunRecheckMin, then less and less
// often, up to patchRunRecheckMax (an offline device's installs may wait
// hours in its lane; the fire's history stays short).
const (
	patchRunRecheckMin = time.Second
	patchRunRecheckMax = time.Minute
)

// runPatchInstallJob runs a patch_install job's fire once it holds its
// sites' lane slots: the run's installs are made (once per run) and
// handed to the devices' lanes, and the fire waits until every one has
// ended, so the slots stay held while they install; each device's part
// and the run are settled as they end.
func runPatchInstallJob(ctx workflow.Context, fire activities.FireInput) error {
	// The heartbeat timeout retries an attempt lost with its Engine (kill
	// -9) within seconds rather than after StartToClose: a run recorded
	// but not yet handed to its lanes would otherwise wait ten minutes.
	act := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		HeartbeatTimeout:    30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
	})
	var a *activities.PatchInstalls
	var started bool
	if err := workflow.ExecuteActivity(act, a.StartPatchRun, fire).Get(ctx, &started); err != nil || !started {
		return err
	}
	wait := patchRunRecheckMin
	for {
		var open int
		if err := workflow.ExecuteActivity(act, a.SettlePatchRun, fire.RunID).Get(ctx, &open); err != nil {
			return err
		}
		if open == 0 {
			return nil
		}
		if err := workflow.Sleep(ctx, wait); err != nil {
			return err
		}
		wait = min(2*wait, patchRunRecheckMax)
	}
}
