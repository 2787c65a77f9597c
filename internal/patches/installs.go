package patches

import (
	"context"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
)

// Install states. "installed" is set only after the re-scan that follows
// the attempt shows the patch installed; an agent that said it installed
// what the re-scan still lists as pending leaves "not_confirmed".
const (
	StateQueued           = "queued"
	StateRunning          = "running"
	StateInstalled        = "installed"
	StateAlreadyInstalled = "already_installed"
	StateFailed           = "failed"
	StateNotConfirmed     = "not_confirmed"
)

// Install is one requested install of one patch on one device.
type Install struct {
	ID               string           `json:"install_id"`
	DeviceGUID       cairn.DeviceGUID `json:"device_guid"`
	PatchKey         string           `json:"patch_key"`
	KB               string           `json:"kb"`
	UpdateID         string           `json:"update_id"`
	Revision         int32            `json:"revision"`
	Package          string           `json:"package"`
	Version          string           `json:"version"`
	Title            string           `json:"title"`
	State            string           `json:"state"`
	AlreadyInstalled bool             `json:"already_installed"`
	Phase            string           `json:"phase"`
	Percent          int32            `json:"percent"`
	Message          string           `json:"message"`
	ExitCode         *int32           `json:"exit_code"`
	LogExcerpt       string           `json:"log_excerpt"`
	ScheduledJobID   *int64           `json:"scheduled_job_id"`
	RunID            string           `json:"run_id"`
	RequestedBy      string           `json:"requested_by"`
	CreatedAt        time.Time        `json:"created_at"`
	StartedAt        *time.Time       `json:"started_at"`
	ProgressAt       *time.Time       `json:"progress_at"`
	FinishedAt       *time.Time       `json:"finished_at"`
}

func installOf(r db.PatchInstall) Install {
	return Install{ID: r.ID, DeviceGUID: r.DeviceGuid, PatchKey: r.PatchKey, KB: r.Kb, UpdateID: r.UpdateID, Revision: r.Revision,
		Package: r.Package, Version: r.Version, Title: r.Title, State: r.State, AlreadyInstalled: r.State == StateAlreadyInstalled,
		Phase: r.Phase, Percent: r.Percent, Message: r.Message, ExitCode: r.ExitCode, LogExcerpt: r.LogExcerpt,
		ScheduledJobID: r.ScheduledJobID, RunID: r.RunID, RequestedBy: r.RequestedBy, CreatedAt: r.CreatedAt,
		StartedAt: r.StartedAt, ProgressAt: r.ProgressAt, FinishedAt: r.FinishedAt}
}

// Open says whether the install still waits for or runs in its lane.
func (i Install) Open() bool { return i.State == StateQueued || i.State == StateRunning }

// Request is what asks for an install.
type Request struct {
	DeviceGUID     cairn.DeviceGUID
	PatchKey       string
	Actor          string
	ScheduledJobID *int64
	RunID          string
}

// Target is the install's device and what its lane needs.
type Target struct {
	GUID     cairn.DeviceGUID
	Hostname string
	SiteSlug string
}

// RequestInstall records an install of a pending patch of a device inside
// scope: a new queued install, or the open one of the same patch (asking
// twice installs once). The caller hands it to the device's lane.
func (s *Service) RequestInstall(ctx context.Context, scope cairn.SiteScope, req Request) (Install, Target, error) {
	i, t, _, err := s.requestInstall(ctx, scope, req)
	return i, t, err
}

