package watchdogs_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devicefilters"
	"github.com/cairn-rmm/cairn/internal/events"
	"github.com/cairn-rmm/cairn/internal/pgtest"
	"github.com/cairn-rmm/cairn/internal/watchdogs"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type recorder struct {
	mu     sync.Mutex
	events []events.Event
}

func (r *recorder) Publish(_ context.Context, e events.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
	return nil
}

func (r *recorder) count(typ string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.events {
		if e.Type == typ {
			n++
		}
	}
	return n
}

type fixture struct {
	store *db.Store
	svc   *watchdogs.Service
	clk   *clock
	bus   *recorder
	sites map[string]int64
}

func setup(t *testing.T) *fixture {
	t.Helper()
	store := pgtest.NewDB(t)
	f := &fixture{store: store, clk: &clock{t: time.Now().UTC().Truncate(time.Second)}, bus: &recorder{}, sites: map[string]int64{}}
	filters := devicefilters.New(store, devicefilters.Config{OnlineWindow: 90 * time.Second})
	f.svc = watchdogs.New(store, filters, f.bus, watchdogs.Config{OnlineWindow: 90 * time.Second, Now: f.clk.Now})
	for _, name := range []string{"alpha", "beta"} {
		s, err := store.SiteInsert(context.Background(), db.SiteInsertParams{Name: name, Slug: name})
		require.NoError(t, err)
		f.sites[name] = int64(s.ID)
	}
	return f
}

func (f *fixture) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	_, err := f.store.Pool.Exec(context.Background(), sql, args...)
	require.NoError(t, err)
}

// device inserts a device that sent a heartbeat with cpu and whose
// inventory holds services.
func (f *fixture) device(t *testing.T, guid, site string, cpu float64, services string) {
	t.Helper()
	_, err := f.store.DeviceInsert(context.Background(), db.DeviceInsertParams{Guid: cairn.DeviceGUID(guid), Hostname: "host-" + guid, SiteID: cairn.SiteID(f.sites[site])})
	require.NoError(t, err)
	f.heartbeat(t, guid, cpu)
	f.exec(t, `INSERT INTO device_inventory (device_guid, services) VALUES ($1, $2)`, guid, services)
}

func (f *fixture) heartbeat(t *testing.T, guid string, cpu float64) {
	t.Helper()
	m, err := json.Marshal(map[string]any{"cpu_percent": cpu, "memory_used_bytes": 1, "memory_total_bytes": 4,
		"uptime_seconds": 86400, "logged_in_users": []string{}})
	require.NoError(t, err)
	f.exec(t, `UPDATE devices SET last_seen = $2, metrics = $3 WHERE guid = $1`, guid, f.clk.Now(), string(m))
}

var admin = watchdogs.Editor{Username: "admin", Scope: cairn.AllSites}

func threshold(v float64) *float64 { return &v }

func cpuPolicy(name string) watchdogs.Policy {
	return watchdogs.Policy{Name: name, Severity: watchdogs.SeverityWarning, Enabled: true,
		Targets: watchdogs.Targets{Kind: watchdogs.TargetAll},
		Rules:   []watchdogs.Rule{{Subject: watchdogs.SubjectCPU, Operator: watchdogs.OpGT, Threshold: threshold(90)}}}
}

func (f *fixture) incidents(t *testing.T, scope cairn.SiteScope, states ...string) []watchdogs.Incident {
	t.Helper()
	q, err := f.svc.Incidents(context.Background(), scope, watchdogs.IncidentQuery{States: states, Limit: 100})
	require.NoError(t, err)
	return q.Incidents
}

