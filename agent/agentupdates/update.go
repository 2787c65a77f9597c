// Package update is the agent's self-update (docs/agent.md "Updates"): on
// agent_update_request, or when the hourly check finds a different build,
// it downloads the artifact next to the executable, checks its size,
// SHA-256 and the Engine's signature, proves the new file runs, swaps it
// in atomically (keeping the old one as <exe>.previous) and restarts into
// it. The new binary must then check in with the Engine before a deadline,
// or it puts the previous binary back and restarts into that. Every step
// is reported to the Engine as a progress event.
package agentupdates

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/runtime"
	"github.com/cairn-rmm/cairn/agent/transport"
)

// Defaults.
const (
	// DefaultCheckinDeadline is how long a new build has to check in
	// (a successful heartbeat) before the previous one is restored.
	DefaultCheckinDeadline = 3 * time.Minute
	// DefaultCheckInterval is the hourly check's period.
	DefaultCheckInterval = time.Hour
	// maxArtifactSize bounds a download whatever the manifest says.
	maxArtifactSize = 512 << 20
	// downloadWindow is how long a download is retried while the Engine
	// is unreachable (it may be restarting).
	downloadWindow = 5 * time.Minute
)

// Caller is the Device access the updater needs: JSON calls and streamed
// downloads (runtime.Tokens).
type Caller interface {
	Call(ctx context.Context, method, path string, in, out any) error
	Open(ctx context.Context, path string) (io.ReadCloser, error)
}

// Options configure an Updater.
type Options struct {
	// Exe is the agent's executable, resolved when the process started
	// (after a swap, /proc/self/exe would name <exe>.previous).
	Exe string
	// BuildID is this binary's build.
	BuildID string
	// Platform is this agent's artifact platform ("linux-amd64").
	Platform string
	// ArtifactKeys returns the standard-base64 Ed25519 keys artifact
	// signatures are checked with (agent.json
	// script_signing.artifact_public_keys): never the script keys, so a
	// key that signs scripts cannot sign an update.
	ArtifactKeys func() ([]string, error)
	// BuildSeq orders this binary among builds (version.Seq): an artifact
	// with a lower one is refused unless it is a signed rollback.
	BuildSeq int64
	// Restart stops the agent so its process re-executes Exe.
	Restart func()
	// CheckinDeadline and CheckInterval default to the constants above.
	CheckinDeadline time.Duration
	CheckInterval   time.Duration
	Log             *slog.Logger
	Now             func() time.Time
}

// Updater runs updates of this agent.
type Updater struct {
	opts        Options
	log         *slog.Logger
	call        atomic.Pointer[callerBox]
	ready       chan struct{}
	once        sync.Once
	busy        atomic.Bool
	post        *poster
	restartOnce sync.Once
	// checkin is set while a new build waits for its first successful
	// heartbeat (Boot found the marker).
	checkin chan struct{}
	ckOnce  sync.Once
	// marker is the pending-update marker found at start (nil: none).
	marker *Marker
}

type callerBox struct{ c Caller }

// New builds an Updater.
func New(opts Options) *Updater {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.CheckinDeadline <= 0 {
		opts.CheckinDeadline = DefaultCheckinDeadline
	}
	if opts.CheckInterval <= 0 {
		opts.CheckInterval = DefaultCheckInterval
	}
	u := &Updater{opts: opts, log: opts.Log, ready: make(chan struct{})}
	u.post = newPoster(u)
	u.prepare()
	return u
}

// Register adds the agent_update_request handler.
func (u *Updater) Register(h *runtime.Handlers) error {
	return h.Register(proto.EventAgentUpdate, u.handle)
}

// Session is the runtime hook that hands over each loop's Device caller.
func (u *Updater) Session(call runtime.Caller) {
	c, ok := call.(Caller)
	if !ok {
		return
	}
	u.call.Store(&callerBox{c})
	u.once.Do(func() { close(u.ready) })
}

// Heartbeat is the runtime hook told of every heartbeat: the first
// successful one is a new build's check-in.
func (u *Updater) Heartbeat(_ time.Duration, err error) {
	if err == nil && u.checkin != nil {
		u.ckOnce.Do(func() { close(u.checkin) })
	}
}

