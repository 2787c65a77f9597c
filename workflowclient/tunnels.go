package workflowclient

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/grants"
	"github.com/cairn-rmm/cairn/workflows"
)

// TunnelStarter starts and reads tunnel establishments (TunnelEstablish).
// It runs where the operator was authorised, so it grants the
// vpn_tunnel_start request the workflow sends.
type TunnelStarter struct {
	Client client.Client
	Grants Granter
}

// tunnelLife bounds one establishment: every attempt and the waits.
const tunnelLife = workflows.TunnelAttempts*6*time.Minute + 5*time.Minute

// Start starts the device's establishment on its site queue, or joins
// the one running (the workflow ID is one per device); it returns the
// workflow ID.
func (s TunnelStarter) Start(ctx context.Context, in workflows.TunnelInput) (string, error) {
	grant, err := s.Grants.Sign(ctx, grants.Operation{GUID: in.Target.GUID, OperationID: cairn.OperationID(in.OperationID), Type: proto.EventVPNTunnelStart,
		Payload: []byte(`{}`), Actor: in.Actor}, tunnelLife)
	if err != nil {
		return "", err
	}
	in.Grant = grant
	id := workflows.TunnelWorkflowID(string(in.Target.GUID))
	_, err = Start(ctx, s.Client, client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                workflows.SiteTaskQueue(in.Target.SiteSlug),
		WorkflowExecutionTimeout: tunnelLife,
		WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		TypedSearchAttributes:    deviceAttrs(string(in.Target.GUID), in.Target.SiteSlug, workflows.JobKindTunnel),
	}, workflows.TunnelEstablish, in)
	return id, err
}

// State reads the latest establishment of the device: its state, or nil
// when there never was one.
func (s TunnelStarter) State(ctx context.Context, guid string) (*workflows.TunnelStatus, error) {
	v, err := s.Client.QueryWorkflow(ctx, workflows.TunnelWorkflowID(guid), "", workflows.QueryTunnelState)
	if err != nil {
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return nil, nil
		}
		if u := Unavailable(err); u != nil {
			return nil, u
		}
		return nil, err
	}
	var st workflows.TunnelStatus
	if err := v.Get(&st); err != nil {
		return nil, cairn.Wrap(err, cairn.ECodeInternal, "the establishment's state could not be read")
	}
	return &st, nil
}
