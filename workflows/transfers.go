package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/grants"
	"github.com/cairn-rmm/cairn/internal/transfers"
)

// File transfer names.
const (
	// SignalFileTransferChanged tells a transfer that a route changed its
	// record (it ended, or was cancelled); the workflow re-reads it.
	SignalFileTransferChanged = "file-transfer-changed"
	// JobKindFileTransfer is the JobKind search attribute of transfers.
	JobKindFileTransfer = "file_transfer"
	// DefaultTransferStall: a transfer that has not changed this long is
	// asked of its agent again (it restarted and lost its work);
	// transferResends such requests later it fails transfer_stalled.
	DefaultTransferStall = 5 * time.Minute
	transferResends      = 3
	// transferRecheck re-reads the record this often, in case a signal was
	// lost (the Engine died between recording and signalling).
	transferRecheck = 30 * time.Second
	// maxTransferLife bounds a workflow: transfer, retention and slack.
	maxTransferLife = 7 * 24 * time.Hour
)

// FileTransferWorkflowID names the workflow of one transfer.
func FileTransferWorkflowID(transferID string) string { return "file-transfer:" + transferID }

// FileTransferInput is one transfer.
type FileTransferInput struct {
	TransferID string
	Target     devices.OperationTarget
	// Request is the proto.TransferRequest sent to the agent.
	Request json.RawMessage
	Kind    string // file_upload, file_download
	Summary string
	Actor   string
	// Stall and Retention: zero takes DefaultTransferStall and
	// transfers.DefaultRetention.
	Stall     time.Duration
	Retention time.Duration
	// Grant authorises Request to the device under TransferID
	// (internal/grants); TransferStarter signs it.
	Grant string
}

// FileTransfer sends the transfer's request to the agent through the
// command path, then follows the record the agent's callbacks keep until
// the transfer ends: a signal from a route or a periodic re-read wakes it.
// A transfer that stops changing (the agent restarted) is requested again
// (a new operation ID, so the agent acts instead of replaying its
// answer); the agent asks the status and resumes. Once it ended the
// device's activity row is closed, an upload's staged items are deleted,
// and a download's content is deleted after the retention period by a
// durable timer (the maintenance sweep catches any this misses).
func FileTransfer(ctx workflow.Context, in FileTransferInput) (string, error) {
	stall := in.Stall
	if stall <= 0 {
		stall = DefaultTransferStall
	}
	retention := in.Retention
	if retention <= 0 {
		retention = transfers.DefaultRetention
	}
	local := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout:    30 * time.Second,
		ScheduleToCloseTimeout: 10 * time.Minute,
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: 30 * time.Second},
	})
	var ops *activities.Operations
	var cmds *activities.AgentCommands
	var ft *activities.FileTransfers

	meta := map[string]any{"transfer_id": in.TransferID}
	var activityID int64
	if err := workflow.ExecuteLocalActivity(local, ops.BeginOperation, activities.OperationRecord{
		Target: in.Target, Kind: in.Kind, Summary: in.Summary, Actor: in.Actor, Meta: meta,
	}).Get(ctx, &activityID); err != nil {
		return "", err
	}
	finish := func(state, code, message string) error {
		return workflow.ExecuteLocalActivity(local, ft.FinishFileTransfer, activities.FinishTransferInput{
			ID: in.TransferID, State: state, Code: code, Message: message}).Get(ctx, nil)
	}
	send := func(attempt int) error {
		opts := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			ScheduleToCloseTimeout: DefaultOperationTimeout,
			StartToCloseTimeout:    DefaultOperationTimeout,
			HeartbeatTimeout:       operationHeartbeat,
			RetryPolicy: &temporal.RetryPolicy{InitialInterval: 500 * time.Millisecond, BackoffCoefficient: 2,
				MaximumInterval: 5 * time.Second},
		})
		err := workflow.ExecuteActivity(opts, cmds.SendToAgent, activities.CommandInput{
			OperationID: fmt.Sprintf("%s:%d", in.TransferID, attempt), GUID: in.Target.GUID,
			Type: proto.EventFileManagement, Payload: in.Request, Grant: in.Grant,
		}).Get(ctx, nil)
		if err != nil {
			code, message := operationFailure(err, DefaultOperationTimeout)
			return finish(transfers.StateFailed, code, message)
		}
		return workflow.ExecuteLocalActivity(local, ft.StartFileTransfer, in.TransferID).Get(ctx, nil)
	}

	changed := workflow.GetSignalChannel(ctx, SignalFileTransferChanged)
	attempt := 0
	if err := send(attempt); err != nil {
		return "", err
	}
	var st activities.TransferState
	for {
		if err := workflow.ExecuteLocalActivity(local, ft.FileTransferState, in.TransferID).Get(ctx, &st); err != nil {
			return "", err
		}
		if transfers.Terminal(st.State) {
			break
		}
		if st.Idle >= stall {
			if attempt >= transferResends {
				if err := finish(transfers.StateFailed, transfers.ECodeTransferStalled,
					fmt.Sprintf("the agent reported nothing for %s after each of %d requests", stall, attempt+1)); err != nil {
					return "", err
				}
				continue
			}
			attempt++
			if err := send(attempt); err != nil {
				return "", err
			}
			continue
		}
		timerCtx, cancel := workflow.WithCancel(ctx)
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(workflow.NewTimer(timerCtx, min(transferRecheck, stall-st.Idle)), func(workflow.Future) {})
		sel.AddReceive(changed, func(c workflow.ReceiveChannel, _ bool) {
			c.Receive(ctx, nil)
			for c.ReceiveAsync(nil) {
			}
		})
		sel.Select(ctx)
		cancel()
	}

	status, summary := devices.ActivityCompleted, in.Summary
	switch st.State {
	case transfers.StateFailed:
		status, summary = devices.ActivityFailed, in.Summary+": "+st.Message
		meta["error"] = st.Code
	case transfers.StateCancelled:
		status, summary = devices.ActivityCancelled, in.Summary+": "+st.Message
		meta["error"] = st.Code
	}
	if err := workflow.ExecuteLocalActivity(local, ops.FinishOperation, activities.FinishInput{
		ActivityID: activityID, Status: status, Summary: summary, Meta: meta,
	}).Get(ctx, nil); err != nil {
		return "", err
	}

	// An upload's staged items served their purpose once the agent has
	// them (or never will); a download's artifact waits for the browser.
	var direction struct{ Action string }
	_ = json.Unmarshal(in.Request, &direction)
	if direction.Action == proto.FileActionDownload && st.State == transfers.StateCompleted {
		if wait := retention - st.EndedAgo; wait > 0 {
			if err := workflow.Sleep(ctx, wait); err != nil {
				return "", err
			}
		}
	}
	purge := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 5 * time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
	})
	if err := workflow.ExecuteActivity(purge, ft.PurgeFileTransfer, in.TransferID).Get(ctx, nil); err != nil {
		return "", err
	}
	return st.State, nil
}