// caller waits for the first session's caller.
func (u *Updater) caller(ctx context.Context) (Caller, error) {
	select {
	case <-u.ready:
		return u.call.Load().c, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// handle answers agent_update_request: the request is checked (signature
// first) and accepted at once; the update runs on under ctx, the agent's.
func (u *Updater) handle(ctx context.Context, call runtime.Caller, payload json.RawMessage) (any, error) {
	var req proto.AgentUpdateRequest
	if err := json.Unmarshal(payload, &req); err != nil || req.OperationID == "" {
		return nil, &proto.Error{Code: proto.CodeOpInvalid, Message: "the update request is malformed"}
	}
	if u.marker != nil && u.marker.OperationID == req.OperationID {
		// The Engine lost the first answer (it restarted) and asks the
		// process this update started again: it is under way or done.
		return proto.AgentUpdateAccepted{Accepted: true}, nil
	}
	art, err := u.verify(req.ArtifactSignature)
	if err != nil {
		return nil, &proto.Error{Code: proto.CodeSignatureInvalid, Message: err.Error()}
	}
	if art.ArtifactID != req.ArtifactID || art.BuildID != req.BuildID || art.SHA256 != req.SHA256 || art.Size != req.Size {
		return nil, &proto.Error{Code: proto.CodeSignatureInvalid, Message: "the request does not match the artifact its signature names"}
	}
	if _, ok := call.(Caller); !ok {
		return nil, &proto.Error{Code: proto.CodeOpUnsupported, Message: "this agent cannot download artifacts"}
	}
	if !u.busy.CompareAndSwap(false, true) {
		return nil, &proto.Error{Code: proto.CodeOpAlreadyRunning, Message: "an update is already running on this agent"}
	}
	u.Session(call)
	go u.run(ctx, job{id: req.OperationID, art: art, url: req.DownloadURL, force: req.Force})
	return proto.AgentUpdateAccepted{Accepted: true}, nil
}

// job is one update.
type job struct {
	id    string
	art   proto.UpdateArtifact
	url   string
	force bool
	// hourly updates name their target, the Engine has no record yet.
	hourly bool
}

// verify checks an artifact signature with the artifact keys and decodes
// what it signs: an artifact (its purpose), for this platform, not older
// than this build unless it is a signed rollback.
func (u *Updater) verify(s *proto.Signed) (proto.UpdateArtifact, error) {
	var art proto.UpdateArtifact
	if s == nil {
		return art, errors.New("the artifact carries no artifact-key signature (an Engine older than this agent)")
	}
	keys, err := u.opts.ArtifactKeys()
	if err != nil {
		return art, fmt.Errorf("the artifact keys cannot be read: %v", err)
	}
	if len(keys) == 0 {
		return art, errors.New("this agent trusts no artifact key yet")
	}
	if !Verify(*s, keys) {
		return art, errors.New("the artifact's signature does not verify with any trusted artifact key")
	}
	if err := json.Unmarshal(s.Payload, &art); err != nil {
		return art, fmt.Errorf("the signed artifact is malformed: %v", err)
	}
	if art.Purpose != proto.PurposeArtifact {
		return art, fmt.Errorf("the signed document's purpose is %q, not %q", art.Purpose, proto.PurposeArtifact)
	}
	if art.BuildSeq < u.opts.BuildSeq && !art.Rollback {
		return art, fmt.Errorf("build %s (sequence %d) is older than this agent's (sequence %d) and is not a signed rollback",
			art.BuildID, art.BuildSeq, u.opts.BuildSeq)
	}
	if art.ArtifactID == "" || art.BuildID == "" || len(art.SHA256) != 64 || art.Size <= 0 || art.Size > maxArtifactSize {
		return art, errors.New("the signed artifact is incomplete")
	}
	if u.opts.Platform != "" && art.Platform != u.opts.Platform {
		return art, fmt.Errorf("the artifact is for %s, this agent runs on %s", art.Platform, u.opts.Platform)
	}
	return art, nil
}

// Verify reports whether s's signature over its payload verifies with any
// of keys (standard base64 Ed25519 public keys).
func Verify(s proto.Signed, keys []string) bool {
	_, err := s.Verify(keys)
	return err == nil
}

// run carries an accepted update to the restart, or to a failure event.
func (u *Updater) run(ctx context.Context, j job) {
	restarting := false
	defer func() {
		if !restarting {
			u.busy.Store(false)
		}
	}()
	u.event(j, proto.UpdateAccepted, 0, fmt.Sprintf("updating from %s to %s", u.opts.BuildID, j.art.BuildID))
	if j.art.BuildID == u.opts.BuildID && !j.force {
		u.event(j, proto.UpdateCompleted, 100, "already running build "+j.art.BuildID)
		return
	}
	tmp, err := u.download(ctx, j)
	if err == nil {
		err = u.install(ctx, j, tmp)
	}
	if err != nil {
		if tmp != "" {
			os.Remove(tmp)
		}
		u.log.Error("agent update failed", "operation", j.id, "err", err)
		u.event(j, proto.UpdateFailed, 0, err.Error())
		return
	}
	restarting = true
	u.event(j, proto.UpdateRestarting, 90, "restarting into build "+j.art.BuildID)
	u.restart(ctx)
}

// download streams the artifact to a temp file next to the executable and
// checks its size and SHA-256; it retries while the Engine is unreachable.
func (u *Updater) download(ctx context.Context, j job) (string, error) {
	path := j.url
	if path == "" || !strings.HasPrefix(path, "/") {
		path = "/api/agent/update/download/" + j.art.ArtifactID
	}
	deadline := u.opts.Now().Add(downloadWindow)
	wait := time.Second
	for attempt := 1; ; attempt++ {
		u.event(j, proto.UpdateDownloading, 10, fmt.Sprintf("downloading %s (%d bytes), attempt %d", j.art.ArtifactID, j.art.Size, attempt))
		tmp, err := u.fetch(ctx, path, j.art)
		if err == nil {
			return tmp, nil
		}
		var bad *badArtifact
		var refused *transport.Error
		if errors.As(err, &refused) && refused.Status >= 400 && refused.Status < 500 && refused.Status != 408 && refused.Status != 429 {
			return "", err
		}
		if errors.As(err, &bad) || ctx.Err() != nil || u.opts.Now().After(deadline) {
			return "", err
		}
		u.log.Warn("artifact download failed; retrying", "operation", j.id, "err", err, "in", wait)
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(wait):
		}
		wait = min(wait*2, 30*time.Second)
	}
}

// badArtifact: the download finished and is not the signed artifact;
// trying again would not help.
type badArtifact struct{ msg string }

func (e *badArtifact) Error() string { return e.msg }

func (u *Updater) fetch(ctx context.Context, path string, art proto.UpdateArtifact) (string, error) {
	c, err := u.caller(ctx)
	if err != nil {
		return "", err
	}
	body, err := c.Open(ctx, path)
	if err != nil {
		return "", err
	}
	defer body.Close()
	f, err := os.CreateTemp(filepath.Dir(u.opts.Exe), "."+filepath.Base(u.opts.Exe)+".update-*")
	if err != nil {
		return "", fmt.Errorf("create the download file: %w", err)
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(body, art.Size+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("download: %w", err)
	}
	if n != art.Size {
		os.Remove(f.Name())
		return "", &badArtifact{fmt.Sprintf("the download is %d bytes, the signed artifact %d", n, art.Size)}
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != strings.ToLower(art.SHA256) {
		os.Remove(f.Name())
		return "", &badArtifact{fmt.Sprintf("the download's SHA-256 %s is not the signed artifact's %s", got, art.SHA256)}
	}
	return f.Name(), nil
}

// install proves the new file runs and reports the signed build, then
// swaps it in, keeping the running binary as <exe>.previous, and leaves
// the marker the new binary checks in by.
func (u *Updater) install(ctx context.Context, j job, tmp string) error {
	u.event(j, proto.UpdateVerifying, 60, "size and SHA-256 match the signed artifact; checking that it runs")
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("make the new binary executable: %w", err)
	}
	out, err := runVersion(ctx, tmp)
	if err != nil {
		return fmt.Errorf("the new binary does not run (`version`): %v", err)
	}
	if got := reportedBuild(string(out)); got != j.art.BuildID {
		return fmt.Errorf("the new binary reports build %q, the signed artifact %q", got, j.art.BuildID)
	}
	u.event(j, proto.UpdateInstalling, 75, "replacing "+u.opts.Exe)
	m := Marker{OperationID: j.id, FromBuildID: u.opts.BuildID, ToBuildID: j.art.BuildID, State: StateInstalled,
		Deadline: u.opts.Now().Add(u.opts.CheckinDeadline).UTC(), ArtifactID: j.art.ArtifactID}
	if err := writeMarker(u.opts.Exe, m); err != nil {
		return err
	}
	if err := replace(u.opts.Exe, tmp); err != nil {
		removeMarker(u.opts.Exe)
		return err
	}
	return nil
}

// runVersion runs `<bin> version`. A file just written can be briefly
// "text file busy": a process forked elsewhere in the agent (a script, a
// shell) holds the write descriptor until it execs. That passes within
// moments, so it is retried before the update is called failed.
func runVersion(ctx context.Context, bin string) ([]byte, error) {
	wait := 20 * time.Millisecond
	for attempt := 1; ; attempt++ {
		vctx, cancel := context.WithTimeout(ctx, time.Minute)
		out, err := exec.CommandContext(vctx, bin, "version").Output()
		cancel()
		if err == nil || !errors.Is(err, syscall.ETXTBSY) || attempt == 10 {
			return out, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// reportedBuild reads the build ID from `cairn-agent version`: its
// "build_id: " line, or the whole output when it is one word.
func reportedBuild(out string) string {
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "build_id:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return strings.TrimSpace(out)
}

// restart flushes the progress events (or hands the rest to the next
// binary through the marker) and asks the process to re-execute.
func (u *Updater) restart(ctx context.Context) {
	u.restartOnce.Do(func() {
		fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		left := u.post.flush(fctx)
		cancel()
		if len(left) > 0 {
			if m, err := readMarker(u.opts.Exe); err == nil && m != nil {
				m.Pending = append(m.Pending, left...)
				_ = writeMarker(u.opts.Exe, *m)
			}
		}
		u.opts.Restart()
	})
}

// event queues one progress event for the Engine.
func (u *Updater) event(j job, phase string, percent int, message string) {
	u.log.Info("agent update", "operation", j.id, "phase", phase, "message", message)
	p := pending{OperationID: j.id, Event: proto.UpdateEvent{Phase: phase, Percent: percent, Message: trim(message),
		CapturedAt: u.opts.Now().UTC()}}
	if j.hourly {
		p.ToBuildID, p.ArtifactID = j.art.BuildID, j.art.ArtifactID
	}
	u.post.add(p)
}

func trim(s string) string {
	if len(s) > 500 {
		return s[:500]
	}
	return s
}

// Run runs the updater's background work until ctx ends: posting
// progress, finishing a restart that Boot found, and the hourly check.
func (u *Updater) Run(ctx context.Context) {
	go u.post.run(ctx)
	u.boot(ctx)
	t := time.NewTicker(u.opts.CheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := u.Check(ctx); err != nil && ctx.Err() == nil {
				u.log.Warn("update check failed", "err", err)
			}
		}
	}
}

// Check asks the Engine for the current artifact and updates when it is
// another build; a matching build changes nothing.
func (u *Updater) Check(ctx context.Context) error {
	if u.busy.Load() {
		return nil
	}
	if m, _ := readMarker(u.opts.Exe); m != nil {
		return nil
	}
	c, err := u.caller(ctx)
	if err != nil {
		return err
	}
	var man proto.UpdateManifest
	path := proto.PathUpdateManifest
	if u.opts.Platform != "" {
		path += "?platform=" + url.QueryEscape(u.opts.Platform)
	}
	if err := c.Call(ctx, "GET", path, nil, &man); err != nil {
		return err
	}
	if man.BuildID == u.opts.BuildID {
		return nil
	}
	art, err := u.verify(man.ArtifactSignature)
	if err != nil {
		return err
	}
	if art.BuildID == u.opts.BuildID {
		return nil
	}
	if !u.busy.CompareAndSwap(false, true) {
		return nil
	}
	u.log.Info("a different agent build is current; updating", "from", u.opts.BuildID, "to", art.BuildID)
	go u.run(ctx, job{id: uuid.NewString(), art: art, url: man.DownloadURL, hourly: true})
	return nil
}
