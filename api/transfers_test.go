package api_test

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent"
	"github.com/cairn-rmm/cairn/agent/files"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/runtime"
	"github.com/cairn-rmm/cairn/agent/transport"
	"github.com/cairn-rmm/cairn/internal/authtest"
	"github.com/cairn-rmm/cairn/internal/pgtest"
	"github.com/cairn-rmm/cairn/internal/transfers"
)

// testCaller is the Device access of a test agent for the real transfer
// code (agent/files): DPoP-signed requests with the agent's key and
// token, to whichever Engine base URL is current (an Engine restart
// moves it). Hooks wrap the bodies of item fetches and content posts,
// to hold a transfer at a known point or damage its bytes.
type testCaller struct {
	a    *testAgent
	base atomic.Pointer[string]

	mu       sync.Mutex
	openHook func(body io.ReadCloser) io.ReadCloser
	sendHook func(body io.Reader) io.Reader
	// prepareHook changes a content post after the agent prepared it.
	prepareHook func(*http.Request)
}

func (c *testCaller) setBase(u string) { c.base.Store(&u) }

func (c *testCaller) request(ctx context.Context, method, path string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, *c.base.Load()+path, body)
	if err != nil {
		return nil, err
	}
	proof, err := agent.NewProof(c.a.key, method, testPublicURL+path, c.a.access, c.a.f.clk.Now())
	if err != nil {
		return nil, err
	}
	req.Header.Set(proto.HeaderAgentContext, proto.AgentContextValue(proto.ContextPrivileged))
	req.Header.Set(proto.HeaderDPoP, proof)
	req.Header.Set("Authorization", proto.AuthScheme+" "+c.a.access)
	return req, nil
}

func (c *testCaller) Call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := c.request(ctx, method, path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return c.finish(req, out)
}

func (c *testCaller) finish(req *http.Request, out any) error {
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if err := transport.CheckResponse(res); err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(res.Body).Decode(out)
}

func (c *testCaller) Open(ctx context.Context, path string) (io.ReadCloser, error) {
	req, err := c.request(ctx, "GET", path, nil)
	if err != nil {
		return nil, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if err := transport.CheckResponse(res); err != nil {
		res.Body.Close()
		return nil, err
	}
	c.mu.Lock()
	hook := c.openHook
	c.mu.Unlock()
	if hook != nil {
		return hook(res.Body), nil
	}
	return res.Body, nil
}

func (c *testCaller) Send(ctx context.Context, method, path string, body io.Reader, prepare func(*http.Request), out any) error {
	c.mu.Lock()
	hook := c.sendHook
	c.mu.Unlock()
	if hook != nil {
		body = hook(body)
	}
	req, err := c.request(ctx, method, path, body)
	if err != nil {
		return err
	}
	if prepare != nil {
		prepare(req)
	}
	c.mu.Lock()
	ph := c.prepareHook
	c.mu.Unlock()
	if ph != nil {
		ph(req)
	}
	return c.finish(req, out)
}

// transferAgent enrolls hostname in site and serves its socket with the
// real file_management_request handler.
func (f *fixture) transferAgent(t *testing.T, admin string, site int64, hostname string) (*testAgent, *testCaller) {
	t.Helper()
	a := f.enrolled(t, admin, site, hostname)
	c := &testCaller{a: a}
	c.setBase(f.url)
	handlers := runtime.NewHandlers()
	require.NoError(t, files.Register(handlers, files.Options{ProgressInterval: 50 * time.Millisecond}))
	conn := a.connect(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); conn.CloseNow(); <-done })
	go func() {
		defer close(done)
		serveSocket(ctx, conn, handlers, c)
	}()
	return a, c
}

// uploadFile is one file part: its name relative to the destination.
type uploadFile struct {
	name string
	body io.Reader
}

