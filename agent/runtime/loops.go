package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn/agent"
	"github.com/cairn-rmm/cairn/agent/proto"
)

// Bounds on the Engine's interval_seconds: a broken answer must neither
// flood the Engine nor silence the agent.
const (
	minHeartbeatInterval = time.Second
	maxHeartbeatInterval = 10 * time.Minute
)

func (a *Agent) roles() []proto.RoleHealth {
	if a.opts.Roles == nil {
		return nil
	}
	return a.opts.Roles.Snapshot()
}

func (a *Agent) status(phase string) proto.Status {
	s := a.timeline.status(phase, a.opts.Identity.BootID, a.opts.Version, a.roles())
	s.BuildID = a.opts.BuildID
	return s
}

// postStartup posts the starting status, retrying a few times. When the
// Engine keeps refusing it the loop goes on (the failure is in the
// timeline, sent with the next status): the socket is still worth having.
// It fails only when ctx ends or the tokens are gone.
func (a *Agent) postStartup(ctx context.Context, tokens *Tokens) error {
	b := newBackoff(a.timing.RetryMin, a.timing.RetryMax)
	for attempt := 1; ; attempt++ {
		err := tokens.Call(ctx, http.MethodPost, proto.PathStatus, a.status(PhaseStarting), nil)
		if err == nil {
			a.timeline.mark(MilestoneStatusPosted, true, "")
			return nil
		}
		if ctx.Err() != nil || errors.Is(err, ErrTokensCleared) {
			return err
		}
		a.opts.Hooks.error("status", err)
		a.timeline.fail("status", err)
		if attempt >= a.timing.StatusAttempts {
			a.log.Warn("the Engine did not take the startup status; continuing", "err", err)
			return nil
		}
		if !sleep(ctx, b.next()) {
			return ctx.Err()
		}
	}
}

// runningStatus posts phase running once the socket is first accepted in
// this loop, so the timeline shows when the agent became reachable.
func (a *Agent) runningStatus(ctx context.Context, calls *caller, connected <-chan struct{}) {
	select {
	case <-ctx.Done():
		return
	case <-connected:
	}
	a.timeline.mark(MilestoneRealtimeConnected, true, a.socket.get().Worker)
	if err := calls.call(ctx, proto.CallStatus, http.MethodPost, proto.PathStatus, a.status(PhaseRunning), nil); err != nil && ctx.Err() == nil {
		a.opts.Hooks.error("status", err)
		a.timeline.fail("status", err)
	}
}

// heartbeatLoop sends a heartbeat every interval plus 0..jitter, measured
// start to start so the cadence does not drift with the Engine's latency.
func (a *Agent) heartbeatLoop(ctx context.Context, calls *caller, detailsWanted chan<- struct{}) {
	interval := a.timing.HeartbeatInterval
	next := a.now().Add(a.timing.FirstHeartbeatDelay)
	for {
		if !sleep(ctx, next.Sub(a.now())) {
			return
		}
		start := a.now()
		resp, err := a.heartbeat(ctx, calls)
		if a.opts.Hooks.Heartbeat != nil && ctx.Err() == nil {
			a.opts.Hooks.Heartbeat(a.now().Sub(start), err)
		}
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			a.opts.Hooks.error("heartbeat", err)
			a.timeline.fail("heartbeat", err)
			a.log.Warn("heartbeat failed", "err", err)
		default:
			interval = heartbeatInterval(resp.IntervalSeconds, interval)
			if resp.DetailsWanted {
				select {
				case detailsWanted <- struct{}{}:
				default:
				}
			}
		}
		next = start.Add(interval + a.jitter(a.timing.HeartbeatJitter))
	}
}

// heartbeatInterval applies the Engine's interval_seconds (0: keep).
func heartbeatInterval(seconds int, current time.Duration) time.Duration {
	if seconds <= 0 {
		return current
	}
	return min(max(time.Duration(seconds)*time.Second, minHeartbeatInterval), maxHeartbeatInterval)
}

