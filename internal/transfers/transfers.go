// Package transfers keeps file transfers between browsers and agents
// (issue 10): the transfer records, their items, and the content store,
// PostgreSQL rows of at most ChunkSize bytes, so any Engine replica serves
// any transfer and nothing lives only in one process's memory or disk.
// Content is streamed in and out one chunk at a time, and its SHA-256 is
// computed on the way in and checked against what the other side says.
// The FileTransfer workflow (workflows/filetransfer.go) drives a transfer;
// this package only records (docs/architecture.md "File transfers").
package transfers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devices"
)

// Directions, states and conflict policies (docs/api.md "File transfers").
const (
	DirectionUpload   = "upload"
	DirectionDownload = "download"

	StateQueued    = "queued"
	StateRunning   = "running"
	StateCompleted = "completed"
	StateFailed    = "failed"
	StateCancelled = "cancelled"

	ConflictOverwrite = "overwrite"
	ConflictSkip      = "skip"
	ConflictRename    = "rename"

	ItemStaged    = "staged"
	ItemRunning   = "running"
	ItemCompleted = "completed"
	ItemSkipped   = "skipped"
	ItemFailed    = "failed"
)

// Error codes (api/errors.go maps them).
const (
	ECodeTransferNotFound  = "transfer_not_found"
	ECodeTransferCancelled = "transfer_cancelled"
	ECodeChecksumMismatch  = "checksum_mismatch"
	ECodeUploadTooLarge    = "upload_too_large"
	// ECodeTransferNotReady: content asked of a transfer that has not
	// completed; ECodeTransferEnded: an agent reports on a transfer that
	// already ended (failed, cancelled, completed).
	ECodeTransferNotReady = "transfer_not_ready"
	ECodeTransferEnded    = "transfer_ended"
	// ECodeContentExpired: the content outlived its retention.
	ECodeContentExpired = "transfer_content_expired"
	// ECodeTransferStalled: the agent stopped reporting and did not pick
	// the transfer up again when asked.
	ECodeTransferStalled = "transfer_stalled"
)

// Limits and defaults.
const (
	// ChunkSize is the content store's row size: big enough that a 1 GiB
	// file is 1,024 rows, small enough that a stream holds one in memory.
	ChunkSize = 1 << 20
	// DefaultMaxUpload bounds the bytes of one upload transfer and of one
	// download artifact (CAIRN_TRANSFER_MAX_BYTES).
	DefaultMaxUpload int64 = 4 << 30
	// DefaultRetention keeps a download's content this long after the
	// transfer ended (CAIRN_TRANSFER_RETENTION).
	DefaultRetention = 24 * time.Hour
	// StagingStale: an upload still queued this long after its last
	// change lost the request that staged it (the Engine died mid-upload).
	StagingStale = 6 * time.Hour
	// MaxItems bounds the files of one upload; MaxPaths the paths of one
	// download; MaxNameBytes one relative name.
	MaxItems     = 10000
	MaxPaths     = 1000
	MaxNameBytes = 4096
)

// Config tunes the service. Zero values take the defaults.
type Config struct {
	MaxBytes  int64
	Retention time.Duration
	// Quotas bound what transfers hold at once (zero: unbounded).
	Quotas Quotas
}

// Service records transfers and stores their content.
type Service struct {
	store *db.Store
	cfg   Config
}

// New returns the service.
func New(store *db.Store, cfg Config) *Service {
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxUpload
	}
	if cfg.Retention <= 0 {
		cfg.Retention = DefaultRetention
	}
	if cfg.Quotas.FreeBytes == nil {
		cfg.Quotas.FreeBytes = StatfsFree
	}
	return &Service{store: store, cfg: cfg}
}

// MaxBytes is the size limit of one transfer.
func (s *Service) MaxBytes() int64 { return s.cfg.MaxBytes }

// Retention is how long a download's content stays after the transfer ended.
func (s *Service) Retention() time.Duration { return s.cfg.Retention }