// multipartUpload streams a multipart body (fields first, then files)
// through a pipe, so a big file is never held.
func multipartUpload(fields [][2]string, parts []uploadFile) (io.Reader, string) {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		err := func() error {
			for _, kv := range fields {
				if err := mw.WriteField(kv[0], kv[1]); err != nil {
					return err
				}
			}
			for _, p := range parts {
				h := textproto.MIMEHeader{}
				h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename=%q`, p.name))
				h.Set("Content-Type", "application/octet-stream")
				w, err := mw.CreatePart(h)
				if err != nil {
					return err
				}
				if _, err := io.Copy(w, p.body); err != nil {
					return err
				}
			}
			return mw.Close()
		}()
		pw.CloseWithError(err)
	}()
	return pr, mw.FormDataContentType()
}

func (f *fixture) upload(t *testing.T, token, hostname string, fields [][2]string, parts ...uploadFile) response {
	t.Helper()
	body, ctype := multipartUpload(fields, parts)
	req, err := http.NewRequest("POST", f.url+"/api/device/files/"+hostname+"/upload", body)
	require.NoError(t, err)
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("Authorization", "Bearer "+token)
	return do(t, req)
}

func transferPath(hostname, id, what string) string {
	return "/api/device/files/" + hostname + "/transfer/" + id + "/" + what
}

// waitTransfer waits until the transfer ended and returns its snapshot
// (the limit is a hang guard only; a failure shows the last answer).
func (f *fixture) waitTransfer(t *testing.T, token, hostname, id string) map[string]any {
	t.Helper()
	var snap map[string]any
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		r := f.do(t, "GET", transferPath(hostname, id, "status"), token, nil)
		require.Equal(c, 200, r.Status, r.Raw)
		require.Contains(c, []any{"completed", "failed", "cancelled"}, r.Body["state"], "transfer %s: %s", id, r.Raw)
		snap = r.Body
	}, 3*time.Minute, 20*time.Millisecond)
	return snap
}

// waitFor waits until cond holds (a hang guard of a few minutes).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, 3*time.Minute, 20*time.Millisecond, "never: %s", what)
}

// fetchContent streams a download's content through SHA-256 into a file
// under dir and returns the file, its sum and the answer's headers.
func (f *fixture) fetchContent(t *testing.T, token, hostname, id, dir string) (string, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest("GET", f.url+transferPath(hostname, id, "content"), nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	out, err := os.CreateTemp(dir, "content-*")
	require.NoError(t, err)
	defer out.Close()
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(out, h), res.Body)
	require.NoError(t, err)
	return out.Name(), hex.EncodeToString(h.Sum(nil)), res.Header
}

func sha256File(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	h := sha256.New()
	_, err = io.Copy(h, f)
	require.NoError(t, err)
	return hex.EncodeToString(h.Sum(nil))
}

// detReader is size deterministic pseudo-random bytes named by seed.
func detReader(seed byte, size int64) io.Reader {
	var key [32]byte
	key[0] = seed
	return io.LimitReader(rand.NewChaCha8(key), size)
}

func detSHA(seed byte, size int64) string {
	h := sha256.New()
	_, _ = io.Copy(h, detReader(seed, size))
	return hex.EncodeToString(h.Sum(nil))
}

func transferID(t *testing.T, r response) string {
	t.Helper()
	require.Equal(t, 202, r.Status, r.Raw)
	id, _ := r.Body["transfer_id"].(string)
	require.NotEmpty(t, id, r.Raw)
	return id
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func TestFileTransferUploadConflictsAndDownloads(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "xfer")
	f.transferAgent(t, admin, site, "xfer-host")
	dest := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dest, "keep.txt"), []byte("old keep"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dest, "over.txt"), []byte("old over"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dest, "dup.txt"), []byte("old dup"), 0o644))

	// A folder upload with an empty folder in its manifest, under each
	// conflict policy.
	upload := func(conflict string, files ...uploadFile) map[string]any {
		fields := [][2]string{{"destination", dest}, {"manifest", `{"directories": ["tree/empty"]}`}}
		if conflict != "" {
			fields = append(fields, [2]string{"conflict", conflict})
		}
		id := transferID(t, f.upload(t, admin, "xfer-host", fields, files...))
		return f.waitTransfer(t, admin, "xfer-host", id)
	}
	snap := upload("", uploadFile{"tree/a.txt", strings.NewReader("alpha")}, uploadFile{"tree/sub/b.txt", strings.NewReader("beta")},
		uploadFile{"dup.txt", strings.NewReader("new dup")})
	require.Equal(t, "completed", snap["state"], snap)
	require.Equal(t, "upload", snap["direction"])
	require.EqualValues(t, 5+4+7, snap["bytes_total"])
	require.EqualValues(t, 5+4+7, snap["bytes_done"])
	require.Len(t, snap["items"], 3)
	item := snap["items"].([]any)[0].(map[string]any)
	require.Equal(t, "tree/a.txt", item["name"])
	require.Equal(t, "completed", item["state"])
	sum := sha256.Sum256([]byte("alpha"))
	require.Equal(t, hex.EncodeToString(sum[:]), item["sha256"])
	require.Equal(t, "alpha", readFile(t, filepath.Join(dest, "tree/a.txt")))
	require.Equal(t, "beta", readFile(t, filepath.Join(dest, "tree/sub/b.txt")))
	require.DirExists(t, filepath.Join(dest, "tree/empty"))
	// rename (the default) kept the old file and wrote beside it
	require.Equal(t, "old dup", readFile(t, filepath.Join(dest, "dup.txt")))
	require.Equal(t, "new dup", readFile(t, filepath.Join(dest, "dup (1).txt")))

	snap = upload("skip", uploadFile{"keep.txt", strings.NewReader("new keep")})
	require.Equal(t, "completed", snap["state"], snap)
	require.Equal(t, "skipped", snap["items"].([]any)[0].(map[string]any)["state"])
	require.Equal(t, "old keep", readFile(t, filepath.Join(dest, "keep.txt")))

	snap = upload("overwrite", uploadFile{"over.txt", strings.NewReader("new over")})
	uploadID := snap["transfer_id"].(string)
	require.Equal(t, "completed", snap["state"], snap)
	require.Equal(t, "new over", readFile(t, filepath.Join(dest, "over.txt")))

	// No temp file is left behind.
	leftovers, err := filepath.Glob(filepath.Join(dest, "*", ".cairn-upload-*"))
	require.NoError(t, err)
	require.Empty(t, leftovers)

	// The device's activity history has a row per transfer.
	act := f.do(t, "GET", "/api/device/activity/xfer-host", admin, nil)
	require.Equal(t, 200, act.Status, act.Raw)
	require.Contains(t, act.Raw, "file_upload")
	// Operators' transfer requests are in the audit trail; the agent's
	// callbacks are not.
	audit := f.do(t, "GET", "/api/server/audit", admin, nil)
	require.Equal(t, 200, audit.Status, audit.Raw)
	require.Contains(t, audit.Raw, "/api/device/files/{hostname}/upload")
	require.NotContains(t, audit.Raw, "/api/agent/files/transfers/")

	// Download one file: its bytes as they are.
	id := transferID(t, f.do(t, "POST", "/api/device/files/xfer-host/download", admin, map[string]any{"paths": []string{filepath.Join(dest, "tree/a.txt")}}))
	snap = f.waitTransfer(t, admin, "xfer-host", id)
	require.Equal(t, "completed", snap["state"], snap)
	require.Equal(t, "a.txt", snap["content_name"])
	waitFor(t, "the download's activity row completed", func() bool {
		act := f.do(t, "GET", "/api/device/activity/xfer-host", admin, nil)
		return strings.Contains(act.Raw, "Download "+filepath.Join(dest, "tree/a.txt")) && strings.Contains(act.Raw, "file_download")
	})
	got, gotSum, h := f.fetchContent(t, admin, "xfer-host", id, t.TempDir())
	require.Equal(t, "alpha", readFile(t, got))
	require.Equal(t, gotSum, h.Get("X-Content-SHA256"))
	require.Equal(t, hex.EncodeToString(sum[:]), gotSum)
	require.Contains(t, h.Get("Content-Disposition"), "attachment")
	require.Contains(t, h.Get("Content-Disposition"), "a.txt")

	// Download a directory: a zip with the tree, empty folders included.
	id = transferID(t, f.do(t, "POST", "/api/device/files/xfer-host/download", admin, map[string]any{"paths": []string{filepath.Join(dest, "tree")}}))
	snap = f.waitTransfer(t, admin, "xfer-host", id)
	require.Equal(t, "completed", snap["state"], snap)
	require.Equal(t, "tree.zip", snap["content_name"])
	got, gotSum, h = f.fetchContent(t, admin, "xfer-host", id, t.TempDir())
	require.Equal(t, gotSum, h.Get("X-Content-SHA256"))
	zr, err := zip.OpenReader(got)
	require.NoError(t, err)
	defer zr.Close()
	entries := map[string]string{}
	for _, zf := range zr.File {
		rc, err := zf.Open()
		require.NoError(t, err)
		b, err := io.ReadAll(rc)
		require.NoError(t, err)
		rc.Close()
		entries[zf.Name] = string(b)
	}
	require.Equal(t, "alpha", entries["tree/a.txt"])
	require.Equal(t, "beta", entries["tree/sub/b.txt"])
	require.Contains(t, entries, "tree/empty/")

	// An upload's staged content is deleted once it ended; a download's
	// stays for the retention period.
	waitFor(t, "upload content purged", func() bool {
		tr, err := f.store.FileTransferGet(context.Background(), cairn.TransferID(uploadID))
		require.NoError(t, err)
		return tr.PurgedAt != nil
	})
	tr, err := f.store.FileTransferGet(context.Background(), cairn.TransferID(id))
	require.NoError(t, err)
	require.Nil(t, tr.PurgedAt)

	// The maintenance sweep deletes content past its retention (here: at
	// once); the content route then says so.
	n, err := transfers.New(f.store, transfers.Config{Retention: time.Nanosecond}).Sweep(context.Background())
	require.NoError(t, err)
	require.Positive(t, n)
	r := f.do(t, "GET", transferPath("xfer-host", id, "content"), admin, nil)
	require.Equal(t, 410, r.Status, r.Raw)
	require.Equal(t, "transfer_content_expired", r.Body["error"])
}

// An upload beyond CAIRN_TRANSFER_MAX_BYTES is refused while it streams,
// and what was staged is deleted.
func TestFileTransferUploadTooLarge(t *testing.T) {
	t.Parallel()
	f := &fixture{store: pgtest.NewDB(t), clk: authtest.NewClock(), github: newFakeGitHub(t), transferMaxBytes: 1 << 20}
	f.engine = f.newEngine(t)
	f.url = f.engine.http.URL
	admin := f.admin(t)
	site := f.createSite(t, admin, "toolarge")
	f.transferAgent(t, admin, site, "large-host")
	dest := t.TempDir()
	r := f.upload(t, admin, "large-host", [][2]string{{"destination", dest}},
		uploadFile{"a.bin", detReader(1, 600<<10)}, uploadFile{"b.bin", detReader(2, 600<<10)})
	require.Equal(t, 413, r.Status, r.Raw)
	require.Equal(t, "upload_too_large", r.Body["error"])
	r = f.upload(t, admin, "large-host", [][2]string{{"destination", dest}}, uploadFile{"a.bin", detReader(1, 600<<10)})
	snap := f.waitTransfer(t, admin, "large-host", transferID(t, r))
	require.Equal(t, "completed", snap["state"], snap)
}

// gate holds a stream once it passed after bytes: reached closes, and it
// reads on once release closes. Only the first stream is held.
type gate struct {
	after   int64
	once    atomic.Bool
	reached chan struct{}
	release chan struct{}
}

func newGate(after int64) *gate {
	return &gate{after: after, reached: make(chan struct{}), release: make(chan struct{})}
}

type gatedReader struct {
	r    io.Reader
	g    *gate
	n    int64
	held bool
}

func (g *gate) wrap(r io.Reader) io.Reader {
	if g.once.Swap(true) {
		return r
	}
	return &gatedReader{r: r, g: g}
}

func (r *gatedReader) Read(p []byte) (int, error) {
	if !r.held && r.n >= r.g.after {
		r.held = true
		close(r.g.reached)
		<-r.g.release
	}
	n, err := r.r.Read(p)
	r.n += int64(n)
	return n, err
}

type readCloser struct {
	io.Reader
	io.Closer
}

// flipReader flips the first byte it passes: damaged content.
type flipReader struct {
	r    io.Reader
	done bool
}

func (f *flipReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if n > 0 && !f.done {
		p[0] ^= 0xff
		f.done = true
	}
	return n, err
}

func TestFileTransferLargeFileHashesMatch(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "big")
	f.transferAgent(t, admin, site, "big-host")
	dest := t.TempDir()
	const size = 200 << 20
	want := detSHA(7, size)

	id := transferID(t, f.upload(t, admin, "big-host", [][2]string{{"destination", dest}},
		uploadFile{"big.bin", detReader(7, size)}))
	snap := f.waitTransfer(t, admin, "big-host", id)
	require.Equal(t, "completed", snap["state"], snap)
	require.Equal(t, want, snap["items"].([]any)[0].(map[string]any)["sha256"])
	require.Equal(t, want, sha256File(t, filepath.Join(dest, "big.bin")))

	id = transferID(t, f.do(t, "POST", "/api/device/files/big-host/download", admin,
		map[string]any{"paths": []string{filepath.Join(dest, "big.bin")}}))
	snap = f.waitTransfer(t, admin, "big-host", id)
	require.Equal(t, "completed", snap["state"], snap)
	require.EqualValues(t, size, snap["bytes_total"])
	got, gotSum, h := f.fetchContent(t, admin, "big-host", id, t.TempDir())
	require.NoError(t, os.Remove(got))
	require.Equal(t, want, gotSum)
	require.Equal(t, want, h.Get("X-Content-SHA256"))
}

func TestFileTransferCancelMidTransfer(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "cancel")
	a, c := f.transferAgent(t, admin, site, "cancel-host")
	g := newGate(1 << 20)
	c.openHook = func(body io.ReadCloser) io.ReadCloser { return readCloser{g.wrap(body), body} }
	dest := t.TempDir()

	id := transferID(t, f.upload(t, admin, "cancel-host", [][2]string{{"destination", dest}},
		uploadFile{"part.bin", detReader(1, 8<<20)}))
	<-g.reached
	r := f.do(t, "POST", transferPath("cancel-host", id, "cancel"), admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, "cancelled", r.Body["state"])
	require.Equal(t, "transfer_cancelled", r.Body["error"].(map[string]any)["code"])
	// The agent is told so on its callbacks.
	require.Equal(t, 409, a.device(t, "GET", proto.PathFileTransfers+id+"/upload-item/1", nil).Status)
	st := a.device(t, "GET", proto.PathFileTransfers+id+"/status", nil)
	require.Equal(t, 200, st.Status, st.Raw)
	require.Equal(t, true, st.Body["cancel_requested"])
	close(g.release)

	// The agent drops its temp file and writes nothing.
	waitFor(t, "the agent dropped its temp file", func() bool {
		left, err := filepath.Glob(filepath.Join(dest, ".cairn-upload-*"))
		require.NoError(t, err)
		return len(left) == 0
	})
	require.NoFileExists(t, filepath.Join(dest, "part.bin"))
	// A second cancel changes nothing.
	r = f.do(t, "POST", transferPath("cancel-host", id, "cancel"), admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, "cancelled", r.Body["state"])
	// The activity row closes as cancelled and the staged content goes.
	waitFor(t, "content purged", func() bool {
		tr, err := f.store.FileTransferGet(context.Background(), cairn.TransferID(id))
		require.NoError(t, err)
		return tr.PurgedAt != nil
	})
	act := f.do(t, "GET", "/api/device/activity/cancel-host", admin, nil)
	require.Equal(t, 200, act.Status, act.Raw)
	require.Contains(t, act.Raw, `"cancelled"`)
}

// A download cancelled while the agent streams it ends cancelled; the
// agent stops and what arrived is deleted.
func TestFileTransferCancelDownload(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "cancel-dl")
	_, c := f.transferAgent(t, admin, site, "canceldl-host")
	g := newGate(1 << 20)
	c.sendHook = g.wrap
	src := filepath.Join(t.TempDir(), "data.bin")
	out, err := os.Create(src)
	require.NoError(t, err)
	_, err = io.Copy(out, detReader(4, 8<<20))
	require.NoError(t, err)
	require.NoError(t, out.Close())

	id := transferID(t, f.do(t, "POST", "/api/device/files/canceldl-host/download", admin, map[string]any{"paths": []string{src}}))
	<-g.reached
	r := f.do(t, "POST", transferPath("canceldl-host", id, "cancel"), admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, "cancelled", r.Body["state"])
	close(g.release)
	waitFor(t, "what arrived is deleted", func() bool {
		tr, err := f.store.FileTransferGet(context.Background(), cairn.TransferID(id))
		require.NoError(t, err)
		return tr.PurgedAt != nil
	})
	r = f.do(t, "GET", transferPath("canceldl-host", id, "status"), admin, nil)
	require.Equal(t, "cancelled", r.Body["state"], r.Raw)
	r = f.do(t, "GET", transferPath("canceldl-host", id, "content"), admin, nil)
	require.Equal(t, 409, r.Status, r.Raw)
}

// A download whose content post is cut by an Engine restart is sent again
// by the agent to the restarted Engine, and completes with the right sum.
func TestFileTransferSurvivesEngineRestart(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "restart")
	_, c := f.transferAgent(t, admin, site, "restart-host")
	g := newGate(2 << 20)
	c.sendHook = g.wrap
	src := filepath.Join(t.TempDir(), "data.bin")
	out, err := os.Create(src)
	require.NoError(t, err)
	_, err = io.Copy(out, detReader(3, 16<<20))
	require.NoError(t, err)
	require.NoError(t, out.Close())

	id := transferID(t, f.do(t, "POST", "/api/device/files/restart-host/download", admin, map[string]any{"paths": []string{src}}))
	<-g.reached

	old := f.engine
	old.http.CloseClientConnections()
	old.http.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	old.core.Stop(ctx)
	f.engine = f.newEngine(t)
	f.url = f.engine.http.URL
	r := f.do(t, "POST", "/api/bootstrap/aegis/unlock", "", map[string]any{"passphrase": passphrase})
	require.Equal(t, 200, r.Status, r.Raw)
	c.setBase(f.url)
	close(g.release)

	snap := f.waitTransfer(t, admin, "restart-host", id)
	require.Equal(t, "completed", snap["state"], snap)
	_, gotSum, _ := f.fetchContent(t, admin, "restart-host", id, t.TempDir())
	require.Equal(t, detSHA(3, 16<<20), gotSum)
}

// forgetfulAgent serves a socket whose agent accepts a transfer request
// and drops it (as an agent that restarted) while forget says so, then
// runs it for real; asked counts the requests.
func (f *fixture) forgetfulAgent(t *testing.T, admin string, site int64, hostname string, forget func(n int32) bool) *atomic.Int32 {
	t.Helper()
	a := f.enrolled(t, admin, site, hostname)
	c := &testCaller{a: a}
	c.setBase(f.url)
	handlers := runtime.NewHandlers()
	require.NoError(t, files.Register(handlers, files.Options{ProgressInterval: 50 * time.Millisecond}))
	real := handlers.Lookup(proto.EventFileManagement)
	asked := &atomic.Int32{}
	forgetful := runtime.NewHandlers()
	require.NoError(t, forgetful.Register(proto.EventFileManagement, func(ctx context.Context, call runtime.Caller, p json.RawMessage) (any, error) {
		if forget(asked.Add(1)) {
			return proto.TransferAccepted{Accepted: true}, nil
		}
		return real(ctx, call, p)
	}))
	conn := a.connect(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); conn.CloseNow(); <-done })
	go func() { defer close(done); serveSocket(ctx, conn, forgetful, c) }()
	return asked
}

// An agent that lost a transfer (it restarted) is asked again once the
// transfer stalls, and the transfer completes; one that never works on it
// fails the transfer transfer_stalled after three more requests, each given
// its own stall window (they once went out back to back, failing a working
// agent's transfer before it could finish).
func TestFileTransferAskedAgainAfterStall(t *testing.T) {
	t.Parallel()
	f := &fixture{store: pgtest.NewDB(t), clk: authtest.NewClock(), github: newFakeGitHub(t), transferStall: 5 * time.Second}
	f.engine = f.newEngine(t)
	f.url = f.engine.http.URL
	admin := f.admin(t)
	site := f.createSite(t, admin, "stall")
	asked := f.forgetfulAgent(t, admin, site, "stall-host", func(n int32) bool { return n == 1 })
	never := f.forgetfulAgent(t, admin, site, "never-host", func(int32) bool { return true })

	dest := t.TempDir()
	id := transferID(t, f.upload(t, admin, "stall-host", [][2]string{{"destination", dest}}, uploadFile{"x.txt", strings.NewReader("again")}))
	snap := f.waitTransfer(t, admin, "stall-host", id)
	require.Equal(t, "completed", snap["state"], snap)
	require.Equal(t, "again", readFile(t, filepath.Join(dest, "x.txt")))
	require.GreaterOrEqual(t, asked.Load(), int32(2))

	id = transferID(t, f.upload(t, admin, "never-host", [][2]string{{"destination", dest}}, uploadFile{"y.txt", strings.NewReader("never")}))
	snap = f.waitTransfer(t, admin, "never-host", id)
	require.Equal(t, "failed", snap["state"], snap)
	require.Equal(t, "transfer_stalled", snap["error"].(map[string]any)["code"], snap)
	require.Equal(t, int32(4), never.Load())
	// Each of the four requests had its own window of silence.
	created, err := time.Parse(time.RFC3339Nano, snap["created_at"].(string))
	require.NoError(t, err)
	ended, err := time.Parse(time.RFC3339Nano, snap["updated_at"].(string))
	require.NoError(t, err)
	require.GreaterOrEqual(t, ended.Sub(created), 4*f.transferStall, snap)
	require.NoFileExists(t, filepath.Join(dest, "y.txt"))
}

func TestFileTransferChecksumMismatch(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "sum")
	_, c := f.transferAgent(t, admin, site, "sum-host")
	dest := t.TempDir()

	// Upload: the agent finds the fetched item is not what was staged.
	c.openHook = func(body io.ReadCloser) io.ReadCloser { return readCloser{&flipReader{r: body}, body} }
	id := transferID(t, f.upload(t, admin, "sum-host", [][2]string{{"destination", dest}}, uploadFile{"x.bin", strings.NewReader("payload")}))
	snap := f.waitTransfer(t, admin, "sum-host", id)
	require.Equal(t, "failed", snap["state"], snap)
	require.Equal(t, "checksum_mismatch", snap["error"].(map[string]any)["code"], snap)
	require.NoFileExists(t, filepath.Join(dest, "x.bin"))

	// Download: the Engine finds the content is not what the agent summed.
	src := filepath.Join(dest, "src.txt")
	require.NoError(t, os.WriteFile(src, []byte("some content"), 0o644))
	c.mu.Lock()
	c.openHook = nil
	c.sendHook = func(body io.Reader) io.Reader { return &flipReader{r: body} }
	c.mu.Unlock()
	id = transferID(t, f.do(t, "POST", "/api/device/files/sum-host/download", admin, map[string]any{"paths": []string{src}}))
	snap = f.waitTransfer(t, admin, "sum-host", id)
	require.Equal(t, "failed", snap["state"], snap)
	require.Equal(t, "checksum_mismatch", snap["error"].(map[string]any)["code"], snap)
	r := f.do(t, "GET", transferPath("sum-host", id, "content"), admin, nil)
	require.Equal(t, 409, r.Status, r.Raw)
	require.Equal(t, "transfer_not_ready", r.Body["error"])
}

func TestFileTransferRefusals(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "refuse")
	other := f.createSite(t, admin, "elsewhere")
	a, _ := f.transferAgent(t, admin, site, "refuse-host")
	b := f.enrolled(t, admin, other, "other-host")
	dest := t.TempDir()
	hello := func() uploadFile { return uploadFile{"x.txt", strings.NewReader("hi")} }

	for _, tc := range []struct {
		name   string
		fields [][2]string
		files  []uploadFile
		field  string
	}{
		{"no destination", nil, []uploadFile{hello()}, "destination"},
		{"relative destination", [][2]string{{"destination", "tmp/x"}}, []uploadFile{hello()}, "destination"},
		{"bad conflict", [][2]string{{"destination", dest}, {"conflict", "merge"}}, []uploadFile{hello()}, "conflict"},
		{"escaping name", [][2]string{{"destination", dest}}, []uploadFile{{"../x.txt", strings.NewReader("x")}}, "file"},
		{"nothing", [][2]string{{"destination", dest}}, nil, "file"},
		{"bad manifest", [][2]string{{"destination", dest}, {"manifest", `{"directories": ["../up"]}`}}, []uploadFile{hello()}, "manifest"},
		{"unknown field", [][2]string{{"destination", dest}, {"color", "red"}}, []uploadFile{hello()}, "color"},
	} {
		r := f.upload(t, admin, "refuse-host", tc.fields, tc.files...)
		require.Equal(t, 400, r.Status, "%s: %s", tc.name, r.Raw)
		require.Equal(t, "validation_failed", r.Body["error"], tc.name)
		require.NotEmpty(t, r.field(tc.field), "%s: %s", tc.name, r.Raw)
	}
	r := f.do(t, "POST", "/api/device/files/refuse-host/upload", admin, map[string]any{"destination": dest})
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("body"), r.Raw)
	for _, paths := range []any{[]string{}, []string{"relative/x"}, []string{"/ok", "C:"}} {
		r := f.do(t, "POST", "/api/device/files/refuse-host/download", admin, map[string]any{"paths": paths})
		require.Equal(t, 400, r.Status, r.Raw)
		require.NotEmpty(t, r.field("paths"), r.Raw)
	}
	r = f.do(t, "GET", transferPath("refuse-host", "not-a-uuid", "status"), admin, nil)
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("transfer_id"), r.Raw)

	// The agent refuses what it cannot do; the transfer fails with its code.
	id := transferID(t, f.do(t, "POST", "/api/device/files/refuse-host/download", admin,
		map[string]any{"paths": []string{filepath.Join(dest, "missing.txt")}}))
	snap := f.waitTransfer(t, admin, "refuse-host", id)
	require.Equal(t, "failed", snap["state"], snap)
	require.Equal(t, "path_not_found", snap["error"].(map[string]any)["code"], snap)
	id2 := transferID(t, f.upload(t, admin, "refuse-host", [][2]string{{"destination", filepath.Join(dest, "nope")}}, hello()))
	snap = f.waitTransfer(t, admin, "refuse-host", id2)
	require.Equal(t, "failed", snap["state"], snap)
	require.Equal(t, "path_not_found", snap["error"].(map[string]any)["code"], snap)

	// Out of scope: an operator of another site sees no device.
	scoped := f.scopedOperatorOf(t, admin, "xfer-scoped", other)
	r = f.upload(t, scoped, "refuse-host", [][2]string{{"destination", dest}}, hello())
	require.Equal(t, 404, r.Status, r.Raw)
	r = f.do(t, "POST", "/api/device/files/refuse-host/download", scoped, map[string]any{"paths": []string{dest}})
	require.Equal(t, 404, r.Status, r.Raw)
	for _, what := range []string{"status", "content"} {
		r = f.do(t, "GET", transferPath("refuse-host", id, what), scoped, nil)
		require.Equal(t, 404, r.Status, r.Raw)
	}
	r = f.do(t, "POST", transferPath("refuse-host", id, "cancel"), scoped, nil)
	require.Equal(t, 404, r.Status, r.Raw)
	// ... nor is a transfer found under another device's name.
	r = f.do(t, "GET", transferPath("other-host", id, "status"), admin, nil)
	require.Equal(t, 404, r.Status, r.Raw)

	// Another device cannot touch this device's transfer.
	for _, p := range []string{"/status", "/upload-item/1"} {
		r = b.device(t, "GET", proto.PathFileTransfers+id2+p, nil)
		require.Equal(t, 404, r.Status, r.Raw)
		require.Equal(t, "transfer_not_found", r.Body["error"], r.Raw)
	}
	r = b.device(t, "POST", proto.PathFileTransfers+id2+"/progress", proto.TransferProgress{ItemID: 1, BytesDone: 1})
	require.Equal(t, 404, r.Status, r.Raw)
	r = a.device(t, "GET", proto.PathFileTransfers+id2+"/status", nil)
	require.Equal(t, 200, r.Status, r.Raw)

	// Quarantined: nothing new starts; what exists stays readable.
	q := f.do(t, "POST", "/api/devices/"+a.guid+"/quarantine", admin, nil)
	require.Equal(t, 200, q.Status, q.Raw)
	r = f.upload(t, admin, "refuse-host", [][2]string{{"destination", dest}}, hello())
	require.Equal(t, 409, r.Status, r.Raw)
	require.Equal(t, "device_quarantined", r.Body["error"])
	r = f.do(t, "POST", "/api/device/files/refuse-host/download", admin, map[string]any{"paths": []string{dest}})
	require.Equal(t, 409, r.Status, r.Raw)
	require.Equal(t, "device_quarantined", r.Body["error"])
	r = f.do(t, "GET", transferPath("refuse-host", id, "status"), admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
}

// A transfer belongs to its device, not to the name it was made under: a
// device renamed (its agent re-enrolled under a new name) keeps its
// transfers, and a new device given the old name never sees them.
func TestFileTransferFollowsTheDeviceNotItsName(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "rename")
	a, _ := f.transferAgent(t, admin, site, "xfer-old")
	dest := t.TempDir()
	id := transferID(t, f.upload(t, admin, "xfer-old", [][2]string{{"destination", dest}},
		uploadFile{"note.txt", strings.NewReader("hello")}))
	require.Equal(t, "completed", f.waitTransfer(t, admin, "xfer-old", id)["state"])

	// Re-enrolment renames a device in place (DeviceReenroll); the test
	// renames it the same way, in one statement.
	_, err := f.store.Pool.Exec(t.Context(), `UPDATE devices SET hostname = 'xfer-new' WHERE guid = $1`, a.guid)
	require.NoError(t, err)
	r := f.do(t, "GET", transferPath("xfer-new", id, "status"), admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, "completed", r.Body["state"])
	r = f.do(t, "GET", transferPath("xfer-old", id, "status"), admin, nil)
	require.Equal(t, 404, r.Status, r.Raw)

	// Another device now called xfer-old sees nothing of the first's.
	f.enrolled(t, admin, site, "xfer-old")
	for _, what := range []string{"status", "content"} {
		r = f.do(t, "GET", transferPath("xfer-old", id, what), admin, nil)
		require.Equal(t, 404, r.Status, r.Raw)
		require.Equal(t, "transfer_not_found", r.Body["error"], r.Raw)
	}
	r = f.do(t, "POST", transferPath("xfer-old", id, "cancel"), admin, nil)
	require.Equal(t, 404, r.Status, r.Raw)
}

// What an agent names is not trusted: X-Content-Name loses its bidi and
// control characters before it is stored or put in a Content-Disposition,
// and a zip whose central directory names a path outside the operator's
// folder is refused (validation_failed) with nothing kept.
func TestFileTransferArtifactFromTheAgent(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "artifact")
	_, c := f.transferAgent(t, admin, site, "artifact-host")
	dest := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dest, "tree"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dest, "tree", "a.txt"), []byte("alpha"), 0o644))

	c.mu.Lock()
	c.prepareHook = func(r *http.Request) { r.Header.Set(proto.HeaderContentName, "tr\u202Eee\u2066\u200F.zip") }
	c.mu.Unlock()
	id := transferID(t, f.do(t, "POST", "/api/device/files/artifact-host/download", admin, map[string]any{"paths": []string{filepath.Join(dest, "tree")}}))
	snap := f.waitTransfer(t, admin, "artifact-host", id)
	require.Equal(t, "completed", snap["state"], snap)
	require.Equal(t, "tree.zip", snap["content_name"])
	_, _, h := f.fetchContent(t, admin, "artifact-host", id, t.TempDir())
	require.Equal(t, "attachment; filename*=UTF-8''tree.zip", h.Get("Content-Disposition"))

	for _, entry := range []string{"../../etc/cron.d/evil", "/etc/passwd", `tree\..\..\evil`, "C:/Windows/evil.dll"} {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		w, err := zw.CreateHeader(&zip.FileHeader{Name: entry, Method: zip.Store})
		require.NoError(t, err)
		_, _ = w.Write([]byte("evil"))
		require.NoError(t, zw.Close())
		sum := sha256.Sum256(buf.Bytes())
		c.mu.Lock()
		c.prepareHook = func(r *http.Request) {
			r.Body = io.NopCloser(bytes.NewReader(buf.Bytes()))
			r.ContentLength = int64(buf.Len())
			r.Trailer = nil
			r.Header.Set(proto.HeaderContentSHA256, hex.EncodeToString(sum[:]))
		}
		c.mu.Unlock()
		id := transferID(t, f.do(t, "POST", "/api/device/files/artifact-host/download", admin, map[string]any{"paths": []string{filepath.Join(dest, "tree")}}))
		snap := f.waitTransfer(t, admin, "artifact-host", id)
		require.Equal(t, "failed", snap["state"], "%q: %v", entry, snap)
		e := snap["error"].(map[string]any)
		require.Equal(t, "validation_failed", e["code"], snap)
		require.Contains(t, e["message"], "refused", snap)
		r := f.do(t, "GET", transferPath("artifact-host", id, "content"), admin, nil)
		require.NotEqual(t, 200, r.Status, r.Raw)
	}
}
