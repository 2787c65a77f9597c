package files

import (
	"archive/zip"
	"compress/flate"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/runtime"
)

// ---- download: stream files of this machine to the Engine ----

// artifact is what a download sends: one regular file as is, or a zip
// of everything asked, built while it streams.
type artifact struct {
	name  string
	file  string // one file: its path; empty for a zip
	paths []string
	total int64 // bytes of the files read (a zip's uncompressed size)
}

func (s *server) download(ctx context.Context, call runtime.Caller, raw json.RawMessage) (any, error) {
	var req proto.TransferRequest
	if err := json.Unmarshal(raw, &req); err != nil || req.TransferID == "" || len(req.Paths) == 0 {
		return nil, opError(proto.CodeOpInvalid, "the download request is malformed")
	}
	art, err := plan(req.Paths)
	if err != nil {
		return nil, err
	}
	c, ok := call.(Caller)
	if !ok {
		return nil, opError(proto.CodeOpUnsupported, "this agent cannot stream transfers")
	}
	if s.claim(req.TransferID) {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer s.release(req.TransferID)
			s.runDownload(ctx, &session{s: s, call: c, id: req.TransferID}, art)
		}()
	}
	return proto.TransferAccepted{Accepted: true}, nil
}

// plan checks the paths (absolute, existing, no device files) and decides
// what is sent.
func plan(paths []string) (artifact, error) {
	var a artifact
	for _, p := range paths {
		if strings.ContainsRune(p, 0) {
			return a, opError(proto.CodeFilePathInvalid, "the path contains a NUL byte")
		}
		if !filepath.IsAbs(p) {
			return a, opError(proto.CodeFilePathNotAbsolute, "%q is not an absolute path", p)
		}
		fi, err := os.Lstat(p)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return a, opError(proto.CodeFilePathNotFound, "%s does not exist", p)
		case errors.Is(err, os.ErrPermission):
			return a, opError(proto.CodeOpPermission, "%s: permission denied", p)
		case err != nil:
			return a, opError(proto.CodeOpFailed, "%v", err)
		case !fi.Mode().IsRegular() && !fi.IsDir():
			return a, opError(proto.CodeFilePathInvalid, "%s is not a regular file or directory", p)
		}
		a.paths = append(a.paths, filepath.Clean(p))
		if len(paths) == 1 && fi.Mode().IsRegular() {
			a.name, a.file, a.total = filepath.Base(p), p, fi.Size()
			return a, nil
		}
	}
	a.name = "files.zip"
	if len(a.paths) == 1 {
		a.name = filepath.Base(a.paths[0]) + ".zip"
	}
	a.total = treeSize(a.paths)
	return a, nil
}

// treeSize adds up the regular files below paths (progress's total).
func treeSize(paths []string) int64 {
	var n int64
	for _, p := range paths {
		_ = walkTree(p, func(_ string, fi fs.FileInfo, _ func() (*os.File, error)) error {
			if fi.Mode().IsRegular() {
				n += fi.Size()
			}
			return nil
		})
	}
	return n
}

func (s *server) runDownload(ctx context.Context, t *session, art artifact) {
	if _, err := t.status(ctx); err != nil {
		return
	}
	err := t.retry(ctx, "content", func() error { return s.sendContent(ctx, t, art) })
	switch {
	case err == nil, errors.Is(err, errStop), ctx.Err() != nil:
	default:
		s.log.Warn("file transfer: download failed", "transfer_id", t.id, "err", err)
		t.fail(ctx, 1, 0, err)
	}
}

