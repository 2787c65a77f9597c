// Package ops answers the Engine's patch_install_request (SPEC agent
// behaviour 10): one install at a time on this machine, progress posted
// to /api/agent/patches/install-progress while it runs, and the outcome
// (installed, already_installed, failed with the exit code and the end of
// the package manager's output). The Engine re-scans after each attempt
// and says "installed" only once the scan shows it.
package ops

import (
	"cmp"
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
	// Rebooter schedules patch reboots; nil registers no
	// patch_reboot_request handler. SignedIn and RebootRequired must then
	// be set: SignedIn lists the users signed in (a reboot that is not
	// forced is skipped while there is one), RebootRequired says whether
	// the machine waits for a reboot (a "when required" reboot of a machine
	// that does not is not_required).
	Rebooter       patches.Rebooter
	SignedIn       func(context.Context) ([]string, error)
	RebootRequired func(context.Context) (bool, error)
}

// Register adds the patch_install_request handler when there is an
// installer and the patch_reboot_request handler when there is a
// rebooter.
func Register(h *runtime.Handlers, opts Options) error {
	if opts.Installer == nil && opts.Rebooter == nil {
		return nil
	}
	if opts.Rebooter != nil && (opts.SignedIn == nil || opts.RebootRequired == nil) {
		return errors.New("patch reboots need SignedIn and RebootRequired")
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
	if opts.Rebooter != nil {
		if err := h.Register(proto.EventPatchReboot, s.reboot); err != nil {
			return err
		}
	}
	if opts.Installer == nil {
		return nil
	}
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
	if req.InstallID == "" || req.Package == "" && req.UpdateID == "" && req.KB == "" && req.Title == "" {
		return nil, &proto.Error{Code: proto.CodeOpInvalid, Message: "an install names its install_id and a package or update (update_id, kb, title)"}
	}
	s.one.Lock()
	defer s.one.Unlock()
	log := s.opts.Logger.With("install_id", req.InstallID, "package", req.Package, "update_id", req.UpdateID, "kb", req.KB)
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
	case errors.Is(err, patches.ErrNoPackage), errors.Is(err, patches.ErrNoUpdate):
		return nil, &proto.Error{Code: proto.CodeOpInvalid, Message: err.Error()}
	case ctx.Err() != nil:
		return nil, &proto.Error{Code: proto.CodeOpTimedOut, Message: "the install did not finish in time"}
	case err != nil:
		return nil, &proto.Error{Code: proto.CodeOpFailed, Message: fmt.Sprintf("install %s: %v", cmp.Or(req.Package, req.KB, req.Title, req.UpdateID), err)}
	}
	log.Info("patch install ended", "status", res.Status, "message", res.Message)
	return res, nil
}

// RebootMessage is what a patch reboot tells signed-in users.
const RebootMessage = "Cairn: restarting to finish installing updates"

// reboot answers a patch_reboot_request: not_required when asked "when
// required" of a machine that waits for no reboot; skipped_logged_in_user
// while a user is signed in unless the request is forced (only a patch
// policy forces); else the reboot is scheduled a minute from now. It
// waits for an install in flight on this machine: never during one.
func (s *server) reboot(ctx context.Context, _ runtime.Caller, payload json.RawMessage) (any, error) {
	var req proto.PatchRebootRequest
	if err := json.Unmarshal(payload, &req); err != nil {
		return nil, &proto.Error{Code: proto.CodeOpInvalid, Message: "the request payload is malformed: " + err.Error()}
	}
	if req.RebootID == "" {
		return nil, &proto.Error{Code: proto.CodeOpInvalid, Message: "a reboot names its reboot_id"}
	}
	s.one.Lock()
	defer s.one.Unlock()
	log := s.opts.Logger.With("reboot_id", req.RebootID, "forced", req.Forced, "when_required", req.WhenRequired)
	if req.WhenRequired {
		need, err := s.opts.RebootRequired(ctx)
		if err != nil {
			return nil, &proto.Error{Code: proto.CodeOpFailed, Message: "cannot tell whether a reboot is required: " + err.Error()}
		}
		if !need {
			log.Info("patch reboot not required")
			return proto.PatchRebootResult{Status: proto.PatchRebootNotRequired, Message: "no reboot is required"}, nil
		}
	}
	users, err := s.opts.SignedIn(ctx)
	if err != nil && !req.Forced {
		// Not knowing who is signed in is not "nobody": no reboot.
		return nil, &proto.Error{Code: proto.CodeOpFailed, Message: "cannot list the signed-in users: " + err.Error()}
	}
	if len(users) > 0 && !req.Forced {
		log.Info("patch reboot skipped: users signed in", "users", users)
		return proto.PatchRebootResult{Status: proto.PatchRebootSkippedLoggedIn, SignedIn: users,
			Message: fmt.Sprintf("%d user(s) signed in", len(users))}, nil
	}
	if err := s.opts.Rebooter.ScheduleReboot(ctx, RebootMessage); err != nil {
		return nil, &proto.Error{Code: proto.CodeOpFailed, Message: "the reboot was not scheduled: " + err.Error()}
	}
	log.Warn("patch reboot scheduled", "in", patches.RebootDelay, "users", users)
	return proto.PatchRebootResult{Status: proto.PatchRebootScheduled, SignedIn: users,
		Message: "reboot scheduled in " + patches.RebootDelay}, nil
}
