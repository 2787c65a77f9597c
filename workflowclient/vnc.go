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
	"github.com/cairn-rmm/cairn/internal/rdp"
	"github.com/cairn-rmm/cairn/workflows"
)

// DesktopStarter starts and reaches remote desktop sessions
// (RemoteDesktop). It runs where the operator was authorised, so it
// grants the session's vnc_start and vnc_stop.
type DesktopStarter struct {
	Client client.Client
	Grants Granter
}

// desktopLife bounds one session's workflow.
const desktopLife = 25 * time.Hour

// Start starts the session's workflow on the device's site queue.
func (s DesktopStarter) Start(ctx context.Context, in workflows.DesktopInput) error {
	var err error
	if in.Protocol == rdp.Protocol {
		// An RDP session asks the agent for rdp_start and, at most once,
		// rdp_transport_recovery (rule 5); its bridge runs in the Engine.
		in.StartGrant, err = s.Grants.Sign(ctx, grants.Operation{GUID: in.Target.GUID, OperationID: cairn.OperationID(in.SessionID + ":start"),
			Type: proto.EventRDPStart, Payload: workflows.DesktopRDPPayload(in.SessionID), Actor: in.Actor}, desktopLife)
		if err != nil {
			return err
		}
		in.RecoveryGrant, err = s.Grants.Sign(ctx, grants.Operation{GUID: in.Target.GUID, OperationID: cairn.OperationID(in.SessionID + ":recovery"),
			Type: proto.EventRDPTransportRecovery, Payload: workflows.DesktopRDPPayload(in.SessionID), Actor: in.Actor}, desktopLife)
		if err != nil {
			return err
		}
		return s.start(ctx, in)
	}
	in.StartGrant, err = s.Grants.Sign(ctx, grants.Operation{GUID: in.Target.GUID, OperationID: cairn.OperationID(in.SessionID + ":start"),
		Type: proto.EventVNCStart, Payload: workflows.DesktopStartPayload(in.SessionID), Actor: in.Actor}, desktopLife)
	if err != nil {
		return err
	}
	in.StopGrant, err = s.Grants.Sign(ctx, grants.Operation{GUID: in.Target.GUID, OperationID: cairn.OperationID(in.SessionID + ":stop"),
		Type: proto.EventVNCStop, Payload: workflows.DesktopStopPayload(in.SessionID), Actor: in.Actor}, desktopLife)
	if err != nil {
		return err
	}
	return s.start(ctx, in)
}

func (s DesktopStarter) start(ctx context.Context, in workflows.DesktopInput) error {
	_, err := Start(ctx, s.Client, client.StartWorkflowOptions{
		ID:                       workflows.RemoteDesktopWorkflowID(in.SessionID),
		TaskQueue:                workflows.SiteTaskQueue(in.Target.SiteSlug),
		WorkflowExecutionTimeout: desktopLife,
		WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes:    deviceAttrs(string(in.Target.GUID), in.Target.SiteSlug, workflows.JobKindRemoteDesktop),
	}, workflows.RemoteDesktop, in)
	return err
}

// AwaitReady waits (within ctx) until the establishment is ready or
// failed, and returns its state.
func (s DesktopStarter) AwaitReady(ctx context.Context, sessionID string) (workflows.DesktopStatus, error) {
	var st workflows.DesktopStatus
	h, err := s.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: workflows.RemoteDesktopWorkflowID(sessionID),
		UpdateName: workflows.UpdateDesktopAwaitReady, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err == nil {
		err = h.Get(ctx, &st)
	}
	if err != nil {
		// The workflow may have ended (failed) between start and update:
		// its state is then its last Query answer.
		if q, qerr := s.State(ctx, sessionID); qerr == nil && q != nil {
			return *q, nil
		}
		if u := Unavailable(err); u != nil {
			return st, u
		}
		return st, err
	}
	return st, nil
}

// State reads a session's state (nil: no such workflow).
func (s DesktopStarter) State(ctx context.Context, sessionID string) (*workflows.DesktopStatus, error) {
	v, err := s.Client.QueryWorkflow(ctx, workflows.RemoteDesktopWorkflowID(sessionID), "", workflows.QueryDesktopState)
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
	var st workflows.DesktopStatus
	if err := v.Get(&st); err != nil {
		return nil, cairn.Wrap(err, cairn.ECodeInternal, "the session's state could not be read")
	}
	return &st, nil
}

// Signal sends one of the session's signals (a session that ended
// already takes none, and that is not an error).
func (s DesktopStarter) Signal(ctx context.Context, sessionID, signal string, arg any) error {
	return Signal(ctx, s.Client, workflows.RemoteDesktopWorkflowID(sessionID), signal, arg)
}