// requestInstall is RequestInstall that also says whether the install is
// new (false: the open install of the same patch).
func (s *Service) requestInstall(ctx context.Context, scope cairn.SiteScope, req Request) (Install, Target, bool, error) {
	var v cairn.Validation
	if strings.TrimSpace(string(req.DeviceGUID)) == "" {
		v.Add("device_guid", "is required")
	}
	if strings.TrimSpace(req.PatchKey) == "" {
		v.Add("patch_key", "is required")
	}
	if req.Actor == "" {
		v.Add("actor", "is required")
	}
	if err := v.Err(); err != nil {
		return Install{}, Target{}, false, err
	}
	p, err := s.store.PatchDeviceTarget(ctx, db.PatchDeviceTargetParams{DeviceGuid: cairn.DeviceGUID(req.DeviceGUID), PatchKey: req.PatchKey,
		AllSites: scope.All, SiteIds: scope.IDs()})
	if err != nil {
		return Install{}, Target{}, false, db.NotFound(err, "patch not found")
	}
	id := newInstallID()
	row, err := s.store.PatchInstallInsert(ctx, db.PatchInstallInsertParams{ID: id, DeviceGuid: p.Guid,
		PatchKey: p.PatchKey, Kb: p.Kb, UpdateID: p.UpdateID, Revision: p.Revision, Package: p.Package, Version: p.CandidateVersion,
		Title: p.Title, ScheduledJobID: req.ScheduledJobID, RunID: req.RunID, RequestedBy: req.Actor})
	if err != nil {
		return Install{}, Target{}, false, err
	}
	return installOf(row), Target{GUID: p.Guid, Hostname: p.Hostname, SiteSlug: p.SiteSlug}, row.ID == id, nil
}

// AgentRequest is the patch_install_request of an install.
func (i Install) AgentRequest() proto.PatchInstallRequest {
	return proto.PatchInstallRequest{InstallID: i.ID, ScheduledJobID: i.ScheduledJobID, RunID: i.RunID, PatchKey: i.PatchKey,
		KB: i.KB, UpdateID: i.UpdateID, Revision: int(i.Revision), Title: i.Title, Package: i.Package, Version: i.Version}
}

// Get returns one install.
func (s *Service) Get(ctx context.Context, id string) (Install, error) {
	r, err := s.store.PatchInstallGet(ctx, id)
	if err != nil {
		return Install{}, db.NotFound(err, "no install %q", id)
	}
	return installOf(r), nil
}

// Begin marks an install running when its lane reaches it. ok is false
// when it already finished (a lane replaying an order it ran).
func (s *Service) Begin(ctx context.Context, id string) (Install, bool, error) {
	r, err := s.store.PatchInstallStart(ctx, id)
	if db.IsNoRows(err) {
		i, err := s.Get(ctx, id)
		return i, false, err
	}
	if err != nil {
		return Install{}, false, err
	}
	return installOf(r), true, nil
}

// Progress limits.
const (
	MaxProgressMessage = 1024
	maxPhase           = 32
)

var phases = map[string]bool{proto.PatchPhaseStarting: true, proto.PatchPhaseDownloading: true,
	proto.PatchPhaseInstalling: true, proto.PatchPhaseFinished: true}

// Progress records an agent's progress report on its own running install;
// a report about another device's install, a finished one or an older
// report than the last is ignored (false). Bad reports are
// validation_failed.
func (s *Service) Progress(ctx context.Context, guid cairn.DeviceGUID, p proto.PatchInstallProgress) (bool, error) {
	var v cairn.Validation
	if p.InstallID == "" {
		v.Add("install_id", "is required")
	}
	if !phases[p.Phase] {
		v.Add("phase", "must be starting, downloading, installing or finished")
	}
	if p.Percent < 0 || p.Percent > 100 {
		v.Add("percent", "must be 0 to 100")
	}
	if p.CapturedAt.IsZero() {
		v.Add("captured_at", "is required")
	}
	if err := v.Err(); err != nil {
		return false, err
	}
	msg := p.Message
	if len(msg) > MaxProgressMessage {
		msg = msg[:MaxProgressMessage]
	}
	// A clock ahead of the Engine's is clamped: it must not lock out the
	// reports that follow.
	at := p.CapturedAt.UTC()
	if now := s.now().UTC(); at.After(now) {
		at = now
	}
	_, err := s.store.PatchInstallProgress(ctx, db.PatchInstallProgressParams{Phase: p.Phase, Percent: int32(p.Percent),
		Message: strings.ToValidUTF8(msg, ""), CapturedAt: &at, ID: p.InstallID, DeviceGuid: guid})
	if db.IsNoRows(err) {
		return false, nil
	}
	return err == nil, err
}

