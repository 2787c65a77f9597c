package patches

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
)

// Enforcement states: queued and running in the device's patch lane, then
// the agent's answer (applied, restored, not_managed) or failed.
const (
	EnforcementQueued     = "queued"
	EnforcementRunning    = "running"
	EnforcementApplied    = proto.PatchEnforcementApplied
	EnforcementRestored   = proto.PatchEnforcementRestored
	EnforcementNotManaged = proto.PatchEnforcementNotManaged
	EnforcementFailed     = "failed"
)

// EnforcementRetryInterval is how long after a failed enforcement an
// evaluation asks the device again for the same mode (an agent too old to
// know the request fails every time: at most once per interval).
const EnforcementRetryInterval = time.Hour

// Enforcement is one patch_policy_enforcement_request of one Windows
// device (SPEC agent behaviour 11): the mode its effective policy asks
// for and the agent's answer. The newest one is the device's enforcement
// state.
type Enforcement struct {
	ID         string           `json:"enforcement_id"`
	DeviceGUID cairn.DeviceGUID `json:"device_guid"`
	Mode       string           `json:"mode"`
	// PolicyID is the policy whose enforcement_mode it is (null: no layer
	// sets one, unmanaged).
	PolicyID *int64 `json:"policy_id"`
	State    string `json:"state"`
	Message  string `json:"message"`
	// Values are the Windows Update policy values as the agent left them.
	Values      []proto.PatchPolicyValue `json:"values"`
	RequestedBy string                   `json:"requested_by"`
	CreatedAt   time.Time                `json:"created_at"`
	StartedAt   *time.Time               `json:"started_at"`
	FinishedAt  *time.Time               `json:"finished_at"`
}

func enforcementOf(r db.PatchEnforcement) Enforcement {
	e := Enforcement{ID: r.ID, DeviceGUID: r.DeviceGuid, Mode: r.Mode, PolicyID: r.PolicyID, State: r.State, Message: r.Message,
		RequestedBy: r.RequestedBy, CreatedAt: r.CreatedAt, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt}
	if json.Unmarshal(r.Values, &e.Values) != nil || e.Values == nil {
		e.Values = []proto.PatchPolicyValue{}
	}
	return e
}

// Open says whether the enforcement still waits for or runs in its lane.
func (e Enforcement) Open() bool {
	return e.State == EnforcementQueued || e.State == EnforcementRunning
}

// AgentRequest is the patch_policy_enforcement_request of an enforcement.
func (e Enforcement) AgentRequest() proto.PatchPolicyEnforcementRequest {
	return proto.PatchPolicyEnforcementRequest{EnforcementID: e.ID, Mode: e.Mode}
}

// IsWindows says whether an operating system is Windows (enforcement
// exists only there).
func IsWindows(operatingSystem string) bool {
	return strings.Contains(strings.ToLower(operatingSystem), "windows")
}

// EnforcementDue says whether a device whose effective mode is mode must
// be asked for it, given its newest enforcement (nil: it was never
// asked): on its first evaluation whatever the mode (the Engine does not
// know what a restored or older Engine left on it), when the mode
// changed (an open request of another mode included: the new one runs
// after it in the lane), and again EnforcementRetryInterval after a
// failure.
func EnforcementDue(mode string, last *Enforcement, now time.Time) bool {
	switch {
	case last == nil, last.Mode != mode:
		return true
	case last.State != EnforcementFailed:
		return false
	}
	at := last.CreatedAt
	if last.FinishedAt != nil {
		at = *last.FinishedAt
	}
	return now.Sub(at) >= EnforcementRetryInterval
}

// RequestEnforcement records a queued enforcement; the caller hands it to
// the device's lane.
func (s *Service) RequestEnforcement(ctx context.Context, guid cairn.DeviceGUID, mode string, policyID *int64, actor string) (Enforcement, error) {
	var v cairn.Validation
	if guid == "" {
		v.Add("device_guid", "is required")
	}
	switch mode {
	case proto.PatchModeUnmanaged, proto.PatchModeManaged, proto.PatchModeFrozen:
	default:
		v.Add("mode", "must be unmanaged, managed or frozen")
	}
	if err := v.Err(); err != nil {
		return Enforcement{}, err
	}
	r, err := s.store.PatchEnforcementInsert(ctx, db.PatchEnforcementInsertParams{ID: newInstallID(), DeviceGuid: guid,
		Mode: mode, PolicyID: policyID, RequestedBy: actor})
	if err != nil {
		return Enforcement{}, err
	}
	return enforcementOf(r), nil
}

