package runtime

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent"
	"github.com/cairn-rmm/cairn/agent/inventory"
	"github.com/cairn-rmm/cairn/agent/proto"
)

func TestStatusBeforeSocket(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.enroll(t)
	// A slow status post: a loop that did not wait for it would open the
	// socket meanwhile.
	e.engine.SetStatusDelay(200 * time.Millisecond)
	a := start(t, e.options())
	nextConn(t, e.engine)
	require.Eventually(t, func() bool { return e.engine.Count("status:"+PhaseRunning) == 1 }, wait, tick)

	ev := e.engine.Events()
	starting, socket := indexOf(ev, "status:"+PhaseStarting), indexOf(ev, "socket")
	require.GreaterOrEqual(t, starting, 0, "%v", ev)
	require.Less(t, starting, socket, "the startup status precedes the socket: %v", ev)
	require.Less(t, socket, indexOf(ev, "status:"+PhaseRunning), "%v", ev)

	st := e.engine.Statuses()[0]
	require.Equal(t, PhaseStarting, st.Phase)
	require.Equal(t, "boot-1", st.BootID)
	require.Equal(t, "test", st.AgentVersion)
	var names []string
	for _, m := range st.Milestones {
		names = append(names, m.Name)
		require.False(t, m.At.IsZero())
	}
	require.Equal(t, []string{MilestoneAgentStarted, MilestoneLoopStarted}, names)
	running := e.engine.Statuses()[1]
	require.Equal(t, MilestoneRealtimeConnected, running.Milestones[len(running.Milestones)-1].Name)
	require.Equal(t, SocketConnected, a.Socket().State)
}

func TestStoppingStatusOnShutdown(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.enroll(t)
	a, err := New(e.options())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	nextConn(t, e.engine)
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(wait):
		t.Fatal("Run did not return")
	}
	require.Equal(t, 1, e.engine.Count("status:"+PhaseStopping))
}

func TestHeartbeatCadence(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.enroll(t)
	opts := e.options()
	opts.Timing.HeartbeatInterval, opts.Timing.HeartbeatJitter = 100*time.Millisecond, 50*time.Millisecond
	start(t, opts)
	require.Eventually(t, func() bool { return len(e.engine.Heartbeats()) >= 6 }, wait, tick)

	hbs := e.engine.Heartbeats()
	for i := 1; i < len(hbs); i++ {
		gap := hbs[i].At.Sub(hbs[i-1].At)
		// Never faster than the interval. No upper bound: a loaded machine
		// may deliver any request late; reaching six heartbeats at all is
		// the loop's liveness.
		require.GreaterOrEqual(t, gap, 90*time.Millisecond, "gap %d", i)
	}
	hb := hbs[0].Body
	require.Equal(t, "boot-1", hb.BootID)
	require.Equal(t, 12.5, hb.Metrics.CPUPercent)
	require.False(t, hb.SentAt.IsZero())
}

func TestHeartbeatHonoursEngineInterval(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.enroll(t)
	e.engine.SetHeartbeatAnswer(1, false)
	opts := e.options()
	opts.Timing.HeartbeatJitter = time.Millisecond
	start(t, opts)
	require.Eventually(t, func() bool { return len(e.engine.Heartbeats()) >= 3 }, wait, tick)
	hbs := e.engine.Heartbeats()
	for i := 1; i < len(hbs); i++ {
		require.GreaterOrEqual(t, hbs[i].At.Sub(hbs[i-1].At), 950*time.Millisecond)
	}
}

func TestHeartbeatInterval(t *testing.T) {
	t.Parallel()
	cur := 20 * time.Second
	for _, tc := range []struct {
		seconds int
		want    time.Duration
	}{
		{0, cur},
		{-5, cur},
		{30, 30 * time.Second},
		{100000, maxHeartbeatInterval},
	} {
		require.Equal(t, tc.want, heartbeatInterval(tc.seconds, cur), tc.seconds)
	}
}

