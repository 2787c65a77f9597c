// Package files answers the Engine's file_management_request
// (proto.EventFileManagement). The file manager's actions (files.go):
// roots, list, read and write text, mkdir, rename, move, paste (copy),
// delete and upload conflicts, with paths checked by the pure rules in
// paths.go; symbolic links are reported and deleted as links, never
// followed; device files are refused. The transfer actions (transfer*.go):
// upload and download, which the agent accepts at once and then works
// through the transfer callbacks (agent/proto/transfers.go; docs/agent.md
// "File transfers"), never over the realtime socket.
package files

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	goruntime "runtime"
	"sync"
	"time"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/runtime"
)

// Caller is the Device access transfers need: JSON calls, streamed GETs and
// streamed POSTs. *runtime.Tokens is one (its DPoP proofs and dialer, so
// server_ip_fallback applies to transfers as to every Engine connection).
type Caller interface {
	runtime.Caller
	Open(ctx context.Context, path string) (io.ReadCloser, error)
	Send(ctx context.Context, method, path string, body io.Reader, prepare func(*http.Request), out any) error
}

// Options configure the handler. Zero values take the defaults.
type Options struct {
	Logger *slog.Logger
	// ProgressInterval is how often a running transfer reports progress
	// (and so learns of a cancel): 1 s.
	ProgressInterval time.Duration
	// RetryWindow is how long a transfer keeps retrying an Engine it
	// cannot reach (restarting, failing over) before it gives up: 10 min.
	RetryWindow time.Duration
}

// Defaults of Options.
const (
	DefaultProgressInterval = time.Second
	DefaultRetryWindow      = 10 * time.Minute
)

// Register adds the file_management_request handler to h.
func Register(h *runtime.Handlers, opts Options) error {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.ProgressInterval <= 0 {
		opts.ProgressInterval = DefaultProgressInterval
	}
	if opts.RetryWindow <= 0 {
		opts.RetryWindow = DefaultRetryWindow
	}
	s := &server{goos: goruntime.GOOS, opts: opts, log: opts.Logger, running: map[string]bool{}}
	if err := h.Register(proto.EventFileManagement, s.files); err != nil {
		return fmt.Errorf("files: %w", err)
	}
	return nil
}

type server struct {
	goos string // the rules paths.go applies
	opts Options
	log  *slog.Logger

	mu      sync.Mutex
	running map[string]bool // transfer IDs this process works on
	wg      sync.WaitGroup
}

// files dispatches one request on its action.
func (s *server) files(ctx context.Context, call runtime.Caller, raw json.RawMessage) (any, error) {
	var q proto.FileRequest
	if len(raw) == 0 || json.Unmarshal(raw, &q) != nil {
		return nil, refuse(proto.CodeOpInvalid, "the file management request is malformed")
	}
	switch q.Action {
	case proto.FileActionRoots:
		return roots()
	case proto.FileActionList:
		return s.list(q.Path)
	case proto.FileActionReadText:
		return s.readText(q.Path)
	case proto.FileActionWriteText:
		return s.writeText(q.Path, q.Content)
	case proto.FileActionMkdir:
		return s.mkdir(q.Path)
	case proto.FileActionRename:
		return s.rename(q.Path, q.NewName)
	case proto.FileActionMove:
		return s.transfer(ctx, q.Paths, q.Destination, true)
	case proto.FileActionPaste:
		return s.transfer(ctx, q.Paths, q.Destination, false)
	case proto.FileActionDelete:
		return s.delete(q.Paths)
	case proto.FileActionConflicts:
		return s.conflicts(q.Destination, q.Names)
	case proto.FileActionUpload:
		return s.upload(ctx, call, raw)
	case proto.FileActionDownload:
		return s.download(ctx, call, raw)
	default:
		return nil, refuse(proto.CodeOpUnsupported, "this agent does not know the file action %q", q.Action)
	}
}