// Terminal reports whether state is final.
func Terminal(state string) bool {
	return state == StateCompleted || state == StateFailed || state == StateCancelled
}

// Snapshot is a transfer as operators see it.
type Snapshot struct {
	Transfer db.FileTransfer
	Items    []db.FileTransferItem
}

// Upload is an upload being staged: the transfer and what it holds of
// the staging budget.
type Upload struct {
	Transfer db.FileTransfer
	hold     holding
}

// NewUpload records an upload to an absolute directory of the device,
// within the concurrency caps, and reserves declared bytes of the budgets
// (the request's size when known, else 0: the content reserves as it is
// staged).
func (s *Service) NewUpload(ctx context.Context, id cairn.TransferID, t devices.OperationTarget, actor, destination, conflict string, dirs []string, declared int64) (*Upload, error) {
	declared = min(max(declared, 0), s.cfg.MaxBytes)
	if err := s.checkDisk(declared); err != nil {
		return nil, err
	}
	up := &Upload{hold: holding{id: id, actor: actor, held: declared}}
	err := s.store.InTx(ctx, func(q *db.Queries) error {
		if err := s.admit(ctx, q, actor, declared); err != nil {
			return err
		}
		var err error
		up.Transfer, err = q.FileTransferInsert(ctx, db.FileTransferInsertParams{ID: id, DeviceGuid: t.GUID, Hostname: t.Hostname,
			SiteID: t.SiteID, Direction: DirectionUpload, Destination: destination, Conflict: conflict, Directories: nonNil(dirs),
			Paths: []string{}, Actor: actor})
		if err != nil || declared == 0 {
			return err
		}
		_, err = q.FileTransferReserve(ctx, db.FileTransferReserveParams{ID: id, Bytes: declared})
		return err
	})
	if err != nil {
		return nil, err
	}
	return up, nil
}

// NewDownload records a download of paths, within the concurrency caps;
// item 1 is its artifact, which reserves budget as it streams in.
func (s *Service) NewDownload(ctx context.Context, id cairn.TransferID, t devices.OperationTarget, actor string, paths []string) (db.FileTransfer, error) {
	if err := s.checkDisk(0); err != nil {
		return db.FileTransfer{}, err
	}
	var out db.FileTransfer
	err := s.store.InTx(ctx, func(q *db.Queries) error {
		if err := s.admit(ctx, q, actor, 0); err != nil {
			return err
		}
		var err error
		out, err = q.FileTransferInsert(ctx, db.FileTransferInsertParams{ID: id, DeviceGuid: t.GUID, Hostname: t.Hostname,
			SiteID: t.SiteID, Direction: DirectionDownload, Conflict: ConflictRename, Directories: []string{}, Paths: paths, Actor: actor})
		if err != nil {
			return err
		}
		return q.FileTransferItemInsert(ctx, db.FileTransferItemInsertParams{TransferID: id, ItemID: 1, Name: ""})
	})
	return out, err
}

func nonNil(v []string) []string {
	if v == nil {
		return []string{}
	}
	return v
}

// CleanRelative checks an upload item's name or a manifest directory:
// a relative slash-separated path without empty, "." or ".." elements,
// NUL or backslash, so the agent can only write below the destination.
func CleanRelative(name string) (string, bool) {
	if name == "" || len(name) > MaxNameBytes || strings.ContainsAny(name, "\x00\\") || strings.HasPrefix(name, "/") {
		return "", false
	}
	for _, el := range strings.Split(name, "/") {
		if el == "" || el == "." || el == ".." {
			return "", false
		}
	}
	return path.Clean(name), true
}

