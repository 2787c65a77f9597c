package workflows

import (
	"strconv"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
)

// DeviceTrustWorkflowID names the follow-up of one trust action. Every
// action but purge bumps the token version, and purge follows at most one
// action at its version, so guid, action and version name it uniquely:
// a retried start is a no-op.
func DeviceTrustWorkflowID(guid, action string, tokenVersion int32) string {
	return "trust:" + guid + ":" + action + ":" + strconv.FormatInt(int64(tokenVersion), 10)
}

// TrustActionInput is a committed trust action (what the route applied).
type TrustActionInput = activities.TrustActionInput

// JobKindTrust is the JobKind search attribute of a trust action.
func JobKindTrust(action string) string { return "trust_" + action }

// DeviceTrustAction carries out what follows a committed trust action:
// drop the agent's socket and tear down its tunnel (not for
// unquarantine), then tell consoles;
// record the operator's action in the device's history alongside. Each
// step is retried until it is done: the state change already happened,
// and its consequences must not be lost to a replica restart.
func DeviceTrustAction(ctx workflow.Context, in TrustActionInput) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
	})
	var a *activities.DeviceTrust
	recorded := workflow.ExecuteActivity(ctx, a.RecordTrustActivity, in)
	if in.Action != devicetrust.ActionUnquarantine {
		if err := workflow.ExecuteActivity(ctx, a.DropSocket, in).Get(ctx, nil); err != nil {
			return err
		}
		// Issue 23: the device's WireGuard tunnel goes with its trust.
		if workflow.GetVersion(ctx, "tunnel-teardown", workflow.DefaultVersion, 1) == 1 {
			var t *activities.Tunnels
			if err := workflow.ExecuteActivity(ctx, t.TearDownTunnel, in).Get(ctx, nil); err != nil {
				return err
			}
		}
	}
	if err := workflow.ExecuteActivity(ctx, a.PublishTrustChange, in).Get(ctx, nil); err != nil {
		return err
	}
	return recorded.Get(ctx, nil)
}
