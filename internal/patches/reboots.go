package patches

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
)

// Reboot states: queued and running in the device's patch lane, then the
// agent's answer (scheduled, skipped_logged_in_user, not_required) or
// failed.
const (
	RebootQueued      = "queued"
	RebootRunning     = "running"
	RebootScheduled   = proto.PatchRebootScheduled
	RebootSkipped     = proto.PatchRebootSkippedLoggedIn
	RebootNotRequired = proto.PatchRebootNotRequired
	RebootFailed      = "failed"
)

// Reboot is one patch_reboot_request of one device, a step of its patch
// lane after the installs queued before it.
type Reboot struct {
	ID         string           `json:"reboot_id"`
	DeviceGUID cairn.DeviceGUID `json:"device_guid"`
	// WhenRequired reboots only if the device says it needs a reboot.
	WhenRequired bool `json:"when_required"`
	// Forced reboots with users signed in: only a policy forces.
	Forced bool `json:"forced"`
	// PolicyID is the policy whose reboot policy asked for it (null: an
	// operator did).
	PolicyID *int64 `json:"policy_id"`
	State    string `json:"state"`
	Message  string `json:"message"`
	// SignedIn are the users the agent saw signed in.
	SignedIn    []string   `json:"signed_in"`
	RequestedBy string     `json:"requested_by"`
	CreatedAt   time.Time  `json:"created_at"`
	StartedAt   *time.Time `json:"started_at"`
	FinishedAt  *time.Time `json:"finished_at"`
}

func rebootOf(r db.PatchReboot) Reboot {
	return Reboot{ID: r.ID, DeviceGUID: r.DeviceGuid, WhenRequired: r.WhenRequired, Forced: r.Forced, PolicyID: r.PolicyID,
		State: r.State, Message: r.Message, SignedIn: nonNilStrings(r.SignedIn), RequestedBy: r.RequestedBy,
		CreatedAt: r.CreatedAt, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt}
}

// Open says whether the reboot still waits for or runs in its lane.
func (r Reboot) Open() bool { return r.State == RebootQueued || r.State == RebootRunning }

// AgentRequest is the patch_reboot_request of a reboot.
func (r Reboot) AgentRequest() proto.PatchRebootRequest {
	return proto.PatchRebootRequest{RebootID: r.ID, WhenRequired: r.WhenRequired, Forced: r.Forced}
}

// RebootRequest asks for a reboot of a device the caller checked.
type RebootRequest struct {
	DeviceGUID   cairn.DeviceGUID
	WhenRequired bool
	Forced       bool
	PolicyID     *int64
	Actor        string
	// RunID is the patch_install job run whose installs it follows ("":
	// none; the caller hands it to the lane itself).
	RunID string
}

// RequestReboot records a queued reboot, or returns the device's open one
// (made forced if this request is). The caller hands it to the device's
// lane.
func (s *Service) RequestReboot(ctx context.Context, req RebootRequest) (Reboot, error) {
	var v cairn.Validation
	if req.DeviceGUID == "" {
		v.Add("device_guid", "is required")
	}
	if req.Actor == "" {
		v.Add("actor", "is required")
	}
	if err := v.Err(); err != nil {
		return Reboot{}, err
	}
	return requestReboot(ctx, s.store.Queries, req)
}

func requestReboot(ctx context.Context, q *db.Queries, req RebootRequest) (Reboot, error) {
	r, err := q.PatchRebootInsert(ctx, db.PatchRebootInsertParams{ID: newInstallID(), DeviceGuid: req.DeviceGUID,
		WhenRequired: req.WhenRequired, Forced: req.Forced, PolicyID: req.PolicyID, RequestedBy: req.Actor, RunID: req.RunID})
	if err != nil {
		return Reboot{}, err
	}
	return rebootOf(r), nil
}

// GetReboot returns one reboot.
func (s *Service) GetReboot(ctx context.Context, id string) (Reboot, error) {
	r, err := s.store.PatchRebootGet(ctx, id)
	if err != nil {
		return Reboot{}, db.NotFound(err, "no reboot %q", id)
	}
	return rebootOf(r), nil
}

// BeginReboot marks a reboot running when its lane reaches it; ok is
// false when it already finished (an order delivered twice).
func (s *Service) BeginReboot(ctx context.Context, id string) (Reboot, bool, error) {
	r, err := s.store.PatchRebootStart(ctx, id)
	if db.IsNoRows(err) {
		rb, err := s.GetReboot(ctx, id)
		return rb, false, err
	}
	if err != nil {
		return Reboot{}, false, err
	}
	return rebootOf(r), true, nil
}

// RebootOutcome is the agent's answer to a reboot (nil when the request
// failed with ErrCode).
type RebootOutcome struct {
	Result     *proto.PatchRebootResult
	ErrCode    string
	ErrMessage string
}

// ConcludeReboot records the agent's answer; an answer of no known status
// is failed.
func (s *Service) ConcludeReboot(ctx context.Context, id string, o RebootOutcome) (Reboot, error) {
	fin := db.PatchRebootFinishParams{ID: id, SignedIn: []string{}}
	switch {
	case o.Result == nil:
		fin.State, fin.Message = RebootFailed, o.ErrCode+": "+o.ErrMessage
	case o.Result.Status == RebootScheduled || o.Result.Status == RebootSkipped || o.Result.Status == RebootNotRequired:
		fin.State, fin.Message, fin.SignedIn = o.Result.Status, o.Result.Message, nonNilStrings(o.Result.SignedIn)
	default:
		fin.State, fin.Message = RebootFailed, "the agent answered an unknown status "+strconv.Quote(o.Result.Status)
	}
	fin.Message = strings.ToValidUTF8(fin.Message, "")
	if len(fin.Message) > MaxProgressMessage {
		fin.Message = fin.Message[:MaxProgressMessage]
	}
	r, err := s.store.PatchRebootFinish(ctx, fin)
	if db.IsNoRows(err) {
		return s.GetReboot(ctx, id)
	}
	if err != nil {
		return Reboot{}, err
	}
	return rebootOf(r), nil
}

// deviceReboots are a device's newest reboots.
func (s *Service) deviceReboots(ctx context.Context, guid cairn.DeviceGUID) ([]Reboot, error) {
	rows, err := s.store.PatchRebootListByDevice(ctx, db.PatchRebootListByDeviceParams{DeviceGuid: guid, MaxRows: MaxDeviceInstalls})
	if err != nil {
		return nil, err
	}
	out := make([]Reboot, len(rows))
	for i, r := range rows {
		out[i] = rebootOf(r)
	}
	return out, nil
}
