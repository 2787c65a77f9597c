package devices

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
)

// Heartbeats are the hot path: thousands of agents every 20 s. A call only
// records the beat in memory (a newer beat of the same device replaces
// the older), and Flush writes everything queued in one statement.

type beat struct {
	seenAt       time.Time
	metrics      []byte
	agentVersion string
	bootID       string
}

type heartbeats struct {
	mu      sync.Mutex
	pending map[string]beat
	// wantDetails holds devices the last flush found without inventory;
	// their next heartbeat answer asks for a details post.
	wantDetails map[string]bool
	// metadataRev holds the devices' metadata revisions (operator edits)
	// the last flush read, nonzero only; answered in the heartbeat so
	// agents learn of edits without a query per beat.
	metadataRev map[string]int64
	// full wakes Run for an early flush.
	full chan struct{}
	// flushing serializes flushes.
	flushing sync.Mutex
}

func newHeartbeats() *heartbeats {
	return &heartbeats{pending: map[string]beat{}, wantDetails: map[string]bool{}, metadataRev: map[string]int64{},
		full: make(chan struct{}, 1)}
}

const (
	maxAgentVersion  = 64
	maxBootID        = 128
	maxLoggedInUsers = 256
	maxUsername      = 256
)

func checkHeartbeat(hb proto.Heartbeat) error {
	var v cairn.Validation
	if len(hb.AgentVersion) > maxAgentVersion {
		v.Add("agent_version", fmt.Sprintf("must be at most %d characters", maxAgentVersion))
	}
	if len(hb.BootID) > maxBootID {
		v.Add("boot_id", fmt.Sprintf("must be at most %d characters", maxBootID))
	}
	if c := hb.Metrics.CPUPercent; math.IsNaN(c) || math.IsInf(c, 0) || c < 0 {
		v.Add("metrics.cpu_percent", "must be a non-negative number")
	}
	if hb.Metrics.UptimeSeconds < 0 {
		v.Add("metrics.uptime_seconds", "must not be negative")
	}
	if len(hb.Metrics.LoggedInUsers) > maxLoggedInUsers {
		v.Add("metrics.logged_in_users", fmt.Sprintf("must have at most %d entries", maxLoggedInUsers))
	}
	for _, u := range hb.Metrics.LoggedInUsers {
		if len(u) > maxUsername {
			v.Add("metrics.logged_in_users", fmt.Sprintf("names must be at most %d characters", maxUsername))
			break
		}
	}
	return v.Err()
}

// Heartbeat records a device's heartbeat: last_seen (the Engine's clock,
// not the agent's), metrics, agent version and boot ID are written by the
// next flush, within about a second. The answer's metadata_revision is the
// device's metadata revision as of the last flush; applying metadata writes
// and naming changed fields is internal/metadata's (AgentSync), which the
// heartbeat route calls only when there is something to do.
func (s *Service) Heartbeat(ctx context.Context, id devicetrust.Identity, hb proto.Heartbeat) (proto.HeartbeatResponse, error) {
	if err := checkHeartbeat(hb); err != nil {
		return proto.HeartbeatResponse{}, err
	}
	if hb.Metrics.LoggedInUsers == nil {
		hb.Metrics.LoggedInUsers = []string{}
	}
	metrics, err := json.Marshal(hb.Metrics)
	if err != nil {
		return proto.HeartbeatResponse{}, err
	}
	now := s.now()
	b := s.beats
	b.mu.Lock()
	b.pending[string(id.GUID)] = beat{seenAt: now, metrics: metrics, agentVersion: hb.AgentVersion, bootID: hb.BootID}
	queued, want, rev := len(b.pending), b.wantDetails[string(id.GUID)], b.metadataRev[string(id.GUID)]
	b.mu.Unlock()
	s.cfg.Metrics.Heartbeat()
	if queued >= s.cfg.FlushSize {
		select {
		case b.full <- struct{}{}:
		default:
		}
	}
	return proto.HeartbeatResponse{ServerTime: now, MetadataFieldAcks: []proto.MetadataAck{},
		IntervalSeconds: HeartbeatIntervalSeconds, DetailsWanted: want, MetadataRevision: rev}, nil
}

// Run flushes queued heartbeats every FlushInterval, or early when
// FlushSize devices are queued, until ctx ends. It does not flush at the
// end: call Flush after the HTTP server stopped taking heartbeats.
func (s *Service) Run(ctx context.Context) {
	t := time.NewTicker(s.cfg.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.beats.full:
		}
		if err := s.Flush(ctx); err != nil && ctx.Err() == nil {
			s.cfg.Log.Error("flush heartbeats", "err", err)
		}
	}
}

// Flush writes every queued heartbeat in one statement. On failure the
// beats stay queued (unless a newer one arrived meanwhile) for the next
// flush.
func (s *Service) Flush(ctx context.Context) error {
	b := s.beats
	b.flushing.Lock()
	defer b.flushing.Unlock()
	b.mu.Lock()
	batch := b.pending
	b.pending = make(map[string]beat, len(batch))
	b.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	p := db.DeviceHeartbeatApplyParams{
		Guids: make([]string, 0, len(batch)), SeenAt: make([]time.Time, 0, len(batch)),
		Metrics: make([]string, 0, len(batch)), AgentVersions: make([]string, 0, len(batch)), BootIds: make([]string, 0, len(batch)),
	}
	// In GUID order, so two replicas flushing overlapping batches (an agent
	// that just moved between them) take row locks in the same order.
	guids := make([]string, 0, len(batch))
	for guid := range batch {
		guids = append(guids, guid)
	}
	slices.Sort(guids)
	for _, guid := range guids {
		bt := batch[guid]
		p.Guids = append(p.Guids, guid)
		p.SeenAt = append(p.SeenAt, bt.seenAt)
		p.Metrics = append(p.Metrics, string(bt.metrics))
		p.AgentVersions = append(p.AgentVersions, bt.agentVersion)
		p.BootIds = append(p.BootIds, bt.bootID)
	}
	rows, err := s.store.DeviceHeartbeatApply(ctx, p)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err != nil {
		for guid, bt := range batch {
			if _, newer := b.pending[guid]; !newer {
				b.pending[guid] = bt
			}
		}
		return err
	}
	for _, r := range rows {
		if r.DetailsWanted {
			b.wantDetails[string(r.Guid)] = true
		} else {
			delete(b.wantDetails, string(r.Guid))
		}
		if r.MetadataRevision > 0 {
			b.metadataRev[string(r.Guid)] = r.MetadataRevision
		} else {
			delete(b.metadataRev, string(r.Guid))
		}
		delete(batch, string(r.Guid))
	}
	// What is left are devices that no longer exist (purged): forget them.
	for guid := range batch {
		delete(b.wantDetails, guid)
		delete(b.metadataRev, guid)
	}
	return nil
}

// MetadataChanged raises the cached metadata revision of a device after an
// operator edit in this process, so its next heartbeat answer names the
// edit without waiting for a flush (other replicas learn it from theirs).
func (s *Service) MetadataChanged(guid cairn.DeviceGUID, revision int64) {
	s.beats.mu.Lock()
	if revision > s.beats.metadataRev[string(guid)] {
		s.beats.metadataRev[string(guid)] = revision
	}
	s.beats.mu.Unlock()
}

// detailsStored forgets a pending details request once details arrived.
func (s *Service) detailsStored(guid cairn.DeviceGUID) {
	s.beats.mu.Lock()
	delete(s.beats.wantDetails, string(guid))
	s.beats.mu.Unlock()
}
