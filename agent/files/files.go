// Package files answers the Engine's file_management_request. This part
// (transfer*.go) does the actions upload and download: the agent accepts
// the request at once and then moves the bytes through the transfer
// callbacks (agent/proto/transfers.go; docs/agent.md "File transfers"),
// never over the realtime socket. The file manager's other actions (list,
// read, rename, ...) are served by the files part of this package.
package files

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
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
	s := &server{opts: opts, log: opts.Logger, running: map[string]bool{}}
	return h.Register(proto.EventFileManagement, s.files)
}

type server struct {
	opts Options
	log  *slog.Logger

	mu      sync.Mutex
	running map[string]bool // transfer IDs this process works on
	wg      sync.WaitGroup
}

// files dispatches on the request's action, one case per action.
func (s *server) files(ctx context.Context, call runtime.Caller, raw json.RawMessage) (any, error) {
	var head struct {
		Action string `json:"action"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, &proto.Error{Code: proto.CodeOpInvalid, Message: "the file management request is malformed"}
	}
	switch head.Action {
	case proto.FileActionUpload:
		return s.upload(ctx, call, raw)
	case proto.FileActionDownload:
		return s.download(ctx, call, raw)
	}
	return nil, &proto.Error{Code: proto.CodeOpUnsupported, Message: "this agent does not know the file action " + head.Action}
}
