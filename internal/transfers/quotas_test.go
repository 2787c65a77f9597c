package transfers

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/pgtest"
)

const mib = 1 << 20

// quotaFixture is a database with one device and a service under quotas.
type quotaFixture struct {
	store  *db.Store
	svc    *Service
	target devices.OperationTarget
	n      atomic.Int32
}

func setupQuotas(t *testing.T, q Quotas) *quotaFixture {
	t.Helper()
	ctx := context.Background()
	store := pgtest.NewDB(t)
	site, err := store.SiteInsert(ctx, db.SiteInsertParams{Name: "Quotas", Slug: "quotas"})
	require.NoError(t, err)
	_, err = store.DeviceInsert(ctx, db.DeviceInsertParams{Guid: "guid-q", Hostname: "host-q", SiteID: site.ID})
	require.NoError(t, err)
	return &quotaFixture{store: store, svc: New(store, Config{Quotas: q}),
		target: devices.OperationTarget{GUID: "guid-q", Hostname: "host-q", SiteID: site.ID, SiteSlug: "quotas"}}
}

func (f *quotaFixture) id() cairn.TransferID {
	return cairn.TransferID(fmt.Sprintf("tr-%d", f.n.Add(1)))
}

// download starts a download of actor and streams size bytes into it as
// the agent would; it returns the transfer ID and ReceiveContent's error.
func (f *quotaFixture) download(t *testing.T, actor string, size int) (cairn.TransferID, error) {
	t.Helper()
	return f.downloadWith(t, actor, size, nil)
}

// downloadWith runs at once the bytes passed half the content.
func (f *quotaFixture) downloadWith(t *testing.T, actor string, size int, halfway func()) (cairn.TransferID, error) {
	t.Helper()
	ctx := context.Background()
	id := f.id()
	_, err := f.svc.NewDownload(ctx, id, f.target, actor, []string{"/data/file.bin"})
	require.NoError(t, err)
	require.NoError(t, f.svc.Start(ctx, id))
	b := bytes.Repeat([]byte{'x'}, size)
	sum := sha256.Sum256(b)
	var r io.Reader = bytes.NewReader(b)
	if halfway != nil {
		r = io.MultiReader(bytes.NewReader(b[:size/2]), hookReader(halfway), bytes.NewReader(b[size/2:]))
	}
	return id, f.svc.ReceiveContent(ctx, "guid-q", id, "file.bin", func() string { return hex.EncodeToString(sum[:]) }, r)
}

// hookReader runs its func when read, and is empty.
type hookReader func()

func (h hookReader) Read([]byte) (int, error) {
	h()
	return 0, io.EOF
}

// upload stages one item of size bytes for actor, declaring declared
// bytes up front; it returns the transfer ID and the first error.
func (f *quotaFixture) upload(t *testing.T, actor string, size int, declared int64) (cairn.TransferID, error) {
	t.Helper()
	ctx := context.Background()
	id := f.id()
	up, err := f.svc.NewUpload(ctx, id, f.target, actor, "/dest", ConflictRename, nil, declared)
	if err != nil {
		return id, err
	}
	n, _, err := f.svc.StageItem(ctx, up, 1, "a.bin", bytes.NewReader(bytes.Repeat([]byte{'u'}, size)), DefaultMaxUpload)
	if err != nil {
		return id, err
	}
	return id, f.svc.SetTotal(ctx, up, n)
}

func (f *quotaFixture) transfer(t *testing.T, id cairn.TransferID) db.FileTransfer {
	t.Helper()
	tr, err := f.store.FileTransferGet(context.Background(), id)
	require.NoError(t, err)
	return tr
}

// requireRefused checks a refusal's code (and, for the concurrency cap,
// its Retry-After).
func requireRefused(t *testing.T, err error, code string) {
	t.Helper()
	require.Error(t, err)
	require.True(t, cairn.IsCode(err, code), "want %s, got %v", code, err)
	if code == cairn.ECodeTransferLimitReached {
		var ce *cairn.Error
		require.ErrorAs(t, err, &ce)
		require.Equal(t, RetryAfterLimit, ce.RetryAfterSeconds)
	}
}

