package api_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/authtest"
	"github.com/cairn-rmm/cairn/internal/pgtest"
	"github.com/cairn-rmm/cairn/internal/transfers"
)

// uploadSized sends an upload whose body is built first, so the request
// carries a Content-Length (what a browser sends): the size it declares.
func (f *fixture) uploadSized(t *testing.T, token, hostname, dest string, name string, body io.Reader) response {
	t.Helper()
	r, ctype := multipartUpload([][2]string{{"destination", dest}}, []uploadFile{{name, body}})
	b, err := io.ReadAll(r)
	require.NoError(t, err)
	req, err := http.NewRequest("POST", f.url+"/api/device/files/"+hostname+"/upload", bytes.NewReader(b))
	require.NoError(t, err)
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("Authorization", "Bearer "+token)
	return do(t, req)
}

// Transfer quotas through the routes: a second live transfer of an
// operator at the cap is 429 transfer_limit_reached with Retry-After; an
// operator's retained download counts against their budget (507
// transfer_quota_exceeded for an upload that declares more, and a
// download whose artifact goes beyond it fails with that code in its
// state) while another operator still transfers; a completed upload
// gives its bytes back; low disk is 507 insufficient_storage.
func TestTransferQuotasThroughTheAPI(t *testing.T) {
	t.Parallel()
	var free atomic.Uint64
	free.Store(1 << 40)
	const budget = 3 << 20
	f := &fixture{store: pgtest.NewDB(t), clk: authtest.NewClock(), github: newFakeGitHub(t),
		transferQuotas: transfers.Quotas{OperatorBytes: budget, OperatorConcurrent: 1, MinFreeBytes: 1 << 30,
			StagingPath: "/staging", FreeBytes: func(string) (uint64, error) { return free.Load(), nil }}}
	f.engine = f.newEngine(t)
	f.url = f.engine.http.URL
	admin := f.admin(t)
	site := f.createSite(t, admin, "quotas")
	oper := f.scopedOperatorOf(t, admin, "quota-operator", site)
	_, c := f.transferAgent(t, admin, site, "quota-host")
	dir := t.TempDir()
	src := filepath.Join(dir, "two.bin")
	require.NoError(t, os.WriteFile(src, bytes.Repeat([]byte{'d'}, 2<<20), 0o644))
	dest := t.TempDir()

	// The admin's download is held mid-stream: their one slot is taken.
	g := newGate(1 << 20)
	c.mu.Lock()
	c.sendHook = g.wrap
	c.mu.Unlock()
	held := transferID(t, f.do(t, "POST", "/api/device/files/quota-host/download", admin, map[string]any{"paths": []string{src}}))
	<-g.reached
	r := f.do(t, "POST", "/api/device/files/quota-host/download", admin, map[string]any{"paths": []string{src}})
	require.Equal(t, http.StatusTooManyRequests, r.Status, r.Raw)
	require.Equal(t, "transfer_limit_reached", r.Body["error"])
	require.Equal(t, "30", r.Header.Get("Retry-After"))
	require.Contains(t, r.Body["message"], "CAIRN_TRANSFER_OPERATOR_MAX_CONCURRENT=1")
	r = f.uploadSized(t, admin, "quota-host", dest, "a.bin", bytes.NewReader([]byte("a")))
	require.Equal(t, http.StatusTooManyRequests, r.Status, r.Raw)
	// another operator is not held back
	snap := f.waitTransfer(t, oper, "quota-host", transferID(t, f.uploadSized(t, oper, "quota-host", dest, "o.bin", bytes.NewReader([]byte("o")))))
	require.Equal(t, "completed", snap["state"], snap)
	close(g.release)
	snap = f.waitTransfer(t, admin, "quota-host", held)
	require.Equal(t, "completed", snap["state"], snap)

	// The admin's retained 2 MiB leave 1 MiB of their budget.
	r = f.uploadSized(t, admin, "quota-host", dest, "big.bin", detReader(7, 2<<20))
	require.Equal(t, http.StatusInsufficientStorage, r.Status, r.Raw)
	require.Equal(t, "transfer_quota_exceeded", r.Body["error"])
	require.Contains(t, r.Body["message"], "CAIRN_TRANSFER_OPERATOR_QUOTA_BYTES")
	id := transferID(t, f.do(t, "POST", "/api/device/files/quota-host/download", admin, map[string]any{"paths": []string{src}}))
	snap = f.waitTransfer(t, admin, "quota-host", id)
	require.Equal(t, "failed", snap["state"], snap)
	require.Equal(t, "transfer_quota_exceeded", snap["error"].(map[string]any)["code"], snap)
	waitFor(t, "the refused artifact is deleted", func() bool {
		tr, err := f.store.FileTransferGet(context.Background(), cairn.TransferID(id))
		require.NoError(t, err)
		return tr.PurgedAt != nil
	})

	// The operator's completed 2.5 MiB upload gives its bytes back once
	// its workflow deleted the staged files: another fits after it.
	first := transferID(t, f.uploadSized(t, oper, "quota-host", dest, "c.bin", detReader(8, 5<<19)))
	snap = f.waitTransfer(t, oper, "quota-host", first)
	require.Equal(t, "completed", snap["state"], snap)
	waitFor(t, "the upload's staged files are deleted", func() bool {
		tr, err := f.store.FileTransferGet(context.Background(), cairn.TransferID(first))
		require.NoError(t, err)
		return tr.PurgedAt != nil
	})
	snap = f.waitTransfer(t, oper, "quota-host", transferID(t, f.uploadSized(t, oper, "quota-host", dest, "d.bin", detReader(9, 5<<19))))
	require.Equal(t, "completed", snap["state"], snap)

	// Low disk refuses a new transfer before anything is staged.
	free.Store(1<<30 - 1)
	r = f.do(t, "POST", "/api/device/files/quota-host/download", oper, map[string]any{"paths": []string{src}})
	require.Equal(t, http.StatusInsufficientStorage, r.Status, r.Raw)
	require.Equal(t, "insufficient_storage", r.Body["error"])
	r = f.uploadSized(t, oper, "quota-host", dest, "e.bin", bytes.NewReader([]byte("e")))
	require.Equal(t, http.StatusInsufficientStorage, r.Status, r.Raw)
	require.Equal(t, "insufficient_storage", r.Body["error"])
}