func TestMetadataAcks(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.enroll(t)
	var queued agent.MetadataEntry
	_, err := agent.Update(e.path, "metadata", func(c *agent.Config) error {
		var err error
		queued, err = c.SetMetadata(12, "rack 4", time.Now())
		return err
	})
	require.NoError(t, err)
	e.engine.SetAckMetadata(false)
	start(t, e.options())

	require.Eventually(t, func() bool { return len(e.engine.Heartbeats()) >= 2 }, wait, tick)
	sent := e.engine.Heartbeats()[0].Body.MetadataFields
	require.Equal(t, []proto.MetadataWrite{{FieldNumber: 12, Value: "rack 4", ModifiedAt: queued.ModifiedAt}}, sent)
	require.Len(t, e.config(t).PendingMetadata(), 1, "unacknowledged writes stay queued")

	e.engine.SetAckMetadata(true)
	require.Eventually(t, func() bool { return len(e.config(t).PendingMetadata()) == 0 }, wait, tick)
	c := e.config(t)
	require.Equal(t, agent.MetadataValue{Value: "rack 4", ModifiedAt: queued.ModifiedAt}, c.Metadata.Acknowledged[strconv.Itoa(12)])
	require.Equal(t, "run", c.Agent.State.Writer)
}

func TestDetailsOnStartAndChange(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.enroll(t)
	opts := e.options()
	// Far beyond the test, so "not posted" below cannot race a post due
	// to the maximum interval on a slow machine.
	opts.Timing.DetailsMaxInterval = time.Hour
	start(t, opts)

	require.Eventually(t, func() bool { return len(e.engine.Details()) == 1 }, wait, tick)
	first := e.engine.Details()[0]
	require.Equal(t, inventory.Hash(first.Inventory), first.Hash)
	require.Equal(t, "host-1", first.Inventory.OS.Hostname)

	// Unchanged inventory: checked again and again, not posted.
	seen := e.collector.count()
	require.Eventually(t, func() bool { return e.collector.count() >= seen+5 }, wait, tick)
	require.Len(t, e.engine.Details(), 1)

	e.collector.set("host-2")
	require.Eventually(t, func() bool { return len(e.engine.Details()) == 2 }, wait, tick)
	require.NotEqual(t, first.Hash, e.engine.Details()[1].Hash)
}

func TestDetailsMaxInterval(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.enroll(t)
	opts := e.options()
	opts.Timing.DetailsMaxInterval = time.Second
	start(t, opts)

	// Unchanged: the next post comes only after the maximum interval,
	// measured on the agent's own clock (collected_at is when it checked),
	// so a slow test goroutine cannot shorten it.
	require.Eventually(t, func() bool { return len(e.engine.Details()) == 2 }, wait, tick)
	d := e.engine.Details()
	require.GreaterOrEqual(t, d[1].CollectedAt.Sub(d[0].CollectedAt), opts.Timing.DetailsMaxInterval)
	require.Equal(t, d[0].Hash, d[1].Hash)
}

func TestDetailsWanted(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.enroll(t)
	start(t, e.options())
	require.Eventually(t, func() bool { return len(e.engine.Details()) == 1 }, wait, tick)
	e.engine.SetHeartbeatAnswer(0, true)
	require.Eventually(t, func() bool { return len(e.engine.Details()) >= 3 }, wait, tick)
	d := e.engine.Details()
	require.Equal(t, d[0].Hash, d[2].Hash, "posted on request although nothing changed")
}

// fakeRoles is a role health snapshot the test changes.
type fakeRoles struct {
	mu   sync.Mutex
	rows []proto.RoleHealth
}

// signalledRoles also says when a desired state changed (RoleChanges).
type signalledRoles struct {
	fakeRoles
	changed chan struct{}
}

func (f *signalledRoles) Changed() <-chan struct{} { return f.changed }

func (f *fakeRoles) Snapshot() []proto.RoleHealth {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.rows)
}

func (f *fakeRoles) set(rows ...proto.RoleHealth) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rows = rows
}

