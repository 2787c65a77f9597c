package runtime

import (
	"sync"
	"time"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// Status phases.
const (
	PhaseStarting = "starting"
	PhaseRunning  = "running"
	PhaseStopping = "stopping"
)

// Milestone names of the startup timeline.
const (
	MilestoneAgentStarted      = "agent_started"
	MilestoneEnrolled          = "enrolled"
	MilestoneLoopStarted       = "loop_started"
	MilestoneLoopRestarted     = "loop_restarted"
	MilestoneStatusPosted      = "startup_status_posted"
	MilestoneRealtimeConnected = "realtime_connected"
)

// maxMilestones bounds the timeline a long-lived agent carries; the first
// entry (process start) is always kept.
const maxMilestones = 32

// timeline is the startup timeline and last error the status posts carry
// (SPEC "Agent-side behavior" item 3).
type timeline struct {
	now       func() time.Time
	startedAt time.Time

	mu         sync.Mutex
	milestones []proto.Milestone
	lastErr    *proto.Telemetry
}

func newTimeline(now func() time.Time) *timeline {
	t := &timeline{now: now, startedAt: now().UTC()}
	t.milestones = []proto.Milestone{{Name: MilestoneAgentStarted, At: t.startedAt, OK: true}}
	return t
}

func (t *timeline) mark(name string, ok bool, detail string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.milestones = append(t.milestones, proto.Milestone{Name: name, At: t.now().UTC(), OK: ok, Detail: detail})
	if n := len(t.milestones); n > maxMilestones {
		t.milestones = append(t.milestones[:1], t.milestones[n-maxMilestones+1:]...)
	}
}

func (t *timeline) fail(source string, err error) {
	if err == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lastErr = &proto.Telemetry{Message: err.Error(), At: t.now().UTC(), Source: source}
}

func (t *timeline) status(phase, bootID, version string, roles []proto.RoleHealth) proto.Status {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := proto.Status{
		Phase: phase, BootID: bootID, AgentVersion: version, StartedAt: t.startedAt,
		Milestones: append([]proto.Milestone(nil), t.milestones...), Roles: roles,
	}
	if t.lastErr != nil {
		e := *t.lastErr
		s.LastError = &e
	}
	return s
}