func TestEvaluationOpensAndResolves(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	f.device(t, "hot", "alpha", 99, `[]`)
	f.device(t, "cool", "beta", 10, `[]`)
	w, err := f.svc.Create(ctx, admin, cpuPolicy("CPU"))
	require.NoError(t, err)

	res, err := f.svc.Evaluate(ctx, w.ID)
	require.NoError(t, err)
	require.Equal(t, 2, res.Evaluated)
	require.Len(t, res.Opened, 1)
	open := f.incidents(t, cairn.AllSites, watchdogs.StateOpen)
	require.Len(t, open, 1)
	require.Equal(t, cairn.DeviceGUID("hot"), open[0].DeviceGuid)
	require.Equal(t, "CPU on host-hot", open[0].Title)
	require.Equal(t, cairn.SiteID(f.sites["alpha"]), open[0].SiteID)
	require.JSONEq(t, `[{"rule":0,"subject":"cpu_percent","operator":"gt","value":99,"matched":true}]`, string(open[0].Sampled))
	require.Equal(t, 1, f.bus.count(watchdogs.TypeIncidentsChanged)-1, "one event for the save, one for the opening")

	// Evaluating again opens nothing more.
	res, err = f.svc.Evaluate(ctx, w.ID)
	require.NoError(t, err)
	require.Empty(t, res.Opened)

	// A scoped caller sees the incidents of their sites only.
	require.Empty(t, f.incidents(t, cairn.SiteScope{SiteIDs: []int64{f.sites["beta"]}}))

	f.heartbeat(t, "hot", 20)
	res, err = f.svc.Evaluate(ctx, w.ID)
	require.NoError(t, err)
	require.Equal(t, []int64{open[0].ID}, res.Resolved)
	resolved := f.incidents(t, cairn.AllSites, watchdogs.StateResolved)
	require.Len(t, resolved, 1)
	require.Equal(t, "condition_cleared", *resolved[0].ResolveReason)

	// It flares up again: a new incident opens (no cooldown set).
	f.heartbeat(t, "hot", 97)
	res, err = f.svc.Evaluate(ctx, w.ID)
	require.NoError(t, err)
	require.Len(t, res.Opened, 1)
	require.NotEqual(t, open[0].ID, res.Opened[0])
}

// TestOneActiveIncidentUnderConcurrentEvaluators races evaluators over one
// batch: the partial unique index leaves exactly one active incident, and
// refuses a second one written behind the evaluator's back.
func TestOneActiveIncidentUnderConcurrentEvaluators(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	for _, g := range []string{"a", "b", "c"} {
		f.device(t, g, "alpha", 99, `[]`)
	}
	w, err := f.svc.Create(ctx, admin, cpuPolicy("CPU"))
	require.NoError(t, err)

	var opened atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := f.svc.Evaluate(ctx, w.ID)
			errs <- err
			opened.Add(int64(len(res.Opened)))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.EqualValues(t, 3, opened.Load(), "each device's incident opened once")
	require.Len(t, f.incidents(t, cairn.AllSites), 3)

	// The database itself refuses a second active incident.
	_, err = f.store.Pool.Exec(ctx, `INSERT INTO watchdog_incidents (watchdog_id, device_guid, site_id, severity, title)
		VALUES ($1, 'a', $2, 'warning', 'dup')`, w.ID, f.sites["alpha"])
	require.True(t, db.IsUniqueViolation(err, "watchdog_incidents_active_idx"), "%v", err)
	// A resolved one beside the active one is fine.
	f.exec(t, `INSERT INTO watchdog_incidents (watchdog_id, device_guid, site_id, severity, title, state, resolved_at)
		VALUES ($1, 'a', $2, 'warning', 'old', 'Resolved', now())`, w.ID, f.sites["alpha"])
}

