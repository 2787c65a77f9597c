// Package ops answers the Engine's patch_install_request (SPEC agent
// behaviour 10): one install at a time on this machine, progress posted
// to /api/agent/patches/install-progress while it runs, and the outcome
// (installed, already_installed, failed with the exit code and the end of
// the package manager's output). The Engine re-scans after each attempt
// and says "installed" only once the scan shows it.
package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/cairn-rmm/cairn/agent/patches"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/runtime"
)

// Options configure the handler.
type Options struct {
	// Installer installs; nil registers nothing (no installs here, so the
	// agent does not report the patch_install capability).
	Installer patches.Installer
	// ProgressInterval spaces progress posts of one phase (1 s); a new
	// phase is always posted.
	ProgressInterval time.Duration
	// Now is the clock of captured_at (time.Now).
	Now    func() time.Time
	Logger *slog.Logger
}

// Register adds the patch_install_request handler when there is an
// installer.
func Register(h *runtime.Handlers, opts Options) error {
	if opts.Installer == nil {
		return nil
	}
	if opts.ProgressInterval <= 0 {
		opts.ProgressInterval = time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &server{opts: opts}
	return h.Register(proto.EventPatchInstall, s.install)
}

type server struct {
	opts Options
	// one serialises installs on this machine: the Engine's lane sends one
	// at a time, and a redelivery or a second Engine replica must not run
	// two package managers at once either.
	one sync.Mutex
}

func (s *server) install(ctx context.Context, call runtime.Caller, payload json.RawMessage) (any, error) {
	var req proto.PatchInstallRequest
	if err := json.Unmarshal(payload, &req); err != nil {
		return nil, &proto.Error{Code: proto.CodeOpInvalid, Message: "the request payload is malformed: " + err.Error()}
	}
	if req.InstallID == "" || req.Package == "" {
		return nil, &proto.Error{Code: proto.CodeOpInvalid, Message: "an install names its install_id and package"}
	}
	s.one.Lock()
	defer s.one.Unlock()
	log := s.opts.Logger.With("install_id", req.InstallID, "package", req.Package)
	log.Info("patch install starting")
	var (
		lastPhase string
		lastPost  time.Time
	)
	progress := func(p patches.Progress) {
		now := s.opts.Now()
		if p.Phase == lastPhase && now.Sub(lastPost) < s.opts.ProgressInterval && p.Percent < 100 {
			return
		}
		lastPhase, lastPost = p.Phase, now
		report := proto.PatchInstallProgress{InstallID: req.InstallID, ScheduledJobID: req.ScheduledJobID, RunID: req.RunID,
			KB: req.KB, UpdateID: req.UpdateID, Package: req.Package, Phase: p.Phase, Percent: p.Percent, Message: p.Message,
			CapturedAt: now.UTC()}
		// Progress is best effort: a lost report changes no outcome.
		if err := call.Call(ctx, http.MethodPost, proto.PathPatchInstallProgress, report, nil); err != nil {
			log.Warn("patch install progress not posted", "err", err)
		}
	}
	res, err := s.opts.Installer.Install(ctx, req, progress)
	switch {
	case errors.Is(err, patches.ErrNoPackage):
		return nil, &proto.Error{Code: proto.CodeOpInvalid, Message: err.Error()}
	case ctx.Err() != nil:
		return nil, &proto.Error{Code: proto.CodeOpTimedOut, Message: "the install did not finish in time"}
	case err != nil:
		return nil, &proto.Error{Code: proto.CodeOpFailed, Message: fmt.Sprintf("install %s: %v", req.Package, err)}
	}
	log.Info("patch install ended", "status", res.Status, "message", res.Message)
	return res, nil
}