// StageItem stores one upload item read from r, chunk by chunk, and
// returns its size and SHA-256. budget is what the transfer may still
// take; beyond it the upload is refused with upload_too_large, and
// beyond the staging budgets or the disk headroom with
// transfer_quota_exceeded or insufficient_storage.
func (s *Service) StageItem(ctx context.Context, up *Upload, itemID int32, name string, r io.Reader, budget int64) (int64, string, error) {
	id := up.Transfer.ID
	size, sum, err := s.storeContent(ctx, &up.hold, itemID, r, budget)
	if err != nil {
		return 0, "", err
	}
	err = s.store.FileTransferItemInsert(ctx, db.FileTransferItemInsertParams{TransferID: id, ItemID: itemID, Name: name,
		Size: size, Sha256: sum})
	return size, sum, err
}

// storeContent writes r as chunk rows of item (replacing any earlier
// attempt's) and returns the size and SHA-256; one chunk is in memory at a
// time. Each chunk first takes its room in h: disk headroom, and budget
// beyond what the transfer already holds.
func (s *Service) storeContent(ctx context.Context, h *holding, itemID int32, r io.Reader, budget int64) (int64, string, error) {
	id := h.id
	if err := s.store.FileTransferChunkDeleteItem(ctx, db.FileTransferChunkDeleteItemParams{TransferID: id, ItemID: itemID}); err != nil {
		return 0, "", err
	}
	sha := sha256.New()
	buf := make([]byte, ChunkSize)
	var size int64
	for seq := int32(0); ; seq++ {
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			size += int64(n)
			if size > budget {
				return 0, "", cairn.Errorf(ECodeUploadTooLarge, "the transfer is larger than the Engine's limit of %d bytes", s.cfg.MaxBytes)
			}
			if qerr := s.take(ctx, h, int64(n)); qerr != nil {
				return 0, "", qerr
			}
			sha.Write(buf[:n])
			if ierr := s.store.FileTransferChunkInsert(ctx, db.FileTransferChunkInsertParams{TransferID: id, ItemID: itemID,
				Seq: seq, Data: buf[:n]}); ierr != nil {
				return 0, "", ierr
			}
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return size, hex.EncodeToString(sha.Sum(nil)), nil
		}
		if err != nil {
			return 0, "", err
		}
	}
}

// SetTotal records an upload's total once every item is staged, and
// holds exactly that of the budgets from then on (not what it declared).
func (s *Service) SetTotal(ctx context.Context, up *Upload, total int64) error {
	id := up.Transfer.ID
	return s.store.InTx(ctx, func(q *db.Queries) error {
		if err := q.FileTransferSetTotals(ctx, db.FileTransferSetTotalsParams{ID: id, BytesTotal: total}); err != nil {
			return err
		}
		up.hold.held = total
		return q.FileTransferSetReserved(ctx, db.FileTransferSetReservedParams{ID: id, Bytes: total})
	})
}

// Get returns a transfer and its items by ID.
func (s *Service) Get(ctx context.Context, id cairn.TransferID) (Snapshot, error) {
	t, err := s.store.FileTransferGet(ctx, id)
	if err != nil {
		return Snapshot{}, notFound(err)
	}
	return s.withItems(ctx, t)
}

// InScope returns the transfer of the device named hostname when the
// device's site is in scope; anything else is transfer_not_found.
func (s *Service) InScope(ctx context.Context, scope cairn.SiteScope, hostname string, id cairn.TransferID) (Snapshot, error) {
	t, err := s.store.FileTransferGetInScope(ctx, db.FileTransferGetInScopeParams{ID: id, Hostname: hostname,
		AllSites: scope.All, SiteIds: scope.SiteIDs})
	if err != nil {
		return Snapshot{}, notFound(err)
	}
	return s.withItems(ctx, t)
}

// ForDevice returns a transfer of the device guid: an agent never sees
// another device's transfers (they answer transfer_not_found).
func (s *Service) ForDevice(ctx context.Context, guid cairn.DeviceGUID, id cairn.TransferID) (Snapshot, error) {
	t, err := s.store.FileTransferGetForDevice(ctx, db.FileTransferGetForDeviceParams{ID: id, DeviceGuid: guid})
	if err != nil {
		return Snapshot{}, notFound(err)
	}
	return s.withItems(ctx, t)
}