// errNothingAcked keeps an ack that removed nothing from writing the file.
var errNothingAcked = errors.New("nothing acknowledged")

// heartbeat sends metrics and the metadata queue (over the socket when it
// is up: calls.go), applies the acks and, after success, removes stale
// temp files next to agent.json.
func (a *Agent) heartbeat(ctx context.Context, calls *caller) (proto.HeartbeatResponse, error) {
	cfg, err := a.opts.Store.Load()
	if err != nil {
		return proto.HeartbeatResponse{}, err
	}
	hb := proto.Heartbeat{
		AgentVersion: a.opts.Version, BootID: a.opts.Identity.BootID,
		Metrics:             a.opts.Collector.Metrics(ctx),
		ScriptSigningKeyIDs: cfg.TrustedScriptKeyIDs(),
		MetadataRevision:    cfg.Metadata.EngineRevision,
	}
	for _, e := range cfg.PendingMetadata() {
		hb.MetadataFields = append(hb.MetadataFields, proto.MetadataWrite{FieldNumber: e.FieldNumber, Value: e.Value, ModifiedAt: e.ModifiedAt})
	}
	hb.SentAt = a.now().UTC()
	var resp proto.HeartbeatResponse
	if err := calls.call(ctx, proto.CallHeartbeat, http.MethodPost, proto.PathHeartbeat, hb, &resp); err != nil {
		return resp, err
	}
	applyScriptTrust(a.opts.Store, a.log, resp.ScriptSigning)
	if len(resp.MetadataFieldAcks) > 0 {
		acks := make([]agent.MetadataAck, 0, len(resp.MetadataFieldAcks))
		for _, k := range resp.MetadataFieldAcks {
			acks = append(acks, agent.MetadataAck{FieldNumber: k.FieldNumber, ModifiedAt: k.ModifiedAt, Superseded: k.Superseded})
		}
		_, err := a.opts.Store.Update(func(c *agent.Config) error {
			if c.AckMetadata(acks) == 0 {
				return errNothingAcked
			}
			return nil
		})
		if err != nil && !errors.Is(err, errNothingAcked) {
			a.log.Error("could not save the metadata acknowledgements", "err", err)
		}
	}
	a.syncMetadata(ctx, calls, cfg.Metadata.EngineRevision, resp)
	if dir := a.opts.Store.Dir(); dir != "" {
		removed, err := agent.CleanStaleTemps(dir, a.now())
		if len(removed) > 0 {
			a.log.Info("removed stale config temp files", "files", removed)
		}
		if err != nil {
			a.log.Warn("could not remove stale config temp files", "err", err)
		}
	}
	return resp, nil
}

// detailsLoop posts the inventory at start, then whenever its hash or a
// role's state changes, when the Engine asks (details_wanted) and at
// least every DetailsMaxInterval. A failed post leaves the last hash
// unchanged, so the next check posts again.
func (a *Agent) detailsLoop(ctx context.Context, calls *caller, wanted <-chan struct{}) {
	var lastHash, lastRoles string
	var lastPost time.Time
	check := func(force bool) {
		inv := a.opts.Collector.Collect(ctx)
		roles := a.roles()
		h, rs, now := a.hash(inv), roleStates(roles), a.now()
		if !force && h == lastHash && rs == lastRoles && now.Sub(lastPost) < a.timing.DetailsMaxInterval {
			return
		}
		d := proto.Details{Hash: h, CollectedAt: now.UTC(), Inventory: inv, Roles: roles}
		if err := calls.rest(ctx, http.MethodPost, proto.PathDetails, d, &proto.DetailsResponse{}); err != nil {
			if ctx.Err() == nil {
				a.opts.Hooks.error("details", err)
				a.timeline.fail("details", err)
				a.log.Warn("details post failed", "err", err)
			}
			return
		}
		lastHash, lastRoles, lastPost = h, rs, now
	}
	check(true)
	t := time.NewTicker(a.timing.DetailsCheck)
	defer t.Stop()
	// An operator's stop or start is posted at once (nil: never).
	var roleChanged <-chan struct{}
	if rc, ok := a.opts.Roles.(RoleChanges); ok {
		roleChanged = rc.Changed()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			check(false)
		case <-wanted:
			check(true)
		case <-roleChanged:
			check(false)
		}
	}
}