// sendContent streams the artifact in one POST; the SHA-256 goes in a
// trailer, computed as the bytes leave. Reading happens in a goroutine
// feeding a pipe, so a zip is built while it streams and never held.
func (s *server) sendContent(ctx context.Context, t *session, art artifact) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	h := sha256.New()
	// The trailer's key is announced with the headers; its value is set
	// once the last byte was hashed, before the body's EOF, which is when
	// the client writes trailers. ready orders the two.
	trailer := http.Header{proto.HeaderContentSHA256: nil}
	ready := make(chan struct{})
	read := make(chan error, 1)
	go func() {
		select {
		case <-ready:
		case <-ctx.Done():
			pw.CloseWithError(ctx.Err())
			read <- ctx.Err()
			return
		}
		cw := &countingWriter{ctx: ctx, t: t, p: proto.TransferProgress{ItemID: 1, State: "running", BytesTotal: art.total}}
		err := art.write(io.MultiWriter(pw, h), cw)
		if err == nil {
			trailer.Set(proto.HeaderContentSHA256, hexSum(h))
		}
		pw.CloseWithError(err)
		read <- err
	}()
	var st proto.TransferStatus
	err := t.call.Send(ctx, http.MethodPost, transferPath(t.id, proto.TransferContentSuffix), pr, func(r *http.Request) {
		r.Header.Set("Content-Type", "application/octet-stream")
		r.Header.Set(proto.HeaderContentName, art.name)
		r.ContentLength = -1
		r.Trailer = trailer
		close(ready)
	}, &st)
	pr.CloseWithError(errors.New("the request ended"))
	cancel()
	rerr := <-read
	switch {
	case errors.Is(rerr, errStop):
		// cancelled while streaming: the post's own error says less
		return errStop
	case rerr != nil && err == nil:
		return rerr
	}
	return err
}

// write copies the artifact to w; progress counts the bytes read from
// files.
func (a artifact) write(w io.Writer, progress io.Writer) error {
	if a.file != "" {
		// The file checked is the file sent: no link followed, fstat on
		// the descriptor.
		f, _, err := openRegular(a.file, false)
		if err != nil {
			return &finalError{code: osCode(err), err: err}
		}
		defer f.Close()
		_, err = io.Copy(w, io.TeeReader(f, progress))
		return err
	}
	zw := zip.NewWriter(w)
	// Speed over ratio: the zip is built while the operator waits.
	zw.RegisterCompressor(zip.Deflate, func(out io.Writer) (io.WriteCloser, error) {
		return flate.NewWriter(out, flate.BestSpeed)
	})
	for _, root := range a.paths {
		// Walked by descriptor: a directory swapped for a link is not
		// entered, a file swapped for one is not opened.
		var cbErr error // the callback's own failures keep their kind (a cut stream is retried)
		err := walkTree(root, func(name string, fi fs.FileInfo, open func() (*os.File, error)) error {
			cbErr = zipEntry(zw, name, fi, open, progress)
			return cbErr
		})
		if err != nil && err != cbErr {
			err = &finalError{code: osCode(err), err: err}
		}
		if err != nil {
			return err
		}
	}
	return zw.Close()
}

// zipEntry adds one walked entry to the zip.
func zipEntry(zw *zip.Writer, name string, fi fs.FileInfo, open func() (*os.File, error), progress io.Writer) error {
	switch {
	case fi.IsDir():
		_, err := zw.Create(name + "/")
		return err
	case !fi.Mode().IsRegular():
		// Symlinks and device files are not followed into the zip.
		return nil
	}
	f, err := open()
	if errors.Is(err, errNotRegular) || errors.Is(err, syscall.ELOOP) {
		return nil // became a link or a device since it was listed
	}
	if err != nil {
		return &finalError{code: osCode(err), err: fmt.Errorf("open %s: %w", name, err)}
	}
	defer f.Close()
	hdr, err := zip.FileInfoHeader(fi)
	if err != nil {
		return err
	}
	hdr.Name, hdr.Method = name, zip.Deflate
	fw, err := zw.CreateHeader(hdr)
	if err != nil {
		return err
	}
	_, err = io.Copy(fw, io.TeeReader(f, progress))
	return err
}

// hexSum is h's sum in hex.
func hexSum(h interface{ Sum([]byte) []byte }) string { return hex.EncodeToString(h.Sum(nil)) }
