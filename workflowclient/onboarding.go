package workflowclient

import (
	"context"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/grants"
	"github.com/cairn-rmm/cairn/internal/onboarding"
	"github.com/cairn-rmm/cairn/workflows"
)

// OnboardingStarter starts redeploy jobs' workflows and cancels them.
type OnboardingStarter struct {
	Client client.Client
	// Grants signs the redeploy request where the operator was authorised.
	Grants Granter
}

// Start starts the job's workflow on the site queue of the device.
func (s OnboardingStarter) Start(ctx context.Context, p onboarding.Plan) error {
	siteSlug := p.SiteSlug
	limit := time.Until(p.RedeployJob.ExpiresAt) + 10*time.Minute
	grant, err := s.Grants.Sign(ctx, grants.Operation{GUID: p.RedeployJob.DeviceGUID, OperationID: p.RedeployJob.OperationID, Type: proto.EventAgentRedeploy,
		Payload: p.Payload, Actor: p.RedeployJob.RequestedBy}, limit)
	if err != nil {
		return err
	}
	_, err = Start(ctx, s.Client, client.StartWorkflowOptions{
		ID:                       workflows.OnboardingWorkflowID(p.RedeployJob.ID),
		TaskQueue:                workflows.SiteTaskQueue(siteSlug),
		WorkflowExecutionTimeout: limit,
		WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes:    deviceAttrs(string(p.RedeployJob.DeviceGUID), siteSlug, workflows.JobKindOnboarding),
	}, workflows.OnboardingRedeploy, workflows.OnboardingInput{JobID: p.RedeployJob.ID, GUID: p.RedeployJob.DeviceGUID, OperationID: p.RedeployJob.OperationID,
		Payload: p.Payload, Grant: grant, ExpiresAt: p.RedeployJob.ExpiresAt})
	return err
}

// Cancel tells a job's workflow to stop.
func (s OnboardingStarter) Cancel(ctx context.Context, jobID string) error {
	return Signal(ctx, s.Client, workflows.OnboardingWorkflowID(jobID), workflows.SignalOnboardingCancel, nil)
}
