package activities

import (
	"context"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/transfers"
)

// FileTransfers records what the FileTransfer workflow decides about a
// transfer (the agent's own reports arrive through the callback routes).
type FileTransfers struct {
	Transfers *transfers.Service
}

// TransferState is what the workflow needs to know of a transfer.
type TransferState struct {
	State   string
	Code    string
	Message string
	// Idle is how long since the transfer last changed (progress, items).
	Idle time.Duration
	// EndedAgo is how long since it ended (terminal states).
	EndedAgo time.Duration
}

// FileTransferState reads the transfer's state.
func (a *FileTransfers) FileTransferState(ctx context.Context, id cairn.TransferID) (TransferState, error) {
	snap, err := a.Transfers.Get(ctx, id)
	if err != nil {
		return TransferState{}, ApplicationError(err)
	}
	t := snap.Transfer
	out := TransferState{State: t.State, Code: t.ErrorCode, Message: t.ErrorMessage, Idle: time.Since(t.UpdatedAt)}
	if t.EndedAt != nil {
		out.EndedAgo = time.Since(*t.EndedAt)
	}
	return out, nil
}

// StartFileTransfer marks a transfer running once its agent accepted it.
func (a *FileTransfers) StartFileTransfer(ctx context.Context, id cairn.TransferID) error {
	return ApplicationError(a.Transfers.Start(ctx, id))
}

// FinishTransferInput ends a transfer the workflow gave up on.
type FinishTransferInput struct {
	ID      cairn.TransferID
	State   string
	Code    string
	Message string
}

// FinishFileTransfer ends the transfer unless it ended already.
func (a *FileTransfers) FinishFileTransfer(ctx context.Context, in FinishTransferInput) error {
	_, err := a.Transfers.Finish(ctx, in.ID, in.State, in.Code, in.Message)
	return ApplicationError(err)
}

// PurgeFileTransfer deletes the transfer's staged content.
func (a *FileTransfers) PurgeFileTransfer(ctx context.Context, id cairn.TransferID) error {
	return ApplicationError(a.Transfers.Purge(ctx, id))
}

// TransferSweeper deletes file-transfer content nobody will fetch.
type TransferSweeper interface {
	Sweep(ctx context.Context) (int64, error)
}

// TransferMaintenance is the transfers capability's clean-up: content
// past its retention, and uploads whose staging died.
type TransferMaintenance struct {
	// Transfers is *transfers.Service.
	Transfers TransferSweeper
}

// SweepFileTransfers is the maintenance:file-transfers job.
func (m *TransferMaintenance) SweepFileTransfers(ctx context.Context) (int64, error) {
	if m.Transfers == nil {
		return 0, notWired("Transfers")
	}
	return m.Transfers.Sweep(ctx)
}
