package activities

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
)

// ServiceAdmin carries out the Server page's service actions (issue 26):
// a site worker's restart, the edge certificate's reload, the tunnels'
// reconciliation. Each runs in the process that picks it up from its
// task queue (the site's queue for a worker restart).
type ServiceAdmin struct {
	// Workers is this process's worker manager (*workers.Manager).
	Workers interface {
		RestartAfter(queue, request string, after <-chan struct{}) (done, ok bool)
		Identity() string
	}
	// Started reports when this process's worker of queue last started.
	Started func(queue string) (time.Time, bool)
	// Certificate reloads the edge certificate and describes it before
	// and after (nil: HTTPS is off here).
	Certificate func() (before, after CertificateState, err error)
	// Tunnels asks each active tunnel to be established again and returns
	// the workflows it started.
	Tunnels func(ctx context.Context, actor string) ([]string, error)
	// Internal is the Internal auth class, whose seen signatures
	// SweepInternalSignatures deletes past their window.
	Internal interface {
		DeleteExpired(ctx context.Context) (int64, error)
	}
}

// SweepInternalSignatures deletes seen Internal signatures past their
// window (maintenance job internal-signatures).
func (a *ServiceAdmin) SweepInternalSignatures(ctx context.Context) (int64, error) {
	if a.Internal == nil {
		return 0, notWired("internal signatures")
	}
	return a.Internal.DeleteExpired(ctx)
}

// CertificateState is the edge certificate as a reload saw it.
type CertificateState struct {
	Fingerprint string    `json:"fingerprint"`
	NotAfter    time.Time `json:"not_after"`
}

// WorkerRestart is what a site worker's restart did.
type WorkerRestart struct {
	// Process is the process whose worker restarts (cairn@host:pid).
	Process string `json:"process"`
	// RequestedAt is when that process took the request.
	RequestedAt time.Time `json:"requested_at"`
	// Repeated: a retry found the restart already done here.
	Repeated bool `json:"repeated,omitempty"`
}

// RestartSiteWorker restarts the worker polling queue in this process (it
// runs on that queue), once this activity has returned: the restart is
// keyed by request, so a retry restarts nothing twice.
func (a *ServiceAdmin) RestartSiteWorker(ctx context.Context, queue, request string) (WorkerRestart, error) {
	after := make(chan struct{})
	defer close(after)
	done, ok := a.Workers.RestartAfter(queue, request, after)
	if !ok {
		return WorkerRestart{}, temporal.NewNonRetryableApplicationError("this process runs no worker of "+queue, "NoWorker", nil)
	}
	return WorkerRestart{Process: a.Workers.Identity(), RequestedAt: time.Now().UTC(), Repeated: !done}, nil
}

// WorkerServing is a site queue's worker answering after a restart.
type WorkerServing struct {
	Process   string    `json:"process"`
	StartedAt time.Time `json:"started_at"`
}

// SiteWorkerServing answers from a worker of queue (it runs on it): the
// queue is served again. In the process that restarted, only the new
// worker may answer: the old one, still stopping, fails the attempt
// (retried, so the new worker takes it); another process serving the
// queue answers at once. It names the process and when its worker
// started.
func (a *ServiceAdmin) SiteWorkerServing(_ context.Context, queue string, restart WorkerRestart) (WorkerServing, error) {
	at, ok := a.Started(queue)
	if a.Workers.Identity() == restart.Process && (!ok || !at.After(restart.RequestedAt)) {
		return WorkerServing{}, temporal.NewApplicationError("the worker of "+queue+" has not started again yet", "NotRestartedYet")
	}
	return WorkerServing{Process: a.Workers.Identity(), StartedAt: at}, nil
}

// CertificateReload is what an edge certificate reload did.
type CertificateReload struct {
	Process  string           `json:"process"`
	Before   CertificateState `json:"before"`
	After    CertificateState `json:"after"`
	Replaced bool             `json:"replaced"`
}

// ReloadCertificate reloads the edge certificate of this process.
func (a *ServiceAdmin) ReloadCertificate(context.Context) (CertificateReload, error) {
	if a.Certificate == nil {
		return CertificateReload{}, temporal.NewNonRetryableApplicationError("HTTPS is off on this Engine: no edge certificate to reload", "NoCertificate", nil)
	}
	before, after, err := a.Certificate()
	if err != nil {
		return CertificateReload{}, temporal.NewNonRetryableApplicationError("reload the certificate: "+err.Error(), "ReloadFailed", nil)
	}
	return CertificateReload{Process: a.Workers.Identity(), Before: before, After: after, Replaced: before.Fingerprint != after.Fingerprint}, nil
}

// ReconcileTunnels asks every active tunnel to be established again.
func (a *ServiceAdmin) ReconcileTunnels(ctx context.Context, actor string) ([]string, error) {
	if activity.IsActivity(ctx) {
		activity.RecordHeartbeat(ctx)
	}
	ids, err := a.Tunnels(ctx, actor)
	if ids == nil {
		ids = []string{}
	}
	return ids, ApplicationError(err)
}