func TestSuppressionNeedsAReason(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	f.device(t, "hot", "alpha", 99, `[]`)
	w, err := f.svc.Create(ctx, admin, cpuPolicy("CPU"))
	require.NoError(t, err)
	res, err := f.svc.Evaluate(ctx, w.ID)
	require.NoError(t, err)
	id := res.Opened[0]

	_, err = f.svc.SetState(ctx, cairn.AllSites, "op", id, watchdogs.StateSuppressed, "   ")
	require.True(t, cairn.IsCode(err, cairn.ECodeValidation), "%v", err)
	inc, err := f.svc.GetIncident(ctx, id)
	require.NoError(t, err)
	require.Equal(t, watchdogs.StateOpen, inc.State, "a blank reason leaves it Open")

	// Out of scope is not found.
	_, err = f.svc.SetState(ctx, cairn.SiteScope{SiteIDs: []int64{f.sites["beta"]}}, "op", id, watchdogs.StateSuppressed, "noise")
	require.True(t, cairn.IsCode(err, cairn.ECodeNotFound), "%v", err)

	inc, err = f.svc.SetState(ctx, cairn.AllSites, "op", id, watchdogs.StateSuppressed, "known issue")
	require.NoError(t, err)
	require.Equal(t, watchdogs.StateSuppressed, inc.State)
	require.Equal(t, "known issue", *inc.SuppressReason)
	inc, err = f.svc.SetState(ctx, cairn.AllSites, "op", id, watchdogs.StateOpen, "")
	require.NoError(t, err)
	require.Equal(t, watchdogs.StateOpen, inc.State)
	inc, err = f.svc.Acknowledge(ctx, cairn.AllSites, "op", id)
	require.NoError(t, err)
	require.Equal(t, watchdogs.StateAcknowledged, inc.State)
	require.Equal(t, "op", *inc.AcknowledgedBy)
	_, err = f.svc.Acknowledge(ctx, cairn.AllSites, "op", id)
	require.True(t, cairn.IsCode(err, watchdogs.ECodeIncidentState), "%v", err)

	// The evaluator still resolves an acknowledged incident.
	f.heartbeat(t, "hot", 1)
	res, err = f.svc.Evaluate(ctx, w.ID)
	require.NoError(t, err)
	require.Equal(t, []int64{id}, res.Resolved)
}

func TestOverrideMutesAndSuppresses(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	f.device(t, "hot", "alpha", 99, `[]`)
	w, err := f.svc.Create(ctx, admin, cpuPolicy("CPU"))
	require.NoError(t, err)
	res, err := f.svc.Evaluate(ctx, w.ID)
	require.NoError(t, err)
	id := res.Opened[0]

	err = f.svc.SetOverride(ctx, cairn.AllSites, "op", "hot", w.ID, true, "")
	require.True(t, cairn.IsCode(err, cairn.ECodeValidation), "%v", err)
	require.NoError(t, f.svc.SetOverride(ctx, cairn.AllSites, "op", "hot", w.ID, true, "replacing the fan"))
	inc, err := f.svc.GetIncident(ctx, id)
	require.NoError(t, err)
	require.Equal(t, watchdogs.StateSuppressed, inc.State)
	require.Equal(t, "replacing the fan", *inc.SuppressReason)
	require.Positive(t, f.bus.count(watchdogs.TypeDeviceWatchdogsChanged))

	tab, err := f.svc.DeviceTab(ctx, cairn.AllSites, "hot")
	require.NoError(t, err)
	require.Len(t, tab, 1)
	require.True(t, tab[0].Targeted)
	require.Equal(t, "replacing the fan", tab[0].Override.Reason)

	// Muted: once resolved, no new incident opens.
	f.heartbeat(t, "hot", 1)
	_, err = f.svc.Evaluate(ctx, w.ID)
	require.NoError(t, err)
	f.heartbeat(t, "hot", 99)
	res, err = f.svc.Evaluate(ctx, w.ID)
	require.NoError(t, err)
	require.Empty(t, res.Opened)

	_, err = f.svc.DeviceTab(ctx, cairn.SiteScope{SiteIDs: []int64{f.sites["beta"]}}, "hot")
	require.True(t, cairn.IsCode(err, cairn.ECodeNotFound), "%v", err)
}