// One operator's staged bytes stop at their budget, for an upload that
// declares its size and for a download whose artifact streams past it
// (which fails with the code in its state and releases what it held);
// another operator still transfers.
func TestTransferQuotaPerOperator(t *testing.T) {
	t.Parallel()
	f := setupQuotas(t, Quotas{OperatorBytes: 3 * mib})
	id, err := f.download(t, "alice", 2*mib)
	require.NoError(t, err)
	require.Equal(t, StateCompleted, f.transfer(t, id).State)
	require.EqualValues(t, 2*mib, f.transfer(t, id).BytesReserved)

	// declared up front: refused before anything is stored
	_, err = f.upload(t, "alice", 2*mib, 2*mib)
	requireRefused(t, err, cairn.ECodeTransferQuotaExceeded)

	// streamed past the budget: the transfer fails and holds nothing
	id, err = f.download(t, "alice", 2*mib)
	requireRefused(t, err, cairn.ECodeTransferQuotaExceeded)
	tr := f.transfer(t, id)
	require.Equal(t, StateFailed, tr.State)
	require.Equal(t, cairn.ECodeTransferQuotaExceeded, tr.ErrorCode)
	require.Contains(t, tr.ErrorMessage, "CAIRN_TRANSFER_OPERATOR_QUOTA_BYTES")
	require.NotNil(t, tr.PurgedAt)

	// within what is left, and another operator's
	_, err = f.upload(t, "alice", mib, 0)
	require.NoError(t, err)
	id, err = f.download(t, "bob", 3*mib)
	require.NoError(t, err)
	require.Equal(t, StateCompleted, f.transfer(t, id).State)
}

// The Engine's budget holds across operators.
func TestTransferQuotaGlobal(t *testing.T) {
	t.Parallel()
	f := setupQuotas(t, Quotas{Bytes: 3 * mib})
	_, err := f.download(t, "alice", 2*mib)
	require.NoError(t, err)
	_, err = f.upload(t, "bob", 2*mib, 2*mib)
	requireRefused(t, err, cairn.ECodeTransferQuotaExceeded)
	require.Contains(t, err.Error(), "CAIRN_TRANSFER_QUOTA_BYTES")
	id, err := f.upload(t, "bob", 2*mib, 0) // no size declared: refused as it is staged
	requireRefused(t, err, cairn.ECodeTransferQuotaExceeded)
	require.NoError(t, f.svc.Purge(context.Background(), id)) // as the upload route does
	_, err = f.upload(t, "bob", mib, 0)
	require.NoError(t, err)
}

// Live transfers stop at the caps with transfer_limit_reached and a
// Retry-After; an ended one frees its slot.
func TestTransferQuotaConcurrency(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setupQuotas(t, Quotas{Concurrent: 3, OperatorConcurrent: 2})
	a1, a2 := f.id(), f.id()
	_, err := f.svc.NewDownload(ctx, a1, f.target, "alice", []string{"/x"})
	require.NoError(t, err)
	_, err = f.svc.NewUpload(ctx, a2, f.target, "alice", "/dest", ConflictRename, nil, 0)
	require.NoError(t, err)
	_, err = f.svc.NewDownload(ctx, f.id(), f.target, "alice", []string{"/x"})
	requireRefused(t, err, cairn.ECodeTransferLimitReached)
	require.Contains(t, err.Error(), "CAIRN_TRANSFER_OPERATOR_MAX_CONCURRENT=2")
	_, err = f.svc.NewDownload(ctx, f.id(), f.target, "bob", []string{"/x"})
	require.NoError(t, err)
	_, err = f.svc.NewUpload(ctx, f.id(), f.target, "carol", "/dest", ConflictRename, nil, 0)
	requireRefused(t, err, cairn.ECodeTransferLimitReached)
	require.Contains(t, err.Error(), "CAIRN_TRANSFER_MAX_CONCURRENT=3")

	_, err = f.svc.Cancel(ctx, a1, "alice")
	require.NoError(t, err)
	_, err = f.svc.NewDownload(ctx, f.id(), f.target, "carol", []string{"/x"})
	require.NoError(t, err)
}

// What a transfer held comes back once it completed (an upload, purged by
// its workflow), was cancelled, failed, or outlived its retention (the
// sweep), and once a transfer left running by a lost workflow is swept.
func TestTransferQuotaReleased(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		name string
		end  func(t *testing.T, f *quotaFixture, id cairn.TransferID)
	}{
		{"completed upload", func(t *testing.T, f *quotaFixture, id cairn.TransferID) {
			_, err := f.svc.Finish(ctx, id, StateCompleted, "", "")
			require.NoError(t, err)
			require.NoError(t, f.svc.Purge(ctx, id))
		}},
		{"cancelled", func(t *testing.T, f *quotaFixture, id cairn.TransferID) {
			_, err := f.svc.Cancel(ctx, id, "alice")
			require.NoError(t, err)
			require.NoError(t, f.svc.Purge(ctx, id))
		}},
		{"failed", func(t *testing.T, f *quotaFixture, id cairn.TransferID) {
			_, err := f.svc.Finish(ctx, id, StateFailed, "failed", "the agent could not write")
			require.NoError(t, err)
			require.NoError(t, f.svc.Purge(ctx, id))
		}},
		{"expired", func(t *testing.T, f *quotaFixture, id cairn.TransferID) {
			_, err := f.svc.Finish(ctx, id, StateCompleted, "", "")
			require.NoError(t, err)
			swept, err := New(f.store, Config{Retention: time.Nanosecond}).Sweep(ctx)
			require.NoError(t, err)
			require.EqualValues(t, 1, swept)
		}},
		{"lost workflow", func(t *testing.T, f *quotaFixture, id cairn.TransferID) {
			require.NoError(t, f.svc.Start(ctx, id))
			_, err := f.store.Pool.Exec(ctx, "UPDATE file_transfers SET updated_at = now() - interval '7 hours' WHERE id = $1", id)
			require.NoError(t, err)
			swept, err := f.svc.Sweep(ctx)
			require.NoError(t, err)
			require.EqualValues(t, 1, swept)
			require.Equal(t, ECodeTransferStalled, f.transfer(t, id).ErrorCode)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := setupQuotas(t, Quotas{Bytes: 2 * mib, OperatorConcurrent: 1})
			id, err := f.upload(t, "alice", 2*mib, 0)
			require.NoError(t, err)
			_, err = f.upload(t, "alice", mib, 0)
			requireRefused(t, err, cairn.ECodeTransferLimitReached)
			_, err = f.upload(t, "bob", mib, mib)
			requireRefused(t, err, cairn.ECodeTransferQuotaExceeded)
			c.end(t, f, id)
			_, err = f.upload(t, "alice", 2*mib, 2*mib)
			require.NoError(t, err)
		})
	}
}