func (s *Service) withItems(ctx context.Context, t db.FileTransfer) (Snapshot, error) {
	items, err := s.store.FileTransferItemList(ctx, t.ID)
	return Snapshot{Transfer: t, Items: items}, err
}

func notFound(err error) error {
	if db.IsNoRows(err) {
		return cairn.Errorf(ECodeTransferNotFound, "no such transfer on this device")
	}
	return err
}

// Start moves a queued transfer to running (the agent took the request)
// and, for a request sent again after a stall, restarts the stall clock:
// without that, the workflow found the transfer still idle right after
// each re-send and spent all its re-sends at once.
func (s *Service) Start(ctx context.Context, id cairn.TransferID) error {
	_, err := s.store.FileTransferStart(ctx, id)
	return err
}

// Finish ends a transfer with state and, for a failure, its code and
// message; the first outcome wins. It reports whether this call ended it.
func (s *Service) Finish(ctx context.Context, id cairn.TransferID, state, code, message string) (bool, error) {
	n, err := s.store.FileTransferFinish(ctx, db.FileTransferFinishParams{ID: id, State: state, ErrorCode: code,
		ErrorMessage: bound(message)})
	return n > 0, err
}

// Cancel ends a transfer as cancelled and marks it so, for the agent's
// next status poll. A transfer that already ended is left as it is.
func (s *Service) Cancel(ctx context.Context, id cairn.TransferID, actor string) (bool, error) {
	n, err := s.store.FileTransferRequestCancel(ctx, db.FileTransferRequestCancelParams{ID: id,
		ErrorMessage: "cancelled by " + actor})
	return n > 0, err
}

// Purge deletes a transfer's content (once).
func (s *Service) Purge(ctx context.Context, id cairn.TransferID) error {
	_, err := s.store.FileTransferPurge(ctx, id)
	return err
}

// Progress is an agent's report on one item (item 0: the transfer as a
// whole, for a failure before any item).
type Progress struct {
	ItemID     int32
	BytesDone  int64
	BytesTotal int64
	// State is the item's: running (default), completed, skipped or
	// failed. Code and Message explain a failure.
	State   string
	Code    string
	Message string
}

// ReportProgress records an agent's progress and ends the transfer when
// the report finishes it: an upload whose items are all done (failed when
// any failed), a download that failed. It reports whether the transfer
// ended with this report.
func (s *Service) ReportProgress(ctx context.Context, guid cairn.DeviceGUID, id cairn.TransferID, p Progress) (bool, error) {
	snap, err := s.ForDevice(ctx, guid, id)
	if err != nil {
		return false, err
	}
	t := snap.Transfer
	if Terminal(t.State) {
		return false, endedError(t)
	}
	if p.State == "" {
		p.State = ItemRunning
	}
	if p.State == ItemFailed && p.Code == "" {
		p.Code = "failed"
	}
	if p.ItemID == 0 {
		switch {
		case p.State == ItemFailed:
			return s.Finish(ctx, id, StateFailed, p.Code, p.Message)
		case p.State == ItemCompleted && len(snap.Items) == 0 && t.Direction == DirectionUpload:
			// an upload of a folder manifest only
			return s.Finish(ctx, id, StateCompleted, "", "")
		}
		return false, cairn.Invalid("item_id", "is required unless the whole transfer failed or had no items")
	}
	n, err := s.store.FileTransferItemProgress(ctx, db.FileTransferItemProgressParams{TransferID: id, ItemID: p.ItemID,
		BytesDone: p.BytesDone, State: p.State})
	if err != nil {
		return false, err
	}
	if n == 0 {
		if _, gerr := s.store.FileTransferItemGet(ctx, db.FileTransferItemGetParams{TransferID: id, ItemID: p.ItemID}); gerr != nil {
			return false, db.NotFound(gerr, "no item %d in this transfer", p.ItemID)
		}
	}
	if t.Direction == DirectionDownload {
		if p.State == ItemFailed {
			return s.Finish(ctx, id, StateFailed, p.Code, p.Message)
		}
		_, err := s.store.FileTransferSetProgress(ctx, db.FileTransferSetProgressParams{ID: id, BytesDone: p.BytesDone,
			BytesTotal: p.BytesTotal})
		return false, err
	}
	sum, err := s.store.FileTransferSumProgress(ctx, id)
	if err != nil {
		return false, err
	}
	if _, err := s.store.FileTransferSetProgress(ctx, db.FileTransferSetProgressParams{ID: id, BytesDone: sum.BytesDone}); err != nil {
		return false, err
	}
	if sum.OpenItems > 0 {
		return false, nil
	}
	if sum.FailedItems > 0 {
		code, msg := p.Code, p.Message
		if code == "" {
			code, msg = "failed", fmt.Sprintf("%d item(s) failed", sum.FailedItems)
		}
		return s.Finish(ctx, id, StateFailed, code, msg)
	}
	return s.Finish(ctx, id, StateCompleted, "", "")
}

