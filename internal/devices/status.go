package devices

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
	"github.com/cairn-rmm/cairn/internal/events"
)

const (
	maxMilestones     = 100
	maxMilestoneName  = 128
	maxMilestoneText  = 1000
	maxTelemetryField = 2000
)

var phasePattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)

func checkStatus(st proto.Status) error {
	var v cairn.Validation
	if !phasePattern.MatchString(st.Phase) {
		v.Add("phase", "must be a lower-case word such as starting, running or stopping")
	}
	if len(st.BootID) > maxBootID {
		v.Add("boot_id", fmt.Sprintf("must be at most %d characters", maxBootID))
	}
	if len(st.AgentVersion) > maxAgentVersion {
		v.Add("agent_version", fmt.Sprintf("must be at most %d characters", maxAgentVersion))
	}
	// The catalog accepts build IDs of up to 128 characters.
	if len(st.BuildID) > 128 {
		v.Add("build_id", "must be at most 128 characters")
	}
	if len(st.Milestones) > maxMilestones {
		v.Add("milestones", fmt.Sprintf("must have at most %d entries", maxMilestones))
	}
	for i, m := range st.Milestones {
		if m.Name == "" || len(m.Name) > maxMilestoneName {
			v.Add(fmt.Sprintf("milestones[%d].name", i), fmt.Sprintf("must be 1 to %d characters", maxMilestoneName))
		}
		if len(m.Detail) > maxMilestoneText {
			v.Add(fmt.Sprintf("milestones[%d].detail", i), fmt.Sprintf("must be at most %d characters", maxMilestoneText))
		}
	}
	if e := st.LastError; e != nil && (len(e.Message) > maxTelemetryField || len(e.Source) > maxRoleText) {
		v.Add("last_error", fmt.Sprintf("message must be at most %d and source %d characters", maxTelemetryField, maxRoleText))
	}
	checkRoles(&v, "roles", st.Roles)
	return v.Err()
}

// StatusRecord is devices.last_status and, with "context": "startup", the
// context of the startup timeline row.
type StatusRecord struct {
	Context      string            `json:"context,omitempty"`
	Phase        string            `json:"phase"`
	BootID       string            `json:"boot_id"`
	AgentVersion string            `json:"agent_version"`
	BuildID      string            `json:"build_id,omitempty"`
	StartedAt    *time.Time        `json:"started_at"`
	ReceivedAt   time.Time         `json:"received_at"`
	Milestones   []proto.Milestone `json:"milestones"`
	LastError    *proto.Telemetry  `json:"last_error"`
}

// Status records an agent's startup timeline: last_seen and last_status
// on the device, the `system:system_heartbeat` row (context "startup",
// Healthy when every milestone succeeded) and the reported role rows,
// then emits agent_status_changed.
func (s *Service) Status(ctx context.Context, id devicetrust.Identity, st proto.Status) error {
	if err := checkStatus(st); err != nil {
		return err
	}
	now := s.now()
	rec := StatusRecord{Phase: st.Phase, BootID: st.BootID, AgentVersion: st.AgentVersion, BuildID: st.BuildID,
		StartedAt: timePtr(st.StartedAt), ReceivedAt: now, Milestones: make([]proto.Milestone, len(st.Milestones)), LastError: st.LastError}
	healthy := true
	for i, m := range st.Milestones {
		m.At = m.At.UTC()
		rec.Milestones[i] = m
		healthy = healthy && m.OK
	}
	if rec.LastError != nil {
		e := *rec.LastError
		e.At = e.At.UTC()
		rec.LastError = &e
	}
	lastStatus, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	rec.Context = "startup"
	timeline, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	startup := db.DeviceRoleUpsertParams{DeviceGuid: id.GUID, Key: proto.RoleKeyStartup, Desired: "running",
		Observed: proto.RoleUnhealthy, LastCheckedAt: &now, Context: timeline}
	if healthy {
		startup.Observed, startup.LastHealthyAt = proto.RoleHealthy, &now
	}
	if rec.LastError != nil {
		startup.LastError = rec.LastError.Message
	}
	roles, err := roleRows(id.GUID, st.Roles, now)
	if err != nil {
		return err
	}

	var dev db.DeviceStatusApplyRow
	err = s.store.InTx(ctx, func(q *db.Queries) error {
		dev, err = q.DeviceStatusApply(ctx, db.DeviceStatusApplyParams{Guid: id.GUID, SeenAt: now, LastStatus: lastStatus,
			AgentVersion: st.AgentVersion, AgentBuildID: st.BuildID, BootID: st.BootID})
		if err != nil {
			return db.NotFound(err, "this device is not enrolled")
		}
		return upsertRoles(ctx, q, append([]db.DeviceRoleUpsertParams{startup}, roles...))
	})
	if err != nil {
		return err
	}
	s.publish(ctx, events.TypeAgentStatusChanged, dev.SiteID, deviceEvent{GUID: dev.Guid, Hostname: dev.Hostname, SiteID: dev.SiteID, Phase: st.Phase})
	return nil
}
