package engine

import (
	"context"
	"net/http"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/api"
	"github.com/cairn-rmm/cairn/internal/transfers"
	"github.com/cairn-rmm/cairn/workflowclient"
	"github.com/cairn-rmm/cairn/workflows"
)

// transfersCapability is file transfers: uploads staged on the Engine and
// fetched by the agent, downloads the agent pushes, each a FileTransfer
// workflow; the file manager's path codes are what agents refuse them with.
var transfersCapability = Capability{
	Name: "transfers",
	Codes: []cairn.Code{
		{ID: transfers.ECodeTransferNotFound, Status: http.StatusNotFound, Agent: true},
		{ID: transfers.ECodeTransferCancelled, Status: http.StatusConflict},
		{ID: transfers.ECodeTransferEnded, Status: http.StatusConflict},
		{ID: transfers.ECodeTransferNotReady, Status: http.StatusConflict},
		{ID: transfers.ECodeContentExpired, Status: http.StatusGone},
		{ID: transfers.ECodeChecksumMismatch, Status: http.StatusUnprocessableEntity},
		{ID: transfers.ECodeUploadTooLarge, Status: http.StatusRequestEntityTooLarge},
		{ID: transfers.ECodeTransferStalled, Status: http.StatusGatewayTimeout},
		// Quotas (docs/api.md "File transfers").
		{ID: cairn.ECodeTransferLimitReached, Status: http.StatusTooManyRequests},
		{ID: cairn.ECodeTransferQuotaExceeded, Status: http.StatusInsufficientStorage},
		{ID: cairn.ECodeInsufficientStorage, Status: http.StatusInsufficientStorage},
	},
	Wire: func(_ context.Context, e *Engine) error {
		e.Transfers = transfers.New(e.Store, transfers.Config{MaxBytes: e.cfg.TransferMaxBytes,
			Retention: e.cfg.TransferRetention, Quotas: e.cfg.TransferQuotas})
		return nil
	},
	API: func(e *Engine) api.Area {
		st := workflowclient.TransferStarter{Client: e.client(), Stall: e.cfg.TransferStall, Grants: e.Grants, Records: e.Transfers}
		if e.Transfers != nil {
			st.Retention = e.Transfers.Retention()
		}
		return api.TransfersArea{Transfers: e.Transfers, TransferStarter: st}
	},
	Workflows: []any{workflows.FileTransfer},
	Activities: func(e *Engine) []any {
		return []any{&activities.FileTransfers{Transfers: e.Transfers}, &activities.TransferMaintenance{Transfers: e.Transfers}}
	},
	Maintenance: []workflows.MaintenanceJob{
		// Content past its retention that its workflow did not delete.
		{Name: workflows.JobFileTransfers, Every: 15 * time.Minute, Activity: "SweepFileTransfers"},
	},
	AgentOps: []string{proto.EventFileManagement},
}
