package files

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/runtime"
	"github.com/cairn-rmm/cairn/agent/transport"
)

// errStop ends a transfer's work without a report: the Engine says it
// was cancelled, already ended or is unknown.
var errStop = errors.New("the transfer ended on the Engine")

// claim marks id as worked on by this process; a repeated request (the
// Engine re-asked after losing track) finds it running and is accepted
// without a second worker.
func (s *server) claim(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running[id] {
		return false
	}
	s.running[id] = true
	return true
}

func (s *server) release(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.running, id)
}

func opError(code, format string, args ...any) *proto.Error {
	return &proto.Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// transferPath is a callback path of transfer id.
func transferPath(id, suffix string) string { return proto.PathFileTransfers + id + suffix }

// session is one transfer's conversation with the Engine.
type session struct {
	s        *server
	call     Caller
	id       string
	deadline time.Time // of the current retry streak
	lastPost time.Time
}

// retry runs fn until it succeeds, the Engine says the transfer is over
// (errStop), the failure is final, or the Engine stayed unreachable for
// the retry window.
func (t *session) retry(ctx context.Context, what string, fn func() error) error {
	wait := time.Second
	t.deadline = time.Now().Add(t.s.opts.RetryWindow)
	for {
		err := fn()
		if err == nil || errors.Is(err, errStop) || ctx.Err() != nil {
			return err
		}
		if code := transport.Code(err); code == proto.CodeTransferCancelled || code == proto.CodeTransferNotFound || code == "transfer_ended" {
			return errStop
		}
		var final *finalError
		if errors.As(err, &final) || !retryable(err) || time.Now().After(t.deadline) {
			return err
		}
		t.s.log.Warn("file transfer: retrying", "transfer_id", t.id, "step", what, "err", err, "in", wait)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(wait*2, 15*time.Second)
	}
}

// finalError is a failure trying again cannot mend (a checksum mismatch,
// a file the OS refuses).
type finalError struct {
	code string
	err  error
}

func (e *finalError) Error() string { return e.err.Error() }

// retryable: the Engine was unreachable or answered with a server-side
// or throttling status; a 4xx refusal is final.
func retryable(err error) bool {
	var te *transport.Error
	if errors.As(err, &te) {
		return te.Status >= 500 || te.Status == 408 || te.Status == 429 || te.Status == 401
	}
	return true
}

// status asks the Engine for the transfer's state.
func (t *session) status(ctx context.Context) (proto.TransferStatus, error) {
	var st proto.TransferStatus
	err := t.retry(ctx, "status", func() error {
		return t.call.Call(ctx, "GET", transferPath(t.id, proto.TransferStatusSuffix), nil, &st)
	})
	if err == nil && (st.CancelRequested || st.State == "cancelled" || st.State == "completed" || st.State == "failed") {
		return st, errStop
	}
	return st, err
}

// progress posts p; the answer says whether the transfer was cancelled.
func (t *session) progress(ctx context.Context, p proto.TransferProgress) error {
	t.lastPost = time.Now()
	var st proto.TransferStatus
	err := t.retry(ctx, "progress", func() error {
		return t.call.Call(ctx, "POST", transferPath(t.id, proto.TransferProgressSuffix), p, &st)
	})
	if err == nil && (st.CancelRequested || st.State == "cancelled") {
		return errStop
	}
	return err
}

// tick posts running progress at most every ProgressInterval.
func (t *session) tick(ctx context.Context, p proto.TransferProgress) error {
	if time.Since(t.lastPost) < t.s.opts.ProgressInterval {
		return nil
	}
	return t.progress(ctx, p)
}

// fail reports a failure of item (0: the whole transfer) with err's code.
func (t *session) fail(ctx context.Context, item int32, done int64, err error) {
	code := proto.CodeOpFailed
	var final *finalError
	var pe *proto.Error
	switch {
	case errors.As(err, &final):
		code = final.code
	case errors.As(err, &pe):
		code = pe.Code
	}
	if perr := t.progress(ctx, proto.TransferProgress{ItemID: item, BytesDone: done, State: "failed",
		Error: &proto.Error{Code: code, Message: err.Error()}}); perr != nil && !errors.Is(perr, errStop) {
		t.s.log.Error("file transfer: could not report a failure", "transfer_id", t.id, "err", perr, "failure", err)
	}
}

// countingWriter reports progress as bytes go through it.
type countingWriter struct {
	ctx  context.Context
	t    *session
	p    proto.TransferProgress
	done int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	c.done += int64(len(b))
	c.p.BytesDone = c.done
	if err := c.t.tick(c.ctx, c.p); err != nil {
		return 0, err
	}
	return len(b), nil
}

// ---- upload: fetch staged items into a directory of this machine ----

func (s *server) upload(ctx context.Context, call runtime.Caller, raw json.RawMessage) (any, error) {
	var req proto.TransferRequest
	if err := json.Unmarshal(raw, &req); err != nil || req.TransferID == "" {
		return nil, opError(proto.CodeOpInvalid, "the upload request is malformed")
	}
	if err := checkDirectory(req.Destination); err != nil {
		return nil, err
	}
	for _, it := range req.Items {
		if !localName(it.Name) || len(it.SHA256) != 64 || it.Size < 0 {
			return nil, opError(proto.CodeFilePathInvalid, "item %q is not a name relative to the destination", it.Name)
		}
	}
	for _, d := range req.Directories {
		if !localName(d) {
			return nil, opError(proto.CodeFilePathInvalid, "directory %q is not relative to the destination", d)
		}
	}
	c, ok := call.(Caller)
	if !ok {
		return nil, opError(proto.CodeOpUnsupported, "this agent cannot stream transfers")
	}
	if s.claim(req.TransferID) {
		// The destination checked is the one written to: held open from
		// here to the end of the transfer.
		dest, err := openDest(filepath.Clean(req.Destination))
		if err != nil {
			s.release(req.TransferID)
			return nil, osError(req.Destination, err)
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer s.release(req.TransferID)
			defer dest.Close()
			s.runUpload(ctx, &session{s: s, call: c, id: req.TransferID}, dest, req)
		}()
	}
	return proto.TransferAccepted{Accepted: true}, nil
}

// checkDirectory refuses a destination that is not an existing directory
// named by an absolute path.
func checkDirectory(dir string) error {
	if strings.ContainsRune(dir, 0) {
		return opError(proto.CodeFilePathInvalid, "the path contains a NUL byte")
	}
	if !filepath.IsAbs(dir) {
		return opError(proto.CodeFilePathNotAbsolute, "%q is not an absolute path", dir)
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return opError(proto.CodeFilePathNotFound, "%s does not exist", dir)
	case errors.Is(err, os.ErrPermission):
		return opError(proto.CodeOpPermission, "%s: permission denied", dir)
	case err != nil:
		return opError(proto.CodeOpFailed, "%v", err)
	case !fi.IsDir():
		return opError(proto.CodeFileNotDirectory, "%s is not a directory", dir)
	}
	return nil
}

// localName: a slash-separated relative name that stays below its base.
func localName(name string) bool {
	if name == "" || strings.ContainsAny(name, "\x00\\") {
		return false
	}
	return filepath.IsLocal(filepath.FromSlash(name))
}

func (s *server) runUpload(ctx context.Context, t *session, dest *destDir, req proto.TransferRequest) {
	st, err := t.status(ctx)
	if err != nil {
		if !errors.Is(err, errStop) {
			s.log.Error("file transfer: the Engine cannot be reached", "transfer_id", t.id, "err", err)
		}
		return
	}
	done := map[int32]bool{}
	for _, it := range st.Items {
		if it.State == "completed" || it.State == "skipped" {
			done[it.ItemID] = true
		}
	}
	for _, d := range req.Directories {
		sub, err := dest.mkdirAll(d)
		if err != nil {
			t.fail(ctx, 0, 0, &finalError{code: osCode(err), err: fmt.Errorf("create directory %s: %w", d, err)})
			return
		}
		sub.Close()
	}
	if len(req.Items) == 0 {
		// A manifest of empty folders only: nothing to fetch.
		if err := t.progress(ctx, proto.TransferProgress{State: "completed"}); err != nil && !errors.Is(err, errStop) {
			s.log.Error("file transfer: could not report completion", "transfer_id", t.id, "err", err)
		}
		return
	}
	for _, it := range req.Items {
		if done[it.ItemID] {
			continue
		}
		state, err := s.uploadItem(ctx, t, dest, req, it)
		if errors.Is(err, errStop) || ctx.Err() != nil {
			return
		}
		if err != nil {
			s.log.Warn("file transfer: item failed", "transfer_id", t.id, "item", it.Name, "err", err)
			t.fail(ctx, it.ItemID, 0, err)
			continue
		}
		if err := t.progress(ctx, proto.TransferProgress{ItemID: it.ItemID, BytesDone: it.Size, State: state}); err != nil {
			return
		}
	}
}

// uploadItem writes one item into place under the conflict policy and
// returns its final state (completed or skipped). Its directory is
// created and held open below the destination, refusing links; the
// temp file, the conflict check and the rename are relative to it.
func (s *server) uploadItem(ctx context.Context, t *session, dest *destDir, req proto.TransferRequest, it proto.TransferItem) (string, error) {
	rel, name := path.Split(it.Name)
	dir, err := dest.mkdirAll(rel)
	if err != nil {
		return "", &finalError{code: osCode(err), err: fmt.Errorf("create %s: %w", rel, err)}
	}
	defer dir.Close()
	replace := false
	if fi, err := dir.lstat(name); err == nil {
		switch req.Conflict {
		case proto.ConflictSkip:
			return "skipped", nil
		case proto.ConflictOverwrite:
			if !fi.Mode().IsRegular() {
				return "", &finalError{code: "not_a_file", err: fmt.Errorf("%s exists and is not a regular file", it.Name)}
			}
			replace = true
		default:
			name = freeName(dir, name)
		}
	}
	var tmp string
	err = t.retry(ctx, "fetch "+it.Name, func() error {
		var err error
		tmp, err = s.fetchItem(ctx, t, dir, it)
		return err
	})
	if err != nil {
		return "", err
	}
	// A cancel that came while the last bytes arrived leaves nothing behind.
	if _, err := t.status(ctx); err != nil {
		dir.remove(tmp)
		return "", err
	}
	for {
		err := dir.rename(tmp, name, replace)
		if err != nil && errors.Is(err, fs.ErrExist) {
			// The name was taken since the check: the policy again.
			switch req.Conflict {
			case proto.ConflictSkip:
				dir.remove(tmp)
				return "skipped", nil
			case proto.ConflictOverwrite:
				replace = true
			default:
				name = freeName(dir, name)
			}
			continue
		}
		if err != nil {
			dir.remove(tmp)
			return "", &finalError{code: osCode(err), err: fmt.Errorf("move into place: %w", err)}
		}
		return "completed", nil
	}
}

// fetchItem streams an item into a temp file in dir (same file system,
// so the final rename is atomic) and checks its size and SHA-256.
func (s *server) fetchItem(ctx context.Context, t *session, dir *destDir, it proto.TransferItem) (string, error) {
	body, err := t.call.Open(ctx, transferPath(t.id, proto.TransferUploadItem+strconv.Itoa(int(it.ItemID))))
	if err != nil {
		return "", err
	}
	defer body.Close()
	f, tmp, err := dir.createTemp()
	if err != nil {
		return "", &finalError{code: osCode(err), err: fmt.Errorf("create a temp file in %s: %w", dir.Name(), err)}
	}
	h := sha256.New()
	cw := &countingWriter{ctx: ctx, t: t, p: proto.TransferProgress{ItemID: it.ItemID, State: "running"}}
	n, err := io.Copy(io.MultiWriter(f, h, cw), io.LimitReader(body, it.Size+1))
	if cerr := f.Close(); err == nil && cerr != nil {
		err = &finalError{code: osCode(cerr), err: cerr}
	}
	if err == nil && n != it.Size {
		err = fmt.Errorf("item %s: got %d bytes, expected %d", it.Name, n, it.Size)
	}
	if err == nil {
		if got := hex.EncodeToString(h.Sum(nil)); !strings.EqualFold(got, it.SHA256) {
			err = &finalError{code: proto.CodeChecksumMismatch,
				err: fmt.Errorf("item %s: SHA-256 %s, the Engine staged %s", it.Name, got, it.SHA256)}
		}
	}
	if err != nil {
		dir.remove(tmp)
		return "", err
	}
	return tmp, nil
}

// freeName is "name (n).ext" for the first n free in dir.
func freeName(dir *destDir, name string) string {
	ext := path.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	for n := 1; ; n++ {
		c := fmt.Sprintf("%s (%d)%s", stem, n, ext)
		if _, err := dir.lstat(c); errors.Is(err, os.ErrNotExist) {
			return c
		}
	}
}

// osCode names an OS failure for the Engine.
func osCode(err error) string {
	var pe *proto.Error
	switch {
	case errors.As(err, &pe):
		return pe.Code
	case errors.Is(err, os.ErrPermission):
		return proto.CodeOpPermission
	case errors.Is(err, os.ErrNotExist):
		return proto.CodeFilePathNotFound
	}
	return proto.CodeOpFailed
}
