package transfers

import (
	"context"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
)

// Quotas bound what file transfers hold at once (docs/architecture.md
// "Transfer quotas"). Zero values mean no bound. They are enforced in
// PostgreSQL under one transaction-scoped advisory lock, from the
// transfers' own rows (no counter in any process), so every Engine
// replica sees the same budget and a crash leaks nothing: a transfer's
// bytes count while its content exists (until a purge: at the end of an
// upload, on a failure or cancellation, or once a completed download's
// retention passed) and its slot while it is queued or running.
type Quotas struct {
	// Bytes: staged bytes all transfers may hold together
	// (CAIRN_TRANSFER_QUOTA_BYTES); OperatorBytes: one operator's
	// (CAIRN_TRANSFER_OPERATOR_QUOTA_BYTES). Beyond: 507
	// transfer_quota_exceeded.
	Bytes         int64
	OperatorBytes int64
	// Concurrent: transfers queued or running at once
	// (CAIRN_TRANSFER_MAX_CONCURRENT); OperatorConcurrent: one operator's
	// (CAIRN_TRANSFER_OPERATOR_MAX_CONCURRENT). Beyond: 429
	// transfer_limit_reached with Retry-After.
	Concurrent         int
	OperatorConcurrent int
	// MinFreeBytes is the free space staging keeps on the filesystem of
	// StagingPath (CAIRN_TRANSFER_MIN_FREE_BYTES): content lives in
	// PostgreSQL, so StagingPath is its data directory when the Engine can
	// see it (the private cluster's, or CAIRN_TRANSFER_STAGING_PATH); ""
	// checks nothing. Below it: 507 insufficient_storage.
	MinFreeBytes int64
	StagingPath  string
	// FreeBytes reports the bytes an unprivileged writer may still use on
	// path's filesystem (nil: statfs(2)); tests inject it.
	FreeBytes func(path string) (uint64, error)
}

// RetryAfterLimit is the Retry-After of transfer_limit_reached: a
// transfer usually takes a while to end, so asking every second is noise.
const RetryAfterLimit = 30

// StatfsFree is the default Quotas.FreeBytes: the blocks available to an
// unprivileged user (Bavail) of path's filesystem.
func StatfsFree(path string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, fmt.Errorf("free space of the transfer staging path: %w", err)
	}
	return st.Bavail * uint64(st.Bsize), nil //nolint:gosec // Bsize is positive
}

func (q Quotas) bytesBounded() bool { return q.Bytes > 0 || q.OperatorBytes > 0 }

func (q Quotas) slotsBounded() bool { return q.Concurrent > 0 || q.OperatorConcurrent > 0 }

// checkDisk refuses to stage n more bytes when that would leave less
// than MinFreeBytes free where the content lands.
func (s *Service) checkDisk(n int64) error {
	q := s.cfg.Quotas
	if q.MinFreeBytes <= 0 || q.StagingPath == "" {
		return nil
	}
	free, err := q.FreeBytes(q.StagingPath)
	if err != nil {
		return err
	}
	if free < uint64(q.MinFreeBytes)+uint64(max(n, 0)) { //nolint:gosec // both non-negative
		return cairn.Errorf(cairn.ECodeInsufficientStorage,
			"the Engine's transfer storage is nearly full (%d bytes free, it keeps %d free: CAIRN_TRANSFER_MIN_FREE_BYTES); try again once space is freed",
			free, q.MinFreeBytes)
	}
	return nil
}

// admit checks, under the quota lock of q's transaction, that actor may
// start one more transfer holding reserve bytes.
func (s *Service) admit(ctx context.Context, q *db.Queries, actor string, reserve int64) error {
	quotas := s.cfg.Quotas
	if !quotas.slotsBounded() && !quotas.bytesBounded() {
		return nil
	}
	if err := q.FileTransferQuotaLock(ctx); err != nil {
		return err
	}
	u, err := q.FileTransferUsage(ctx, actor)
	if err != nil {
		return err
	}
	if n := quotas.OperatorConcurrent; n > 0 && u.ActorLive >= int64(n) {
		return limitReached("you have %d file transfers in progress, the limit per operator (CAIRN_TRANSFER_OPERATOR_MAX_CONCURRENT=%d); try again when one ends",
			u.ActorLive, n)
	}
	if n := quotas.Concurrent; n > 0 && u.Live >= int64(n) {
		return limitReached("%d file transfers are in progress on this Engine, its limit (CAIRN_TRANSFER_MAX_CONCURRENT=%d); try again when one ends",
			u.Live, n)
	}
	return s.checkBudget(u, reserve)
}