// roleStates is what of the role health the Engine hears about at the
// next check when it changes: each role's desired and observed state,
// last error and recovery attempts (an operator's stop or start, a role
// turning unhealthy), not the check times, which move on at every check.
func roleStates(rows []proto.RoleHealth) string {
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "%s\x00%s\x00%s\x00%s\x00%d\n", r.Key, r.Desired, r.Observed, r.LastError, r.RecoveryAttempts)
	}
	return b.String()
}

// errTrustUnchanged keeps an unchanged trust list from writing the file.
var errTrustUnchanged = errors.New("script trust unchanged")

// applyScriptTrust follows the key chains of an Engine answer (a key
// rotation reaching the agent); lists no trusted key signed change
// nothing (agent.Config.ApplyTrust).
func applyScriptTrust(store Store, log *slog.Logger, trust *proto.ScriptTrust) {
	if trust == nil {
		return
	}
	_, err := store.Update(func(c *agent.Config) error {
		if !c.ApplyTrust(trust) {
			return errTrustUnchanged
		}
		return nil
	})
	if err == nil {
		log.Info("signing keys updated from the signed chain")
	} else if !errors.Is(err, errTrustUnchanged) {
		log.Error("could not save the script-signing keys", "err", err)
	}
}

// syncMetadata reads the fields operators changed (and those whose write
// the Engine superseded or rejected: it holds another value) and stores
// them as acknowledged, so --metadata get shows the Engine's value. The
// revision is saved only when every read succeeded; otherwise the next
// heartbeat asks again (docs/agent.md "Metadata sync").
func (a *Agent) syncMetadata(ctx context.Context, calls *caller, have int64, resp proto.HeartbeatResponse) {
	fields := map[int]bool{}
	for _, n := range resp.MetadataChangedFields {
		fields[n] = true
	}
	for _, k := range resp.MetadataFieldAcks {
		if k.Superseded {
			fields[k.FieldNumber] = true
		}
		if k.Rejected != "" {
			a.log.Warn("the Engine refused a metadata write", "field", k.FieldNumber, "reason", k.Rejected)
		}
	}
	newRev := resp.MetadataRevision > have
	if len(fields) == 0 && !newRev {
		return
	}
	read := make(map[int]proto.MetadataFieldValue, len(fields))
	complete := true
	for n := range fields {
		if agent.FieldNumberProblem(n) != "" {
			continue
		}
		var v proto.MetadataFieldValue
		if err := calls.call(ctx, proto.CallMetadataRead, http.MethodGet, proto.PathAgentMetadata(n), proto.MetadataRead{FieldNumber: n}, &v); err != nil {
			a.log.Warn("could not read a metadata field from the Engine", "field", n, "err", err)
			complete = false
			continue
		}
		read[n] = v
	}
	_, err := a.opts.Store.Update(func(c *agent.Config) error {
		for n, v := range read {
			at, err := time.Time{}, error(nil)
			if v.ModifiedAt != nil {
				at, err = time.Parse(time.RFC3339Nano, *v.ModifiedAt)
			}
			if v.ModifiedAt == nil || err != nil {
				c.ForgetEngineMetadata(n) // never set on the Engine
				continue
			}
			c.SetEngineMetadata(n, v.Value, at)
		}
		if complete && newRev {
			c.Metadata.EngineRevision = resp.MetadataRevision
		}
		return nil
	})
	if err != nil {
		a.log.Error("could not save the Engine's metadata values", "err", err)
	}
}
