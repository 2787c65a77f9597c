package workflows

import (
	"encoding/json"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/transfers"
)

// File transfer names.
const (
	// SignalFileTransferChanged tells a transfer that a route changed its
	// record (it ended, or was cancelled): a FileTransferChange with the
	// record as the route left it (older Engines sent none, and the
	// workflow read the record).
	SignalFileTransferChanged = "file-transfer-changed"
	// versionChangeCarriesState names the workflow.GetVersion change that
	// took a transfer's end from the change signal.
	versionChangeCarriesState = "change-carries-state"
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
	// MaxTransferLife bounds a workflow: transfer, retention and slack.
	MaxTransferLife = 7 * 24 * time.Hour
)

// FileTransferWorkflowID names the workflow of one transfer.
func FileTransferWorkflowID(id cairn.TransferID) string { return "file-transfer:" + string(id) }

// FileTransferInput is one transfer.
type FileTransferInput struct {
	TransferID cairn.TransferID
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

// FileTransferChange is the change signal's payload: the transfer's
// record after the change (transfers.State*, and a failure's or a
// cancellation's code and message). An empty State says only "look
// again".
type FileTransferChange struct {
	State   string
	Code    string
	Message string
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
	local := withRecording(ctx)
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
		opts := withSending(ctx, DefaultOperationTimeout, "")
		err := workflow.ExecuteActivity(opts, cmds.SendToAgent, activities.CommandInput{
			OperationID: cairn.OperationID(fmt.Sprintf("%s:%d", in.TransferID, attempt)), GUID: in.Target.GUID,
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
	// Version 1 takes the end a change signal carries (the record as the
	// route left it) instead of reading the record again; transfers
	// started before, and signals that carry no end, read.
	carried := workflow.GetVersion(ctx, versionChangeCarriesState, workflow.DefaultVersion, 1) >= 1
	var st activities.TransferState
	read := true
	for {
		if read {
			if err := workflow.ExecuteLocalActivity(local, ft.FileTransferState, in.TransferID).Get(ctx, &st); err != nil {
				return "", err
			}
		}
		read = true
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
		c, signalled := awaitChange[FileTransferChange](ctx, changed, min(transferRecheck, stall-st.Idle))
		if carried && signalled && transfers.Terminal(c.State) {
			st, read = activities.TransferState{State: c.State, Code: c.Code, Message: c.Message}, false
		}
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
