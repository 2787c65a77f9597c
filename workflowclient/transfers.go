package workflowclient

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/grants"
	"github.com/cairn-rmm/cairn/internal/transfers"
	"github.com/cairn-rmm/cairn/workflows"
)

// TransferStarter starts transfer workflows and tells them of changes.
type TransferStarter struct {
	Client    client.Client
	Stall     time.Duration
	Retention time.Duration
	// Grants signs the transfer's request (its attempts extend the ID).
	Grants Granter
	// Records reads a transfer's record (transfers.Service), so a change
	// signal carries what the route changed it to; nil sends signals
	// that say only "look again".
	Records TransferRecords
}

// TransferRecords reads transfer records (transfers.Service).
type TransferRecords interface {
	Get(ctx context.Context, id cairn.TransferID) (transfers.Snapshot, error)
}

// change is what a transfer's record says now, for its change signal
// (empty when it cannot be read: the workflow then reads it itself).
func (s TransferStarter) change(ctx context.Context, id cairn.TransferID) workflows.FileTransferChange {
	if s.Records == nil {
		return workflows.FileTransferChange{}
	}
	snap, err := s.Records.Get(ctx, id)
	if err != nil {
		return workflows.FileTransferChange{}
	}
	t := snap.Transfer
	return workflows.FileTransferChange{State: t.State, Code: t.ErrorCode, Message: t.ErrorMessage}
}

// Start starts a transfer's workflow on its device's site queue.
func (s TransferStarter) Start(ctx context.Context, in workflows.FileTransferInput) error {
	in.Stall, in.Retention = s.Stall, s.Retention
	grant, err := s.Grants.Sign(ctx, grants.Operation{GUID: in.Target.GUID, OperationID: cairn.OperationID(string(in.TransferID)), Type: proto.EventFileManagement,
		Payload: in.Request, Actor: in.Actor}, workflows.MaxTransferLife)
	if err != nil {
		return err
	}
	in.Grant = grant
	_, err = Start(ctx, s.Client, client.StartWorkflowOptions{
		ID:                       workflows.FileTransferWorkflowID(in.TransferID),
		TaskQueue:                workflows.SiteTaskQueue(in.Target.SiteSlug),
		WorkflowExecutionTimeout: workflows.MaxTransferLife + max(s.Retention, transfers.DefaultRetention),
		WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		TypedSearchAttributes:    deviceAttrs(string(in.Target.GUID), in.Target.SiteSlug, workflows.JobKindFileTransfer),
	}, workflows.FileTransfer, in)
	return err
}

// Changed tells a transfer's workflow that a route changed its record,
// and what the record says now. A workflow that already ended is fine.
func (s TransferStarter) Changed(ctx context.Context, transferID cairn.TransferID) error {
	return Signal(ctx, s.Client, workflows.FileTransferWorkflowID(transferID), workflows.SignalFileTransferChanged,
		s.change(ctx, transferID))
}

// Ended tells the workflows of transfers that a trust action or a site
// move ended (their records are cancelled already): each hears how, and
// closes its activity row. A purge deleted the records with
// the device, so those workflows are cancelled instead. A workflow that
// is gone is fine; each reads its record periodically anyway.
func (s TransferStarter) Ended(ctx context.Context, transferIDs []cairn.TransferID, purged bool) error {
	var errs []error
	for _, id := range transferIDs {
		var err error
		if purged {
			err = retry(ctx, func(actx context.Context) error {
				return s.Client.CancelWorkflow(actx, workflows.FileTransferWorkflowID(id), "")
			})
		} else {
			err = s.Changed(ctx, id)
		}
		var nf *serviceerror.NotFound
		if err != nil && !errors.As(err, &nf) {
			errs = append(errs, fmt.Errorf("transfer %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}