func TestTargetsAndDisable(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	f.device(t, "a1", "alpha", 99, `[{"name":"nginx","state":"stopped"}]`)
	f.device(t, "b1", "beta", 99, `[{"name":"nginx","state":"running"}]`)

	p := watchdogs.Policy{Name: "nginx", Severity: watchdogs.SeverityCritical, Enabled: true,
		SiteIDs: []int64{f.sites["alpha"]}, Targets: watchdogs.Targets{Kind: watchdogs.TargetAll},
		Rules: []watchdogs.Rule{{Subject: watchdogs.SubjectService, Operator: watchdogs.OpNotRunning, Target: "nginx"}}}
	// A scoped editor cannot save a policy for another site.
	_, err := f.svc.Create(ctx, watchdogs.Editor{Username: "op", Scope: cairn.SiteScope{SiteIDs: []int64{f.sites["beta"]}}}, p)
	require.True(t, cairn.IsCode(err, cairn.ECodeValidation), "%v", err)
	w, err := f.svc.Create(ctx, admin, p)
	require.NoError(t, err)
	// A beta-only operator does not see the alpha watchdog.
	_, err = f.svc.Get(ctx, cairn.SiteScope{SiteIDs: []int64{f.sites["beta"]}}, w.ID)
	require.True(t, cairn.IsCode(err, cairn.ECodeNotFound), "%v", err)

	res, err := f.svc.Evaluate(ctx, w.ID)
	require.NoError(t, err)
	require.Equal(t, 1, res.Evaluated, "beta is out of the watchdog's scope")
	require.Len(t, res.Opened, 1)

	// Explicit targets: b1 only; a1's incident resolves as target_gone.
	p.SiteIDs = nil
	p.Targets = watchdogs.Targets{Kind: watchdogs.TargetDevices, DeviceGUIDs: []string{"b1"}}
	_, _, err = f.svc.Update(ctx, admin, w.ID, p)
	require.NoError(t, err)
	res, err = f.svc.Evaluate(ctx, w.ID)
	require.NoError(t, err)
	require.Len(t, res.Resolved, 1)
	inc := f.incidents(t, cairn.AllSites, watchdogs.StateResolved)
	require.Equal(t, "target_gone", *inc[0].ResolveReason)

	// Disabling resolves every active incident.
	p.Targets = watchdogs.Targets{Kind: watchdogs.TargetAll}
	_, _, err = f.svc.Update(ctx, admin, w.ID, p)
	require.NoError(t, err)
	res, err = f.svc.Evaluate(ctx, w.ID)
	require.NoError(t, err)
	require.Len(t, res.Opened, 1)
	p.Enabled = false
	_, _, err = f.svc.Update(ctx, admin, w.ID, p)
	require.NoError(t, err)
	require.Empty(t, f.incidents(t, cairn.AllSites, watchdogs.StateOpen))
	disabled := f.incidents(t, cairn.AllSites, watchdogs.StateResolved)
	require.Equal(t, "policy_disabled", *disabled[0].ResolveReason)

	q, err := f.svc.Incidents(ctx, cairn.AllSites, watchdogs.IncidentQuery{Limit: 10})
	require.NoError(t, err)
	require.Equal(t, []watchdogs.QueueCount{{State: "Resolved", Severity: "critical", Count: 2}}, q.Counts)

	// Deleting removes its runtime state.
	ended, err := f.svc.Delete(ctx, admin, w.ID)
	require.NoError(t, err)
	require.Empty(t, ended, "its incidents were resolved already")
	require.Empty(t, f.incidents(t, cairn.AllSites))
}