// An operator's stop or start (or a role turning unhealthy) reaches the
// Engine at the next check, although the inventory did not change; the
// check times alone, which move on at every check, post nothing.
func TestDetailsOnRoleChange(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.enroll(t)
	checked := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	shell := proto.RoleHealth{Key: "system:remote_shell", Desired: "running", Observed: proto.RoleHealthy, LastCheckedAt: checked}
	roles := &fakeRoles{}
	roles.set(shell)
	opts := e.options()
	opts.Roles = roles
	opts.Timing.DetailsMaxInterval = time.Hour
	start(t, opts)
	require.Eventually(t, func() bool { return len(e.engine.Details()) == 1 }, wait, tick)

	shell.LastCheckedAt = checked.Add(time.Minute)
	roles.set(shell)
	seen := e.collector.count()
	require.Eventually(t, func() bool { return e.collector.count() >= seen+5 }, wait, tick)
	require.Len(t, e.engine.Details(), 1, "a new check time alone is not a change")

	shell.Desired, shell.Observed = "stopped", proto.RoleStopped
	roles.set(shell)
	require.Eventually(t, func() bool { return len(e.engine.Details()) == 2 }, wait, tick)
	d := e.engine.Details()
	require.Equal(t, d[0].Hash, d[1].Hash, "the inventory did not change")
	require.Equal(t, []proto.RoleHealth{shell}, d[1].Roles)

	shell.Desired, shell.Observed = "running", proto.RoleHealthy
	roles.set(shell)
	require.Eventually(t, func() bool { return len(e.engine.Details()) == 3 }, wait, tick)
	require.Equal(t, "running", e.engine.Details()[2].Roles[0].Desired)
}

// An operator's stop or start is posted at once, not at the next check.
func TestDetailsAtOnceOnDesiredChange(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.enroll(t)
	shell := proto.RoleHealth{Key: "system:remote_shell", Desired: "running", Observed: proto.RoleHealthy}
	roles := &signalledRoles{changed: make(chan struct{}, 1)}
	roles.set(shell)
	opts := e.options()
	opts.Roles = roles
	opts.Timing.DetailsCheck = time.Hour
	opts.Timing.DetailsMaxInterval = time.Hour
	start(t, opts)
	require.Eventually(t, func() bool { return len(e.engine.Details()) == 1 }, wait, tick)

	shell.Desired, shell.Observed = "stopped", proto.RoleStopped
	roles.set(shell)
	roles.changed <- struct{}{}
	require.Eventually(t, func() bool { return len(e.engine.Details()) == 2 }, wait, tick)
	require.Equal(t, "stopped", e.engine.Details()[1].Roles[0].Desired)
}

func TestStaleTempCleanupAfterHeartbeat(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.enroll(t)
	dir := filepath.Dir(e.path)
	old, young := filepath.Join(dir, agent.FileName+".tmp-old"), filepath.Join(dir, agent.FileName+".tmp-young")
	for _, p := range []string{old, young} {
		require.NoError(t, os.WriteFile(p, []byte("{"), 0o600))
	}
	twoHoursAgo := time.Now().Add(-2 * time.Hour)
	require.NoError(t, os.Chtimes(old, twoHoursAgo, twoHoursAgo))
	e.engine.SetDeviceError(503, "unavailable") // no successful heartbeat yet
	start(t, e.options())

	refused := "refused " + proto.PathHeartbeat + " unavailable"
	require.Eventually(t, func() bool { return e.engine.Count(refused) >= 2 }, wait, tick)
	require.FileExists(t, old, "nothing is cleaned before a successful heartbeat")
	e.engine.SetDeviceError(0, "")
	require.Eventually(t, func() bool { _, err := os.Stat(old); return os.IsNotExist(err) }, wait, tick)
	require.GreaterOrEqual(t, e.engine.Count("heartbeat"), 1)
	require.FileExists(t, young)
}

func TestPurgeReturnsToEnrollment(t *testing.T) {
	t.Parallel()
	e := setup(t)
	res := e.enroll(t)
	first := e.config(t)
	a := start(t, e.options())
	nextConn(t, e.engine)
	require.True(t, a.Enrolled())

	e.engine.SetDecision(proto.ApprovalApproved, 3) // an admin approves after a while
	e.engine.Purge(res.Device.GUID)
	require.Eventually(t, func() bool { return len(e.engine.EnrollRequests()) == 2 }, wait, tick)
	reqs := e.engine.EnrollRequests()
	require.Equal(t, reqs[0].Request.PublicKey, reqs[1].Request.PublicKey, "the same key enrolls again")

	conn := nextConn(t, e.engine)
	require.Equal(t, res.Device.GUID, conn.Hello.GUID)
	again := e.config(t)
	require.True(t, again.HasTokens())
	require.NotEqual(t, first.RefreshToken, again.RefreshToken)
	require.Equal(t, first.Ed25519PrivateKey, again.Ed25519PrivateKey)
	require.True(t, a.Enrolled())
}

