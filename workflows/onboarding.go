package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/agentgateway"
	"github.com/cairn-rmm/cairn/internal/onboarding"
)

// OnboardingWorkflowID names the workflow of a redeploy job.
func OnboardingWorkflowID(jobID string) string { return "onboarding:" + jobID }

// JobKindOnboarding is the JobKind search attribute of redeploy jobs.
const JobKindOnboarding = "onboarding"

// SignalOnboardingCancel cancels a redeploy job (no payload: the job's
// own workflow is the only one it names).
const SignalOnboardingCancel = "onboarding_cancel"

// Onboarding timing: how long the redeploy waits for a connected agent
// to take the code, and how often it looks for the new enrollment (a
// poll of PostgreSQL, since the enrollment is the agent's own request on
// whichever replica; the code's expiry bounds it).
const (
	OnboardingSendTimeout = 2 * time.Minute
	onboardingRecheck     = 5 * time.Second
	// The recheck backs off to onboardingRecheckMax (an enrollment is
	// mostly seen within seconds of the agent taking the code, or it
	// waits on a manual install), and a run continues as new after
	// onboardingChecksPerRun checks: a code may live 7 days, and a check
	// every 5 s for a week is about 850,000 events, past Temporal's
	// history limit; this way a run stays under 3,000.
	onboardingRecheckMax   = time.Minute
	onboardingChecksPerRun = 400
	// onboardingBoundedVersion guards the backoff and the continue-as-new
	// (histories before them recheck every 5 s in one run).
	onboardingBoundedVersion = "onboarding-bounded-wait"
)

// OnboardingInput is one redeploy job: the request to the agent and its
// grant are made by the API, where the operator was authorised.
type OnboardingInput struct {
	JobID       string
	GUID        cairn.DeviceGUID
	OperationID cairn.OperationID
	Payload     []byte
	Grant       string
	ExpiresAt   time.Time
	// Waiting marks a run continued as new: the request was sent and the
	// status recorded by an earlier run; this one only waits.
	Waiting bool `json:",omitempty"`
}

// OnboardingRedeploy runs a redeploy job on the device's site queue: it
// sends the new code to the agent (agent_redeploy_request over the
// command path; an agent that is not connected within
// OnboardingSendTimeout leaves the job agent_offline, its code waiting
// for a manual install), then waits until the device has enrolled with
// the code (enrolled), the code expires (expired) or an operator cancels
// (canceled). It returns the job's final status.
func OnboardingRedeploy(ctx workflow.Context, in OnboardingInput) (string, error) {
	rec := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second},
	})
	var ob *activities.Onboarding
	set := func(status, errText string) error {
		return workflow.ExecuteActivity(rec, ob.SetOnboardingStatus, activities.OnboardingStatusInput{JobID: in.JobID, Status: status,
			Error: errText}).Get(ctx, nil)
	}
	cancel := workflow.GetSignalChannel(ctx, SignalOnboardingCancel)
	canceled := false
	onCancel := func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil); canceled = true }

	bounded := workflow.GetVersion(ctx, onboardingBoundedVersion, workflow.DefaultVersion, 1) == 1
	if !in.Waiting {
		if status, done, err := sendRedeploy(ctx, in, set, cancel, onCancel, &canceled); done {
			return status, err
		}
	}
	recheck := onboardingRecheck
	for checks := 0; workflow.Now(ctx).Before(in.ExpiresAt); checks++ {
		if bounded && checks == onboardingChecksPerRun {
			// A cancel that came in is this run's to honour: signals left
			// in the channel would not reach the next run.
			if cancel.ReceiveAsync(nil) {
				return onboarding.StatusCanceled, set(onboarding.StatusCanceled, "")
			}
			next := in
			next.Waiting = true
			return "", workflow.NewContinueAsNewError(ctx, OnboardingRedeploy, next)
		}
		var enrolled bool
		if err := workflow.ExecuteActivity(rec, ob.OnboardingEnrolled, in.JobID).Get(ctx, &enrolled); err != nil {
			return "", err
		}
		if enrolled {
			return onboarding.StatusEnrolled, set(onboarding.StatusEnrolled, "")
		}
		wait := min(recheck, in.ExpiresAt.Sub(workflow.Now(ctx)))
		if bounded {
			recheck = min(2*recheck, onboardingRecheckMax)
		}
		timerCtx, stopTimer := workflow.WithCancel(ctx)
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(workflow.NewTimer(timerCtx, max(wait, time.Second)), func(workflow.Future) {})
		sel.AddReceive(cancel, onCancel)
		sel.Select(ctx)
		stopTimer()
		if canceled {
			return onboarding.StatusCanceled, set(onboarding.StatusCanceled, "")
		}
	}
	return onboarding.StatusExpired, set(onboarding.StatusExpired, "")
}

// sendRedeploy sends the request to the agent and records what came of
// it; done is true when the job ended there (canceled, or refused).
func sendRedeploy(ctx workflow.Context, in OnboardingInput, set func(status, errText string) error,
	cancel workflow.ReceiveChannel, onCancel func(workflow.ReceiveChannel, bool), canceled *bool) (status string, done bool, err error) {
	var cmds *activities.AgentCommands
	sendCtx, stopSend := workflow.WithCancel(ctx)
	sent := workflow.ExecuteActivity(withSending(sendCtx, OnboardingSendTimeout, ""), cmds.SendToAgent, activities.CommandInput{
		OperationID: in.OperationID, GUID: in.GUID, Type: proto.EventAgentRedeploy, Payload: in.Payload, Grant: in.Grant})
	var sendErr error
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(sent, func(f workflow.Future) { sendErr = f.Get(ctx, new(agentgateway.Reply)) })
	sel.AddReceive(cancel, onCancel)
	sel.Select(ctx)
	stopSend()
	if *canceled {
		return onboarding.StatusCanceled, true, set(onboarding.StatusCanceled, "")
	}
	status, errText := onboarding.StatusSent, ""
	if sendErr != nil {
		code, message := operationFailure(sendErr, OnboardingSendTimeout)
		var app *temporal.ApplicationError
		offline := code == ECodeOperationTimedOut || (errors.As(sendErr, &app) && app.Type() == cairn.ECodeAgentSocketMissing)
		if !offline {
			// The device is no longer trusted, the grant was refused, or
			// the agent refused the request: nothing will enroll.
			return onboarding.StatusFailed, true, set(onboarding.StatusFailed, code+": "+message)
		}
		status, errText = onboarding.StatusAgentOffline, message
	}
	if err := set(status, errText); err != nil {
		return "", true, err
	}
	return "", false, nil
}