func TestOfflineIncidentPurgedOnCheckIn(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	f.device(t, "d", "alpha", 1, `[]`)
	w, err := f.svc.Create(ctx, admin, watchdogs.Policy{Name: "offline", Severity: watchdogs.SeverityInfo, Enabled: true,
		Targets: watchdogs.Targets{Kind: watchdogs.TargetAll},
		Rules:   []watchdogs.Rule{{Subject: watchdogs.SubjectOffline, Operator: watchdogs.OpIs}}})
	require.NoError(t, err)
	f.clk.Add(10 * time.Minute)
	res, err := f.svc.Evaluate(ctx, w.ID)
	require.NoError(t, err)
	require.Len(t, res.Opened, 1)
	f.heartbeat(t, "d", 1)
	res, err = f.svc.Evaluate(ctx, w.ID)
	require.NoError(t, err)
	require.Equal(t, res.Opened[:0], res.Opened)
	require.Len(t, res.Purged, 1)
	require.Empty(t, f.incidents(t, cairn.AllSites), "purged, not resolved")
}

func TestEvaluateDueFollowsTheInterval(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	f.device(t, "d", "alpha", 5, `[]`)
	_, err := f.svc.Create(ctx, admin, cpuPolicy("every minute"))
	require.NoError(t, err)
	slow := cpuPolicy("every five minutes")
	slow.Noise.IntervalSeconds = 300
	_, err = f.svc.Create(ctx, admin, slow)
	require.NoError(t, err)
	off := cpuPolicy("off")
	off.Enabled = false
	_, err = f.svc.Create(ctx, admin, off)
	require.NoError(t, err)

	for _, step := range []struct {
		after time.Duration
		want  int
	}{{0, 2}, {30 * time.Second, 0}, {31 * time.Second, 1}, {4 * time.Minute, 2}} {
		f.clk.Add(step.after)
		res, err := f.svc.EvaluateDue(ctx)
		require.NoError(t, err)
		require.Equal(t, step.want, res.Evaluated, "after %s", step.after)
	}
}

// TestEvaluationWritesOnlyChangedState: a device whose evaluation state
// does not change has nothing written (10,000 devices times 20 watchdogs
// every minute were 200,000 writes a minute, docs/benchmarks.md
// "Watchdogs"), while what a window or a count needs is kept and honoured.
func TestEvaluationWritesOnlyChangedState(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	for _, g := range []string{"q1", "q2", "q3"} {
		f.device(t, g, "alpha", 10, `[]`)
	}
	f.device(t, "warm", "alpha", 95, `[]`)
	p := cpuPolicy("CPU for a minute")
	p.Rules[0].ForSeconds = 60
	w, err := f.svc.Create(ctx, admin, p)
	require.NoError(t, err)
	rows := func() map[string]int {
		r, err := f.store.Pool.Query(ctx, `SELECT device_guid, consecutive FROM watchdog_device_state WHERE watchdog_id = $1`, w.ID)
		require.NoError(t, err)
		defer r.Close()
		out := map[string]int{}
		for r.Next() {
			var g string
			var n int
			require.NoError(t, r.Scan(&g, &n))
			out[g] = n
		}
		return out
	}
	stamp := func(guid string) time.Time {
		var at time.Time
		require.NoError(t, f.store.Pool.QueryRow(ctx, `SELECT evaluated_at FROM watchdog_device_state WHERE watchdog_id = $1 AND device_guid = $2`,
			w.ID, guid).Scan(&at))
		return at
	}

	_, err = f.svc.Evaluate(ctx, w.ID)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"warm": 0}, rows(), "only the device whose window started has a state")
	started := stamp("warm")

	// Thirty seconds on: nothing changed, nothing written; the window
	// still counts from its start.
	f.clk.Add(30 * time.Second)
	res, err := f.svc.Evaluate(ctx, w.ID)
	require.NoError(t, err)
	require.Equal(t, 4, res.Evaluated)
	require.Empty(t, res.Opened)
	require.Equal(t, map[string]int{"warm": 0}, rows())
	require.True(t, stamp("warm").Equal(started), "an unchanged state is not written again")

	f.clk.Add(31 * time.Second)
	f.heartbeat(t, "warm", 96)
	res, err = f.svc.Evaluate(ctx, w.ID)
	require.NoError(t, err)
	require.Len(t, res.Opened, 1, "the window, kept unwritten, opened the incident on time")

	// A quiet device that warms up gets its state; cooling down again
	// writes the cleared one.
	f.heartbeat(t, "q1", 99)
	_, err = f.svc.Evaluate(ctx, w.ID)
	require.NoError(t, err)
	require.Contains(t, rows(), "q1")
	require.NotContains(t, rows(), "q2")
}