func TestQuarantineKeepsTokens(t *testing.T) {
	t.Parallel()
	e := setup(t)
	res := e.enroll(t)
	before := e.config(t)
	e.engine.Quarantine(res.Device.GUID)
	start(t, e.options())
	refused := "refused " + proto.PathHeartbeat + " " + proto.CodeDeviceQuarantined
	require.Eventually(t, func() bool { return e.engine.Count(refused) >= 3 }, wait, tick)
	after := e.config(t)
	require.Equal(t, before.RefreshToken, after.RefreshToken)
	require.Equal(t, 1, len(e.engine.EnrollRequests()), "no new enrollment")

	e.engine.Unquarantine(res.Device.GUID)
	require.Eventually(t, func() bool { return e.engine.Count("heartbeat") > 0 }, wait, tick)
}

func TestRunWithoutCodeOrTokens(t *testing.T) {
	t.Parallel()
	e := setup(t)
	_, err := e.store.Update(func(c *agent.Config) error { c.EnrollmentCode = ""; return nil })
	require.NoError(t, err)
	a, err := New(e.options())
	require.NoError(t, err)
	require.ErrorIs(t, a.Run(t.Context()), ErrNotEnrollable)
}

func TestRunEnrollsFirst(t *testing.T) {
	t.Parallel()
	e := setup(t)
	enrolled := make(chan string, 4)
	opts := e.options()
	opts.Hooks.Enrolled = func(guid string) { enrolled <- guid }
	start(t, opts)
	conn := nextConn(t, e.engine)
	require.Equal(t, conn.Hello.GUID, <-enrolled)
	require.Empty(t, enrolled)
	require.Equal(t, e.config(t).Agent.GUID, conn.Hello.GUID)
}

// Operator edits reach the agent: the heartbeat answer names the changed
// fields, the agent reads each and stores it as acknowledged, and holds the
// new revision only once every read succeeded.
func TestMetadataSyncReadsOperatorEdits(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.enroll(t)
	at := time.Now().UTC().Truncate(time.Microsecond)
	e.engine.SetMetadataValue(20, "from the console", at)
	e.engine.SetMetadataValue(21, "second", at)
	e.engine.SetMetadataReadFails(21, true)
	start(t, e.options())

	require.Eventually(t, func() bool {
		_, _, src := e.config(t).GetMetadata(20)
		return src == agent.MetadataAcknowledged
	}, wait, tick)
	v, got, _ := e.config(t).GetMetadata(20)
	require.Equal(t, "from the console", v)
	require.True(t, got.Equal(at))
	require.Zero(t, e.config(t).Metadata.EngineRevision, "a failed read keeps the old revision")
	for _, hb := range e.engine.Heartbeats() {
		require.Zero(t, hb.Body.MetadataRevision)
	}

	e.engine.SetMetadataReadFails(21, false)
	require.Eventually(t, func() bool { return e.config(t).Metadata.EngineRevision == 2 }, wait, tick)
	v, _, _ = e.config(t).GetMetadata(21)
	require.Equal(t, "second", v)
	require.Eventually(t, func() bool {
		hbs := e.engine.Heartbeats()
		return hbs[len(hbs)-1].Body.MetadataRevision == 2
	}, wait, tick, "later heartbeats send the revision held")
	reads := func() int {
		n := 0
		for _, ev := range e.engine.Events() {
			if strings.HasPrefix(ev, "metadata:") {
				n++
			}
		}
		return n
	}
	before, beats := reads(), len(e.engine.Heartbeats())
	require.Eventually(t, func() bool { return len(e.engine.Heartbeats()) >= beats+3 }, wait, tick)
	require.Equal(t, before, reads(), "caught up: no more reads")
}