// Outcome is what the lane learned of one attempt: the agent's answer
// (nil when it failed with ErrCode) and whether the re-scan after it
// succeeded (its rows are then stored).
type Outcome struct {
	Result     *proto.PatchInstallResult
	ErrCode    string
	ErrMessage string
	Rescanned  bool
	RescanErr  string
}

// Conclude records an attempt's outcome from what the re-scan stored:
// installed only when the patch's row is installed, or no update of it is
// pending any more; an agent's success the re-scan contradicts (or that no
// re-scan could check) is not_confirmed.
func (s *Service) Conclude(ctx context.Context, id string, o Outcome) (Install, error) {
	inst, err := s.Get(ctx, id)
	if err != nil || !inst.Open() {
		return inst, err
	}
	confirmed := false
	if o.Rescanned {
		row, rowErr := s.store.DevicePatchGet(ctx, db.DevicePatchGetParams{DeviceGuid: cairn.DeviceGUID(inst.DeviceGUID), PatchKey: inst.PatchKey})
		if rowErr != nil && !db.IsNoRows(rowErr) {
			return Install{}, rowErr
		}
		pending, err := s.store.PatchPendingCount(ctx, db.PatchPendingCountParams{DeviceGuid: cairn.DeviceGUID(inst.DeviceGUID),
			PatchKey: inst.PatchKey, Package: inst.Package})
		if err != nil {
			return Install{}, err
		}
		confirmed = (rowErr == nil && row.State == "installed") || pending == 0
	}
	fin := db.PatchInstallFinishParams{ID: id}
	switch {
	case o.Result == nil && confirmed:
		fin.State, fin.Message = StateInstalled, "the agent's answer was lost ("+o.ErrMessage+"); the re-scan shows it installed"
	case o.Result == nil:
		fin.State, fin.Message = StateFailed, o.ErrCode+": "+o.ErrMessage
	case o.Result.Status == proto.PatchInstallFailed && confirmed:
		fin.State, fin.Message = StateInstalled, "the agent reported a failure ("+o.Result.Message+"); the re-scan shows it installed"
	case o.Result.Status == proto.PatchInstallFailed:
		fin.State, fin.Message = StateFailed, o.Result.Message
	case !confirmed && !o.Rescanned:
		fin.State, fin.Message = StateNotConfirmed, o.Result.Message+"; the re-scan failed: "+o.RescanErr
	case !confirmed:
		fin.State, fin.Message = StateNotConfirmed, o.Result.Message+"; the re-scan still lists it pending"
	case o.Result.Status == proto.PatchInstallAlready || o.Result.AlreadyInstalled:
		fin.State, fin.Message = StateAlreadyInstalled, o.Result.Message
	default:
		fin.State, fin.Message = StateInstalled, o.Result.Message
	}
	if o.Result != nil {
		if o.Result.ExitCode != nil {
			c := int32(*o.Result.ExitCode)
			fin.ExitCode = &c
		}
		fin.LogExcerpt = strings.ToValidUTF8(o.Result.LogExcerpt, "")
	}
	r, err := s.store.PatchInstallFinish(ctx, fin)
	if db.IsNoRows(err) {
		return s.Get(ctx, id)
	}
	if err != nil {
		return Install{}, err
	}
	return installOf(r), nil
}

// deviceInstalls are a device's newest installs.
func (s *Service) deviceInstalls(ctx context.Context, guid cairn.DeviceGUID) ([]Install, error) {
	rows, err := s.store.PatchInstallListByDevice(ctx, db.PatchInstallListByDeviceParams{DeviceGuid: guid, MaxRows: MaxDeviceInstalls})
	if err != nil {
		return nil, err
	}
	out := make([]Install, len(rows))
	for i, r := range rows {
		out[i] = installOf(r)
	}
	return out, nil
}