// GetEnforcement returns one enforcement.
func (s *Service) GetEnforcement(ctx context.Context, id string) (Enforcement, error) {
	r, err := s.store.PatchEnforcementGet(ctx, id)
	if err != nil {
		return Enforcement{}, db.NotFound(err, "no enforcement %q", id)
	}
	return enforcementOf(r), nil
}

// BeginEnforcement marks an enforcement running when its lane reaches it;
// ok is false when it already finished (an order delivered twice).
func (s *Service) BeginEnforcement(ctx context.Context, id string) (Enforcement, bool, error) {
	r, err := s.store.PatchEnforcementStart(ctx, id)
	if db.IsNoRows(err) {
		e, err := s.GetEnforcement(ctx, id)
		return e, false, err
	}
	if err != nil {
		return Enforcement{}, false, err
	}
	return enforcementOf(r), true, nil
}

// EnforcementOutcome is the agent's answer to an enforcement (nil when
// the request failed with ErrCode).
type EnforcementOutcome struct {
	Result     *proto.PatchPolicyEnforcementResult
	ErrCode    string
	ErrMessage string
}

// MaxEnforcementValues bounds the policy values recorded from an answer.
const MaxEnforcementValues = 32

// ConcludeEnforcement records the agent's answer. An answer of no known
// status, or of a mode other than the one asked, is failed.
func (s *Service) ConcludeEnforcement(ctx context.Context, id string, o EnforcementOutcome) (Enforcement, error) {
	e, err := s.GetEnforcement(ctx, id)
	if err != nil {
		return Enforcement{}, err
	}
	fin := db.PatchEnforcementFinishParams{ID: id, Values: []byte("[]")}
	switch {
	case o.Result == nil:
		fin.State, fin.Message = EnforcementFailed, o.ErrCode+": "+o.ErrMessage
	case o.Result.Status != EnforcementApplied && o.Result.Status != EnforcementRestored && o.Result.Status != EnforcementNotManaged:
		fin.State, fin.Message = EnforcementFailed, "the agent answered an unknown status "+strconv.Quote(o.Result.Status)
	case o.Result.Mode != e.Mode:
		fin.State, fin.Message = EnforcementFailed, "the agent answered mode "+strconv.Quote(o.Result.Mode)+", not "+e.Mode
	default:
		fin.State, fin.Message = o.Result.Status, o.Result.Message
		values := o.Result.Values
		if len(values) > MaxEnforcementValues {
			values = values[:MaxEnforcementValues]
		}
		if raw, err := json.Marshal(values); err == nil && values != nil {
			fin.Values = raw
		}
	}
	fin.Message = strings.ToValidUTF8(fin.Message, "")
	if len(fin.Message) > MaxProgressMessage {
		fin.Message = fin.Message[:MaxProgressMessage]
	}
	r, err := s.store.PatchEnforcementFinish(ctx, fin)
	if db.IsNoRows(err) {
		return s.GetEnforcement(ctx, id)
	}
	if err != nil {
		return Enforcement{}, err
	}
	return enforcementOf(r), nil
}

// latestEnforcements are the newest enforcements of some devices.
func (s *Service) latestEnforcements(ctx context.Context, guids []cairn.DeviceGUID) (map[cairn.DeviceGUID]*Enforcement, error) {
	out := map[cairn.DeviceGUID]*Enforcement{}
	if len(guids) == 0 {
		return out, nil
	}
	keys := make([]string, len(guids))
	for i, g := range guids {
		keys[i] = string(g)
	}
	rows, err := s.store.PatchEnforcementLatest(ctx, keys)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		e := enforcementOf(r)
		out[e.DeviceGUID] = &e
	}
	return out, nil
}

// deviceEnforcements are a device's newest enforcements.
func (s *Service) deviceEnforcements(ctx context.Context, guid cairn.DeviceGUID) ([]Enforcement, error) {
	rows, err := s.store.PatchEnforcementListByDevice(ctx, db.PatchEnforcementListByDeviceParams{DeviceGuid: guid, MaxRows: MaxDeviceInstalls})
	if err != nil {
		return nil, err
	}
	out := make([]Enforcement, len(rows))
	for i, r := range rows {
		out[i] = enforcementOf(r)
	}
	return out, nil
}