func endedError(t db.FileTransfer) error {
	if t.State == StateCancelled {
		return cairn.Errorf(ECodeTransferCancelled, "the transfer was cancelled")
	}
	return cairn.Errorf(ECodeTransferEnded, "the transfer already ended (%s)", t.State)
}

// ReceiveContent stores a download's artifact streamed by the agent,
// computing its SHA-256 on the way, and ends the transfer: completed when
// the sum is wantSHA, else failed with checksum_mismatch (the content is
// dropped). A transfer cancelled meanwhile drops what arrived. wantSHA
// is called once the body was read: a zip built while it streams has its
// sum in a trailer.
func (s *Service) ReceiveContent(ctx context.Context, guid cairn.DeviceGUID, id cairn.TransferID, name string, wantSHA func() string, r io.Reader) error {
	snap, err := s.ForDevice(ctx, guid, id)
	if err != nil {
		return err
	}
	t := snap.Transfer
	if t.Direction != DirectionDownload {
		return cairn.Errorf(ECodeTransferNotFound, "this transfer is an upload; it has no content to receive")
	}
	if Terminal(t.State) {
		return endedError(t)
	}
	// An earlier attempt's content is replaced: what the transfer holds
	// is derived again from what is left of it.
	if err := s.store.FileTransferChunkDeleteItem(ctx, db.FileTransferChunkDeleteItemParams{TransferID: id, ItemID: 1}); err != nil {
		return err
	}
	if err := s.store.FileTransferReserveStaged(ctx, id); err != nil {
		return err
	}
	cur, err := s.store.FileTransferGet(ctx, id)
	if err != nil {
		return err
	}
	h := &holding{id: id, actor: t.Actor, held: cur.BytesReserved}
	size, sum, err := s.storeContent(ctx, h, 1, r, s.cfg.MaxBytes)
	if err != nil {
		// A refused artifact ends the transfer with the refusal's code
		// (in its state for the operator) and releases what it held.
		if cairn.IsCode(err, ECodeUploadTooLarge) || quotaRefusal(err) {
			var ce *cairn.Error
			msg := err.Error()
			if errors.As(err, &ce) {
				msg = ce.Message
			}
			_, _ = s.Finish(context.WithoutCancel(ctx), id, StateFailed, cairn.ErrorCode(err), msg)
			_ = s.Purge(context.WithoutCancel(ctx), id)
		}
		return err
	}
	if want := wantSHA(); !strings.EqualFold(sum, want) {
		msg := fmt.Sprintf("the content's SHA-256 is %s, the agent sent %q", sum, want)
		_, _ = s.Finish(ctx, id, StateFailed, ECodeChecksumMismatch, msg)
		_ = s.Purge(ctx, id)
		return cairn.Errorf(ECodeChecksumMismatch, "%s", msg)
	}
	// A zip whose entries could land outside the operator's folder is
	// refused and dropped: nothing of it is kept or served.
	if err := s.checkArtifact(ctx, t, name, size); err != nil {
		msg := err.Error()
		var ce *cairn.Error
		if errors.As(err, &ce) {
			for _, m := range ce.Fields {
				msg = "the artifact was refused: " + m
			}
		}
		if cairn.IsCode(err, cairn.ECodeValidation) {
			_, _ = s.Finish(context.WithoutCancel(ctx), id, StateFailed, cairn.ECodeValidation, msg)
			_ = s.Purge(context.WithoutCancel(ctx), id)
		}
		return err
	}
	err = s.store.InTx(ctx, func(q *db.Queries) error {
		if err := q.FileTransferSetDownloadTotal(ctx, db.FileTransferSetDownloadTotalParams{ID: id, BytesTotal: size,
			ContentName: name}); err != nil {
			return err
		}
		if err := q.FileTransferSetReserved(ctx, db.FileTransferSetReservedParams{ID: id, Bytes: size}); err != nil {
			return err
		}
		if err := q.FileTransferItemFinishDownload(ctx, db.FileTransferItemFinishDownloadParams{TransferID: id, Name: name,
			Size: size, Sha256: sum}); err != nil {
			return err
		}
		n, err := q.FileTransferFinish(ctx, db.FileTransferFinishParams{ID: id, State: StateCompleted, ContentName: name})
		if err == nil && n == 0 {
			return cairn.Errorf(ECodeTransferCancelled, "the transfer ended while its content arrived")
		}
		return err
	})
	if err != nil {
		_ = s.Purge(context.WithoutCancel(ctx), id)
	}
	return err
}