func limitReached(format string, args ...any) error {
	e := cairn.Errorf(cairn.ECodeTransferLimitReached, format, args...)
	e.RetryAfterSeconds = RetryAfterLimit
	return e
}

// checkBudget refuses reserve more bytes beyond either budget; the
// message says which and how much is held.
func (s *Service) checkBudget(u db.FileTransferUsageRow, reserve int64) error {
	quotas := s.cfg.Quotas
	if b := quotas.OperatorBytes; b > 0 && u.ActorBytes+reserve > b {
		return cairn.Errorf(cairn.ECodeTransferQuotaExceeded,
			"your transfers would hold more than the per-operator budget of %d bytes (CAIRN_TRANSFER_OPERATOR_QUOTA_BYTES; %d held now, %d more asked); completed downloads count until their retention passes",
			b, u.ActorBytes, reserve)
	}
	if b := quotas.Bytes; b > 0 && u.Bytes+reserve > b {
		return cairn.Errorf(cairn.ECodeTransferQuotaExceeded,
			"the Engine's transfers would hold more than its budget of %d bytes (CAIRN_TRANSFER_QUOTA_BYTES; %d held now, %d more asked); try again once transfers end or expire",
			b, u.Bytes, reserve)
	}
	return nil
}

// reserve adds n bytes to what transfer id (of actor) holds, within the
// budgets. A transfer that ended meanwhile takes nothing more.
func (s *Service) reserve(ctx context.Context, id cairn.TransferID, actor string, n int64) error {
	return s.store.InTx(ctx, func(q *db.Queries) error {
		if s.cfg.Quotas.bytesBounded() {
			if err := q.FileTransferQuotaLock(ctx); err != nil {
				return err
			}
			u, err := q.FileTransferUsage(ctx, actor)
			if err != nil {
				return err
			}
			if err := s.checkBudget(u, n); err != nil {
				return err
			}
		}
		rows, err := q.FileTransferReserve(ctx, db.FileTransferReserveParams{ID: id, Bytes: n})
		if err == nil && rows == 0 {
			return cairn.Errorf(ECodeTransferEnded, "the transfer ended while its content arrived")
		}
		return err
	})
}

// holding is what one transfer holds of the budget while its content is
// staged: held bytes reserved, staged bytes stored.
type holding struct {
	id           cairn.TransferID
	actor        string
	held, staged int64
}

// reserveStep is how much a streaming transfer reserves at once, so the
// quota lock is taken once per 8 chunks rather than per chunk; near a
// budget it reserves just what the chunk needs. What a transfer holds is
// set to its exact size once staged.
const reserveStep = 8 * ChunkSize

// take makes room for n more staged bytes: the disk headroom, and a
// reservation when they go beyond what the transfer holds.
func (s *Service) take(ctx context.Context, h *holding, n int64) error {
	if err := s.checkDisk(n); err != nil {
		return err
	}
	if more := h.staged + n - h.held; more > 0 {
		step := max(more, min(reserveStep, s.cfg.MaxBytes-h.held))
		err := s.reserve(ctx, h.id, h.actor, step)
		if err != nil && step > more && cairn.IsCode(err, cairn.ECodeTransferQuotaExceeded) {
			step = more
			err = s.reserve(ctx, h.id, h.actor, step)
		}
		if err != nil {
			return err
		}
		h.held += step
	}
	h.staged += n
	return nil
}

// quotaRefusal reports whether err is a budget or disk refusal, which
// ends the transfer it happened to.
func quotaRefusal(err error) bool {
	return cairn.IsCode(err, cairn.ECodeTransferQuotaExceeded) || cairn.IsCode(err, cairn.ECodeInsufficientStorage)
}
