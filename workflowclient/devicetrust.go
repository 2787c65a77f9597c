package workflowclient

import (
	"cmp"
	"context"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/cairn-rmm/cairn/workflows"
)

// TrustStarter starts DeviceTrustAction workflows.
type TrustStarter struct {
	Client client.Client
	// TaskQueue is EngineTaskQueue when empty (tests use their own).
	TaskQueue string
}

// Start starts the follow-up of a committed action; starting it again for
// the same action is not an error.
func (s TrustStarter) Start(ctx context.Context, in workflows.TrustActionInput) error {
	attrs := []temporal.SearchAttributeUpdate{
		temporal.NewSearchAttributeKeyKeyword(workflows.SearchAttrDeviceGUID).ValueSet(string(in.GUID)),
		temporal.NewSearchAttributeKeyKeyword(workflows.SearchAttrJobKind).ValueSet(workflows.JobKindTrust(in.Action)),
	}
	if in.SiteSlug != "" {
		attrs = append(attrs, temporal.NewSearchAttributeKeyKeyword(workflows.SearchAttrSiteSlug).ValueSet(in.SiteSlug))
	}
	_, err := Start(ctx, s.Client, client.StartWorkflowOptions{
		ID:                    workflows.DeviceTrustWorkflowID(string(in.GUID), in.Action, in.TokenVersion),
		TaskQueue:             cmp.Or(s.TaskQueue, workflows.EngineTaskQueue),
		WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes: temporal.NewSearchAttributes(attrs...),
	}, workflows.DeviceTrustAction, in)
	return err
}