// TransferStarter starts transfer workflows and tells them of changes.
type TransferStarter struct {
	Client    client.Client
	Stall     time.Duration
	Retention time.Duration
	// Grants signs the transfer's request (its attempts extend the ID).
	Grants Granter
}

// Start starts a transfer's workflow on its device's site queue.
func (s TransferStarter) Start(ctx context.Context, in FileTransferInput) error {
	in.Stall, in.Retention = s.Stall, s.Retention
	grant, err := s.Grants.Sign(ctx, grants.Operation{GUID: in.Target.GUID, OperationID: in.TransferID, Type: proto.EventFileManagement,
		Payload: in.Request, Actor: in.Actor}, maxTransferLife)
	if err != nil {
		return err
	}
	in.Grant = grant
	_, err = s.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       FileTransferWorkflowID(in.TransferID),
		TaskQueue:                SiteTaskQueue(in.Target.SiteSlug),
		WorkflowExecutionTimeout: maxTransferLife + max(s.Retention, transfers.DefaultRetention),
		WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			temporal.NewSearchAttributeKeyKeyword(SearchAttrDeviceGUID).ValueSet(in.Target.GUID),
			temporal.NewSearchAttributeKeyKeyword(SearchAttrSiteSlug).ValueSet(in.Target.SiteSlug),
			temporal.NewSearchAttributeKeyKeyword(SearchAttrJobKind).ValueSet(JobKindFileTransfer),
		),
	}, FileTransfer, in)
	if err != nil && isOverload(err) {
		return tooBusy("transfer")
	}
	return err
}

// Changed signals a transfer's workflow that its record changed. A
// workflow that already ended is fine.
func (s TransferStarter) Changed(ctx context.Context, transferID string) error {
	err := s.Client.SignalWorkflow(ctx, FileTransferWorkflowID(transferID), "", SignalFileTransferChanged, nil)
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return nil
	}
	return err
}

// Ended tells the workflows of transfers that a trust action or a site
// move ended (their records are cancelled already): each re-reads its
// record and closes its activity row. A purge deleted the records with
// the device, so those workflows are cancelled instead. A workflow that
// is gone is fine; each reads its record within transferRecheck anyway.
func (s TransferStarter) Ended(ctx context.Context, transferIDs []string, purged bool) error {
	var errs []error
	for _, id := range transferIDs {
		var err error
		if purged {
			err = s.Client.CancelWorkflow(ctx, FileTransferWorkflowID(id), "")
		} else {
			err = s.Client.SignalWorkflow(ctx, FileTransferWorkflowID(id), "", SignalFileTransferChanged, nil)
		}
		var nf *serviceerror.NotFound
		if err != nil && !errors.As(err, &nf) {
			errs = append(errs, fmt.Errorf("transfer %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}