// WriteItem streams an item's content to w, one chunk row at a time, and
// checks the size and SHA-256 it recorded on the way in (a damaged store
// is a fault, not a file).
func (s *Service) WriteItem(ctx context.Context, w io.Writer, id cairn.TransferID, item db.FileTransferItem) error {
	h := sha256.New()
	var done int64
	for seq := int32(0); done < item.Size; seq++ {
		data, err := s.store.FileTransferChunkGet(ctx, db.FileTransferChunkGetParams{TransferID: id, ItemID: item.ItemID, Seq: seq})
		if err != nil {
			if db.IsNoRows(err) {
				return fmt.Errorf("transfer %s item %d: chunk %d is missing", id, item.ItemID, seq)
			}
			return err
		}
		h.Write(data)
		done += int64(len(data))
		if _, err := w.Write(data); err != nil {
			return err
		}
	}
	if got := hex.EncodeToString(h.Sum(nil)); done != item.Size || got != item.Sha256 {
		return fmt.Errorf("transfer %s item %d: stored content (%d bytes, %s) is not what was recorded", id, item.ItemID, done, got)
	}
	return nil
}

// Sweep purges the content of transfers past retention, fails uploads
// whose staging request died and transfers left running by a workflow
// that is gone; the Schedule maintenance:file-transfers runs it, for
// transfers whose workflow never ran or was lost. Each releases what it
// held of the transfer quotas.
func (s *Service) Sweep(ctx context.Context) (int64, error) {
	rows, err := s.store.FileTransferListStale(ctx, db.FileTransferListStaleParams{
		RetentionSeconds: s.cfg.Retention.Seconds(), StaleSeconds: StagingStale.Seconds()})
	if err != nil {
		return 0, err
	}
	for _, row := range rows {
		code, msg := "staging_abandoned", "the upload never finished staging"
		if row.State == StateRunning {
			code, msg = ECodeTransferStalled, fmt.Sprintf("nothing moved for %s and no workflow followed the transfer", StagingStale)
		}
		if _, err := s.Finish(ctx, row.ID, StateFailed, code, msg); err != nil {
			return 0, err
		}
		if err := s.Purge(ctx, row.ID); err != nil {
			return 0, err
		}
	}
	return int64(len(rows)), nil
}

func bound(s string) string {
	if len(s) > 2000 {
		return strings.ToValidUTF8(s[:2000], "")
	}
	return s
}
