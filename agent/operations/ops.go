// Package ops answers the Engine's remote operations on this machine:
// list and terminate processes, start, stop and restart services, and
// refresh the software and patch inventories (agent/proto/operations.go
// is the wire contract; docs/agent.md "Operations" the behaviour).
//
// Handlers return the proto result or a *proto.Error whose code the
// Engine acts on (not_found, process_mismatch, invalid_request, failed,
// permission_denied, timed_out, unsupported). The runtime runs each
// operation once per OperationID and replays its reply to redeliveries,
// so nothing here needs to guard against being asked twice.
package operations

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/roles"
	"github.com/cairn-rmm/cairn/agent/runtime"
)

// Inventory is what the operations read from the machine, fresh at each
// call; *inventory.Collector is the real one. An error matching
// roles.ErrUnsupported means the platform or host cannot provide it.
type Inventory interface {
	Processes(ctx context.Context) ([]proto.Process, error)
	Services(ctx context.Context) ([]proto.Service, error)
	Software(ctx context.Context) ([]proto.Software, error)
	// Patches are the patch rows and the scan's status (nil where the
	// package manager has no provider).
	Patches(ctx context.Context) ([]proto.PatchEntry, *proto.PatchStatus, error)
	// InitDir is where the SysV init scripts listed as services live, so
	// service control acts on the same scripts the list shows.
	InitDir() string
	// UsesInitScripts says whether services are those scripts here rather
	// than systemd units.
	UsesInitScripts() bool
}

// Options configure the operations. Zero values take the defaults.
type Options struct {
	Inventory Inventory
	// Grace is how long terminate waits after SIGTERM before SIGKILL (10 s).
	Grace time.Duration
	// ServiceTimeout bounds one service action, including waiting for
	// systemd's job or the init script (2 minutes).
	ServiceTimeout time.Duration
	// Logger records every action taken (discarded when nil).
	Logger *slog.Logger
}

// Defaults of Options.
const (
	DefaultGrace          = 10 * time.Second
	DefaultServiceTimeout = 2 * time.Minute
)

// Register adds the operation handlers to h.
func Register(h *runtime.Handlers, opts Options) error {
	if opts.Inventory == nil {
		return errors.New("ops: an Inventory is required")
	}
	if opts.Grace <= 0 {
		opts.Grace = DefaultGrace
	}
	if opts.ServiceTimeout <= 0 {
		opts.ServiceTimeout = DefaultServiceTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &server{opts: opts, log: opts.Logger}
	for typ, fn := range map[string]runtime.Handler{
		proto.EventProcessManagement: s.process,
		proto.EventServiceControl:    s.service,
		proto.EventSoftwareRefresh:   s.software,
		proto.EventPatchRefresh:      s.patches,
	} {
		if err := h.Register(typ, fn); err != nil {
			return fmt.Errorf("ops: %w", err)
		}
	}
	return nil
}

// server holds the operations' settings.
type server struct {
	opts Options
	log  *slog.Logger
}

func (s *server) software(ctx context.Context, _ runtime.Caller, _ json.RawMessage) (any, error) {
	rows, err := s.opts.Inventory.Software(ctx)
	if err != nil {
		return nil, collectionError("software", err)
	}
	return proto.SoftwareRefreshResult{CollectedAt: time.Now().UTC(), Software: rows}, nil
}

func (s *server) patches(ctx context.Context, _ runtime.Caller, _ json.RawMessage) (any, error) {
	rows, status, err := s.opts.Inventory.Patches(ctx)
	if err != nil {
		return nil, collectionError("pending updates", err)
	}
	return proto.PatchRefreshResult{CollectedAt: time.Now().UTC(), Patches: rows, Status: status}, nil
}

// decode reads a request payload. Unknown fields are accepted: a newer
// Engine may send more than this agent knows.
func decode(payload json.RawMessage, v any) error {
	if len(payload) == 0 {
		return opError(proto.CodeOpInvalid, "the request has no payload")
	}
	if err := json.Unmarshal(payload, v); err != nil {
		return opError(proto.CodeOpInvalid, "the request payload is malformed: %v", err)
	}
	return nil
}

// opError is an error the Engine receives as {"error": code, "message"}.
func opError(code, format string, args ...any) *proto.Error {
	return &proto.Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// collectionError classifies a failed collection: unsupported here,
// ran out of time, or failed.
func collectionError(what string, err error) *proto.Error {
	switch {
	case errors.Is(err, roles.ErrUnsupported):
		return opError(proto.CodeOpUnsupported, "%s: %v", what, err)
	case errors.Is(err, context.DeadlineExceeded):
		return opError(proto.CodeOpTimedOut, "%s: %v", what, err)
	default:
		return opError(proto.CodeOpFailed, "%s could not be collected: %v", what, err)
	}
}