// Many replicas admitting at once: exactly the cap's worth get through,
// for slots and for bytes.
func TestTransferQuotaRace(t *testing.T) {
	t.Parallel()
	const n, k = 24, 5
	for _, c := range []struct {
		name   string
		quotas Quotas
		start  func(f *quotaFixture, ctx context.Context, id cairn.TransferID) error
		code   string
	}{
		{"concurrent", Quotas{Concurrent: k}, func(f *quotaFixture, ctx context.Context, id cairn.TransferID) error {
			_, err := f.svc.NewDownload(ctx, id, f.target, "alice", []string{"/x"})
			return err
		}, cairn.ECodeTransferLimitReached},
		{"bytes", Quotas{Bytes: k * mib}, func(f *quotaFixture, ctx context.Context, id cairn.TransferID) error {
			_, err := f.svc.NewUpload(ctx, id, f.target, "alice", "/dest", ConflictRename, nil, mib)
			return err
		}, cairn.ECodeTransferQuotaExceeded},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := setupQuotas(t, c.quotas)
			ctx := context.Background()
			var wg sync.WaitGroup
			var ok, refused atomic.Int32
			start := make(chan struct{})
			for range n {
				id := f.id()
				wg.Go(func() {
					<-start
					err := c.start(f, ctx, id)
					switch {
					case err == nil:
						ok.Add(1)
					case cairn.IsCode(err, c.code):
						refused.Add(1)
					default:
						t.Errorf("unexpected: %v", err)
					}
				})
			}
			close(start)
			wg.Wait()
			require.EqualValues(t, k, ok.Load())
			require.EqualValues(t, n-k, refused.Load())
		})
	}
}

// Staging keeps the disk headroom: a new transfer is refused when free
// space is already short, and a download that would eat into it fails
// with insufficient_storage and releases what it held.
func TestTransferQuotaDiskHeadroom(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var free atomic.Uint64
	free.Store(10 * mib)
	var asked atomic.Value
	f := setupQuotas(t, Quotas{MinFreeBytes: 4 * mib, StagingPath: "/staging", FreeBytes: func(path string) (uint64, error) {
		asked.Store(path)
		return free.Load(), nil
	}})
	id, err := f.download(t, "alice", 2*mib)
	require.NoError(t, err)
	require.Equal(t, "/staging", asked.Load())

	// 10 MiB free, 4 kept: 8 MiB declared is refused; a download whose
	// disk fills while it streams stops short
	_, err = f.upload(t, "alice", mib, 8*mib)
	requireRefused(t, err, cairn.ECodeInsufficientStorage)
	id, err = f.downloadWith(t, "alice", 8*mib, func() { free.Store(4*mib + mib/2) })
	requireRefused(t, err, cairn.ECodeInsufficientStorage)
	tr := f.transfer(t, id)
	require.Equal(t, StateFailed, tr.State)
	require.Equal(t, cairn.ECodeInsufficientStorage, tr.ErrorCode)
	require.NotNil(t, tr.PurgedAt)

	free.Store(3 * mib)
	_, err = f.svc.NewDownload(ctx, f.id(), f.target, "alice", []string{"/x"})
	requireRefused(t, err, cairn.ECodeInsufficientStorage)
	free.Store(10 * mib)
	_, err = f.svc.NewDownload(ctx, f.id(), f.target, "alice", []string{"/x"})
	require.NoError(t, err)
}

// The default free-space probe reads the filesystem.
func TestStatfsFree(t *testing.T) {
	t.Parallel()
	n, err := StatfsFree(t.TempDir())
	require.NoError(t, err)
	require.Positive(t, n)
	_, err = StatfsFree("/no/such/dir/for/cairn")
	require.Error(t, err)
}