// TestEvaluateDueIsNotLateByAMinute: the maintenance job runs once a
// minute; a pass that comes a moment before a watchdog's interval is
// over (its previous pass started a little later) still evaluates it,
// and a pass marks it evaluated at the pass's time, however long the
// evaluation took, so a one-minute watchdog is evaluated every minute
// rather than every other one.
func TestEvaluateDueIsNotLateByAMinute(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	f.device(t, "d", "alpha", 5, `[]`)
	w, err := f.svc.Create(ctx, admin, cpuPolicy("every minute"))
	require.NoError(t, err)
	res, err := f.svc.EvaluateDue(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, res.Evaluated)
	var marked time.Time
	require.NoError(t, f.store.Pool.QueryRow(ctx, `SELECT evaluated_at FROM watchdogs WHERE id = $1`, w.ID).Scan(&marked))
	require.True(t, marked.Equal(f.clk.Now()), "marked at the pass's time")

	for i := range 3 {
		f.clk.Add(58 * time.Second)
		res, err := f.svc.EvaluateDue(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, res.Evaluated, "pass %d, 58 s after the previous one", i+1)
	}
	f.clk.Add(20 * time.Second)
	res, err = f.svc.EvaluateDue(ctx)
	require.NoError(t, err)
	require.Zero(t, res.Evaluated, "not twice a minute")
}

// gate is a Filters whose MatchSaved, once on, returns only when two
// calls are in it at once (or their context ends).
type gate struct {
	mu  sync.Mutex
	on  bool
	in  int
	all chan struct{}
}

func (g *gate) MatchSaved(ctx context.Context, _ cairn.SiteScope, _ []int64) ([]devicefilters.DeviceRef, error) {
	g.mu.Lock()
	if !g.on {
		g.mu.Unlock()
		return nil, nil
	}
	g.in++
	if g.in == 2 {
		close(g.all)
	}
	g.mu.Unlock()
	select {
	case <-g.all:
		return nil, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestEvaluateDueEvaluatesWatchdogsSideBySide: a pass evaluates its due
// watchdogs several at a time (one after another, 20 over 10,000 devices
// outlasted the minute between passes, docs/benchmarks.md "Watchdogs"):
// here each watchdog's targets resolve only once another's are being
// resolved too.
func TestEvaluateDueEvaluatesWatchdogsSideBySide(t *testing.T) {
	t.Parallel()
	store := pgtest.NewDB(t)
	clk := &clock{t: time.Now().UTC().Truncate(time.Second)}
	g := &gate{all: make(chan struct{})}
	svc := watchdogs.New(store, g, &recorder{}, watchdogs.Config{OnlineWindow: 90 * time.Second, Now: clk.Now})
	ctx := t.Context()
	for _, name := range []string{"one", "two"} {
		p := cpuPolicy(name)
		p.Targets = watchdogs.Targets{Kind: watchdogs.TargetFilters, FilterIDs: []int64{1}}
		_, err := svc.Create(ctx, admin, p)
		require.NoError(t, err)
	}
	g.mu.Lock()
	g.on = true
	g.mu.Unlock()
	_, err := svc.EvaluateDue(ctx)
	require.NoError(t, err)
	var n int
	require.NoError(t, store.Pool.QueryRow(ctx, `SELECT count(*) FROM watchdogs WHERE evaluated_at = $1`, clk.Now()).Scan(&n))
	require.Equal(t, 2, n, "both evaluated in the pass")
}
