package watchdogs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devicefilters"
	"github.com/cairn-rmm/cairn/internal/events"
	"github.com/cairn-rmm/cairn/internal/notify"
)

// Error codes (declared in engine/capability_watchdogs.go).
const (
	// ECodeIncidentState: the incident is not in a state the transition
	// starts from (acknowledging a resolved incident).
	ECodeIncidentState = "incident_state_conflict"
)

// Event types (SPEC "Operator event stream").
const (
	TypeIncidentsChanged       = "watchdog_incidents_changed"
	TypeDeviceWatchdogsChanged = "device_watchdogs_changed"
	// TypeNotification is the toast (api.TypeNotification).
	TypeNotification = "service_notification"
)

// BatchSize is how many devices one evaluation transaction covers.
const BatchSize = 500

// Publisher sends operator events (events.Bus).
type Publisher interface {
	Publish(ctx context.Context, e events.Event) error
}

// Filters resolves saved device filters (devicefilters.Service).
type Filters interface {
	MatchSaved(ctx context.Context, scope cairn.SiteScope, ids []int64) ([]devicefilters.DeviceRef, error)
}

// Config are the Service's settings.
type Config struct {
	// OnlineWindow is how long after its last heartbeat a device is online.
	OnlineWindow time.Duration
	Now          func() time.Time
	Log          *slog.Logger
	// Assemblies checks a run_assembly action's assembly when a watchdog
	// is saved (automation.Service); nil refuses such actions.
	Assemblies Assemblies
	// Cipher seals notification channels' secrets.
	Cipher Cipher
}

// Assemblies resolves an assembly version for a run_assembly action.
type Assemblies interface {
	// ScriptSHA256 is the body hash of the script assembly's version
	// (0: current), or not_found / validation_failed.
	ScriptSHA256(ctx context.Context, id int64, version int) (string, error)
}

// Service is watchdogs, their evaluation, incidents and overrides.
type Service struct {
	store   *db.Store
	filters Filters
	bus     Publisher
	cfg     Config
}

// New returns the service.
func New(store *db.Store, filters Filters, bus Publisher, cfg Config) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Service{store: store, filters: filters, bus: bus, cfg: cfg}
}

// Watchdog is a saved policy.
type Watchdog struct {
	ID int64
	Policy
	Revision    int64
	EvaluatedAt *time.Time
	CreatedBy   string
	CreatedAt   time.Time
	UpdatedBy   string
	UpdatedAt   time.Time
}

// Scope is the sites the watchdog may apply to.
func (w Watchdog) Scope() cairn.SiteScope { return cairn.ScopeColumn(w.SiteIDs) }

func watchdogFrom(r db.Watchdog) (Watchdog, error) {
	var doc document
	if err := json.Unmarshal(r.Policy, &doc); err != nil {
		return Watchdog{}, fmt.Errorf("watchdog %d policy: %w", r.ID, err)
	}
	return Watchdog{ID: r.ID, Policy: Policy{Name: r.Name, Description: r.Description, Severity: r.Severity, Enabled: r.Enabled,
		SiteIDs: r.SiteIds, Targets: doc.Targets, Match: doc.Match, Rules: doc.Rules, Noise: doc.Noise, Actions: doc.Actions},
		Revision: r.Revision, EvaluatedAt: r.EvaluatedAt, CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt,
		UpdatedBy: r.UpdatedBy, UpdatedAt: r.UpdatedAt}, nil
}

func notFound(err error) error { return db.NotFound(err, "watchdog not found") }

func conflict(err error) error {
	if db.IsUniqueViolation(err, "watchdogs_name_idx") {
		return cairn.Invalid("name", "is used by another watchdog")
	}
	return err
}

// Editor is who saves: their name and sites.
type Editor struct {
	Username string
	Scope    cairn.SiteScope
}

// checkFor validates p for an editor: the scope must lie inside theirs
// (a site outside it is named as unknown), and explicit devices inside
// the policy's scope.
func (s *Service) checkFor(ctx context.Context, by Editor, p Policy) (Policy, error) {
	p, err := p.check()
	if err != nil {
		return p, err
	}
	if !by.Scope.Covers(cairn.ScopeColumn(p.SiteIDs)) {
		if p.SiteIDs == nil {
			return p, cairn.Invalid("site_ids", "must name your sites (only an all-sites operator may cover every site)")
		}
		return p, cairn.Invalid("site_ids", "names a site that does not exist")
	}
	if p.SiteIDs != nil {
		n, err := s.store.SiteCountByIDs(ctx, p.SiteIDs)
		if err != nil {
			return p, err
		}
		if int(n) != len(p.SiteIDs) {
			return p, cairn.Invalid("site_ids", "names a site that does not exist")
		}
	}
	for i, a := range p.Actions {
		if a.Type != ActionRunAssembly {
			continue
		}
		field := fmt.Sprintf("actions[%d].assembly_id", i)
		if s.cfg.Assemblies == nil {
			return p, cairn.Invalid(field, "assemblies are not available")
		}
		sum, err := s.cfg.Assemblies.ScriptSHA256(ctx, a.AssemblyID, a.AssemblyVersion)
		if cairn.IsCode(err, cairn.ECodeNotFound) || cairn.IsCode(err, cairn.ECodeValidation) {
			return p, cairn.Invalid(field, "names no script assembly (or version) that exists")
		} else if err != nil {
			return p, err
		}
		p.Actions[i].AssemblySHA256 = sum
	}
	switch p.Targets.Kind {
	case TargetDevices:
		rows, err := s.store.WatchdogTargetsExplicit(ctx, db.WatchdogTargetsExplicitParams{Guids: p.Targets.DeviceGUIDs, SiteIds: p.SiteIDs})
		if err != nil {
			return p, err
		}
		if len(rows) != len(p.Targets.DeviceGUIDs) {
			return p, cairn.Invalid("targets.device_guids", "names a device that does not exist in the watchdog's sites")
		}
	case TargetFilters:
		if _, err := s.filters.MatchSaved(ctx, cairn.ScopeColumn(p.SiteIDs), p.Targets.FilterIDs); err != nil {
			if cairn.IsCode(err, cairn.ECodeNotFound) {
				return p, cairn.Invalid("targets.filter_ids", "names a filter that does not exist")
			}
			return p, err
		}
	}
	return p, nil
}

func (p Policy) document() ([]byte, error) {
	return json.Marshal(document{Targets: p.Targets, Match: p.Match, Rules: p.Rules, Noise: p.Noise, Actions: p.Actions})
}

// Create saves a new watchdog.
func (s *Service) Create(ctx context.Context, by Editor, in Policy) (Watchdog, error) {
	p, err := s.checkFor(ctx, by, in)
	if err != nil {
		return Watchdog{}, err
	}
	doc, err := p.document()
	if err != nil {
		return Watchdog{}, err
	}
	r, err := s.store.WatchdogInsert(ctx, db.WatchdogInsertParams{Name: p.Name, Description: p.Description, Severity: p.Severity,
		Enabled: p.Enabled, SiteIds: p.SiteIDs, Policy: doc, Actor: by.Username})
	if err != nil {
		return Watchdog{}, conflict(err)
	}
	s.publish(ctx, TypeIncidentsChanged, 0, map[string]any{"watchdog_id": r.ID, "change": "saved"})
	return watchdogFrom(r)
}

// Update saves a watchdog's new policy. The evaluator's memory of it is
// dropped (rules may have changed); disabling it resolves its incidents,
// whose IDs are returned (their workflows are to end).
func (s *Service) Update(ctx context.Context, by Editor, id int64, in Policy) (Watchdog, []int64, error) {
	// A watchdog outside the editor's sites is not found, whatever the body.
	if _, err := s.Get(ctx, by.Scope, id); err != nil {
		return Watchdog{}, nil, err
	}
	p, err := s.checkFor(ctx, by, in)
	if err != nil {
		return Watchdog{}, nil, err
	}
	doc, err := p.document()
	if err != nil {
		return Watchdog{}, nil, err
	}
	var out db.Watchdog
	var resolved []db.WatchdogIncident
	err = s.store.InTx(ctx, func(q *db.Queries) error {
		cur, err := q.WatchdogGetForUpdate(ctx, id)
		if err != nil {
			return notFound(err)
		}
		if !by.Scope.Covers(cairn.ScopeColumn(cur.SiteIds)) {
			return cairn.Errorf(cairn.ECodeNotFound, "watchdog not found")
		}
		if out, err = q.WatchdogUpdate(ctx, db.WatchdogUpdateParams{ID: id, Name: p.Name, Description: p.Description,
			Severity: p.Severity, Enabled: p.Enabled, SiteIds: p.SiteIDs, Policy: doc, Actor: by.Username}); err != nil {
			return conflict(err)
		}
		if err := q.WatchdogStatesClear(ctx, id); err != nil {
			return err
		}
		if !p.Enabled {
			resolved, err = q.WatchdogIncidentsResolveOf(ctx, db.WatchdogIncidentsResolveOfParams{WatchdogID: id,
				Now: s.cfg.Now(), Reason: ReasonDisabled})
		}
		return err
	})
	if err != nil {
		return Watchdog{}, nil, err
	}
	s.publish(ctx, TypeIncidentsChanged, 0, map[string]any{"watchdog_id": id, "change": "saved"})
	ended := make([]int64, 0, len(resolved))
	for _, r := range resolved {
		s.incidentChanged(ctx, r, "resolved")
		ended = append(ended, r.ID)
	}
	w, err := watchdogFrom(out)
	return w, ended, err
}

// Get is a watchdog the caller's sites cover.
func (s *Service) Get(ctx context.Context, scope cairn.SiteScope, id int64) (Watchdog, error) {
	r, err := s.store.WatchdogGet(ctx, id)
	if err != nil {
		return Watchdog{}, notFound(err)
	}
	if !scope.Covers(cairn.ScopeColumn(r.SiteIds)) {
		return Watchdog{}, cairn.Errorf(cairn.ECodeNotFound, "watchdog not found")
	}
	return watchdogFrom(r)
}

// List is every watchdog the caller's sites cover.
func (s *Service) List(ctx context.Context, scope cairn.SiteScope) ([]Watchdog, error) {
	rows, err := s.store.WatchdogList(ctx)
	if err != nil {
		return nil, err
	}
	out := []Watchdog{}
	for _, r := range rows {
		if !scope.Covers(cairn.ScopeColumn(r.SiteIds)) {
			continue
		}
		w, err := watchdogFrom(r)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

// Delete removes a watchdog with its runtime state: evaluation memory,
// incidents and overrides go with it. The IDs of the incidents that were
// active are returned (their workflows are to end).
func (s *Service) Delete(ctx context.Context, by Editor, id int64) ([]int64, error) {
	if _, err := s.Get(ctx, by.Scope, id); err != nil {
		return nil, err
	}
	var ended []int64
	err := s.store.InTx(ctx, func(q *db.Queries) error {
		actives, err := q.WatchdogIncidentsActiveOf(ctx, id)
		if err != nil {
			return err
		}
		ended = ended[:0]
		for _, a := range actives {
			ended = append(ended, a.ID)
		}
		return q.WatchdogDelete(ctx, id)
	})
	if err != nil {
		return nil, err
	}
	s.publish(ctx, TypeIncidentsChanged, 0, map[string]any{"watchdog_id": id, "change": "deleted"})
	return ended, nil
}

// targets are the devices a watchdog applies to now, in GUID order.
func (s *Service) targets(ctx context.Context, w Watchdog) ([]string, error) {
	switch w.Targets.Kind {
	case TargetDevices:
		rows, err := s.store.WatchdogTargetsExplicit(ctx, db.WatchdogTargetsExplicitParams{Guids: w.Targets.DeviceGUIDs, SiteIds: w.SiteIDs})
		if err != nil {
			return nil, err
		}
		out := make([]string, len(rows))
		for i, r := range rows {
			out[i] = string(r.Guid)
		}
		return out, nil
	case TargetFilters:
		refs, err := s.filters.MatchSaved(ctx, w.Scope(), w.Targets.FilterIDs)
		if cairn.IsCode(err, cairn.ECodeNotFound) {
			// A filter deleted since the save targets nothing.
			return []string{}, nil
		}
		if err != nil {
			return nil, err
		}
		out := make([]string, 0, len(refs))
		for _, r := range refs {
			out = append(out, string(r.GUID))
		}
		return out, nil
	}
	var out []string
	after := ""
	for {
		rows, err := s.store.WatchdogTargetsAll(ctx, db.WatchdogTargetsAllParams{SiteIds: w.SiteIDs, After: after, MaxRows: 5000})
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			out = append(out, string(r.Guid))
		}
		if len(rows) < 5000 {
			return out, nil
		}
		after = string(rows[len(rows)-1].Guid)
	}
}

// Result is what one evaluation changed.
type Result struct {
	Evaluated int
	// Opened are the incidents it opened, whose actions are to run.
	Opened   []int64
	Resolved []int64
	Purged   []int64
}

// DueSlack is how early a watchdog counts as due: the maintenance job
// runs once a minute, and a watchdog due a moment after a run would
// otherwise wait for the next, evaluated every two minutes instead of
// every one (docs/benchmarks.md "Watchdogs").
const DueSlack = 10 * time.Second

// DueParallel is how many watchdogs one pass evaluates at once. One after
// another, 20 watchdogs over 10,000 devices took longer than the minute
// between passes on a loaded 2-core machine, so the schedule skipped
// every other pass; each watchdog locks only its own row and state.
const DueParallel = 4

// EvaluateDue evaluates every enabled watchdog whose interval has passed
// (or passes within DueSlack), DueParallel at a time. Each is marked
// evaluated at the time of this pass, not when its turn in the pass
// ended, so the next pass finds it due however long the pass took.
func (s *Service) EvaluateDue(ctx context.Context) (Result, error) {
	now := s.cfg.Now()
	rows, err := s.store.WatchdogListDue(ctx, now.Add(DueSlack))
	if err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu    sync.Mutex
		total Result
		first error
		wg    sync.WaitGroup
	)
	slots := make(chan struct{}, DueParallel)
	for _, r := range rows {
		slots <- struct{}{}
		if ctx.Err() != nil {
			<-slots
			break
		}
		wg.Add(1)
		go func(id int64) {
			defer func() { <-slots; wg.Done() }()
			res, err := s.evaluate(ctx, id, now)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && !cairn.IsCode(err, cairn.ECodeNotFound) {
				if first == nil {
					first = err
					cancel()
				}
				return
			}
			total.Evaluated += res.Evaluated
			total.Opened = append(total.Opened, res.Opened...)
			total.Resolved = append(total.Resolved, res.Resolved...)
			total.Purged = append(total.Purged, res.Purged...)
		}(r.ID)
	}
	wg.Wait()
	return total, first
}

// Evaluate evaluates one watchdog on every device it targets, BatchSize
// devices per transaction, and resolves the incidents of devices it no
// longer targets. A disabled watchdog evaluates nothing.
func (s *Service) Evaluate(ctx context.Context, id int64) (Result, error) {
	return s.evaluate(ctx, id, s.cfg.Now())
}

// evaluate is Evaluate, marking the watchdog evaluated at started.
func (s *Service) evaluate(ctx context.Context, id int64, started time.Time) (Result, error) {
	r, err := s.store.WatchdogGet(ctx, id)
	if err != nil {
		return Result{}, notFound(err)
	}
	w, err := watchdogFrom(r)
	if err != nil {
		return Result{}, err
	}
	var res Result
	if !w.Enabled {
		return res, nil
	}
	guids, err := s.targets(ctx, w)
	if err != nil {
		return res, err
	}
	for batch := range slices.Chunk(guids, BatchSize) {
		if err := s.evaluateBatch(ctx, w, batch, &res); err != nil {
			return res, err
		}
	}
	if err := s.resolveGone(ctx, w, guids, &res); err != nil {
		return res, err
	}
	err = s.store.WatchdogMarkEvaluated(ctx, db.WatchdogMarkEvaluatedParams{ID: w.ID, Revision: w.Revision, Now: started})
	return res, err
}

// evaluateBatch evaluates w on guids in one transaction: state rows and
// active incidents are locked, so two evaluators of one batch take turns,
// and the partial unique index refuses a second active incident anyway.
func (s *Service) evaluateBatch(ctx context.Context, w Watchdog, guids []string, res *Result) error {
	now := s.cfg.Now()
	var changed []db.WatchdogIncident
	var changes []string
	var local Result
	err := s.store.InTx(ctx, func(q *db.Queries) error {
		changed, changes, local = nil, nil, Result{}
		// The watchdog's row is read again and locked: a save that
		// committed since the caller read it wins, and evaluators of one
		// watchdog take turns (racing ones deadlocked on each other's
		// state rows); the partial unique index stays the guarantee.
		cur, err := q.WatchdogGetForUpdate(ctx, w.ID)
		if err != nil || cur.Revision != w.Revision || !cur.Enabled {
			return db.NotFound(err, "watchdog not found")
		}
		snaps, err := q.WatchdogDeviceSnapshots(ctx, snapshotParams(w.Policy, guids))
		if err != nil {
			return err
		}
		states, err := q.WatchdogStatesGet(ctx, db.WatchdogStatesGetParams{WatchdogID: w.ID, Guids: guids})
		if err != nil {
			return err
		}
		byGUID := make(map[cairn.DeviceGUID]db.WatchdogDeviceState, len(states))
		for _, st := range states {
			byGUID[st.DeviceGuid] = st
		}
		actives, err := q.WatchdogIncidentsActiveOf(ctx, w.ID)
		if err != nil {
			return err
		}
		activeOf := make(map[cairn.DeviceGUID]db.WatchdogIncident, len(actives))
		for _, a := range actives {
			activeOf[a.DeviceGuid] = a
		}
		muted, err := q.WatchdogOverridesOf(ctx, db.WatchdogOverridesOfParams{WatchdogID: w.ID, Guids: guids})
		if err != nil {
			return err
		}
		for _, row := range snaps {
			snap, err := snapshotOf(string(row.Guid), row.Hostname, int64(row.SiteID), row.LastSeen, row.Metrics, row.Hardware, row.Services,
				row.Processes, row.Software, row.Roles, row.AgentVersion, row.BootID)
			if err != nil {
				return err
			}
			st := State{Muted: slices.Contains(muted, row.Guid)}
			if prev, ok := byGUID[row.Guid]; ok {
				st.Consecutive, st.ClearSince, st.LastResolvedAt = int(prev.Consecutive), prev.ClearSince, prev.LastResolvedAt
				if len(prev.Memo) > 0 {
					if err := json.Unmarshal(prev.Memo, &st.Memo); err != nil {
						return fmt.Errorf("watchdog %d device %s memo: %w", w.ID, row.Guid, err)
					}
				}
			}
			active, hasActive := activeOf[row.Guid]
			if hasActive {
				st.Active = &ActiveIncident{ID: active.ID, State: active.State, OfflineOnly: active.OfflineOnly}
			}
			d := Evaluate(w.Policy, snap, st, now, s.cfg.OnlineWindow)
			sampled, err := json.Marshal(d.Samples)
			if err != nil {
				return err
			}
			switch d.Kind {
			case DecideOpen:
				inc, err := q.WatchdogIncidentOpen(ctx, db.WatchdogIncidentOpenParams{WatchdogID: w.ID, DeviceGuid: row.Guid,
					SiteID: row.SiteID, Severity: w.Severity, Title: Title(w.Policy, row.Hostname), Sampled: sampled,
					OfflineOnly: d.OfflineOnly, Now: now})
				switch {
				case errors.Is(err, pgx.ErrNoRows):
					// Another evaluator opened it first: nothing to do.
				case err != nil:
					return err
				default:
					d.Next.Consecutive = 0
					local.Opened = append(local.Opened, inc.ID)
					changed, changes = append(changed, inc), append(changes, "opened")
				}
			case DecideTouch:
				if err := q.WatchdogIncidentTouch(ctx, db.WatchdogIncidentTouchParams{ID: active.ID, Sampled: sampled, Now: now}); err != nil {
					return err
				}
			case DecideResolve:
				inc, err := q.WatchdogIncidentResolve(ctx, db.WatchdogIncidentResolveParams{ID: active.ID, Now: now, Reason: d.Reason})
				if err != nil && !errors.Is(err, pgx.ErrNoRows) {
					return err
				}
				if err == nil {
					local.Resolved = append(local.Resolved, inc.ID)
					changed, changes = append(changed, inc), append(changes, "resolved")
				}
			case DecidePurge:
				n, err := q.WatchdogIncidentPurge(ctx, active.ID)
				if err != nil {
					return err
				}
				if n > 0 {
					local.Purged = append(local.Purged, active.ID)
					changed, changes = append(changed, active), append(changes, "purged")
				}
			}
			memo, err := json.Marshal(d.Next.Memo)
			if err != nil {
				return err
			}
			prev, had := byGUID[row.Guid]
			if stateUnchanged(prev, had, d.Next, memo) {
				continue // most devices, most evaluations: nothing to write
			}
			if err := q.WatchdogStateUpsert(ctx, db.WatchdogStateUpsertParams{WatchdogID: w.ID, DeviceGuid: row.Guid,
				Consecutive: int32(d.Next.Consecutive), Memo: memo, ClearSince: d.Next.ClearSince,
				LastResolvedAt: d.Next.LastResolvedAt, EvaluatedAt: now}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	res.Evaluated += len(guids)
	res.Opened = append(res.Opened, local.Opened...)
	res.Resolved = append(res.Resolved, local.Resolved...)
	res.Purged = append(res.Purged, local.Purged...)
	for i, inc := range changed {
		s.incidentChanged(ctx, inc, changes[i])
	}
	return nil
}

// snapshotParams asks for the inventory collections p's rules read.
func snapshotParams(p Policy, guids []string) db.WatchdogDeviceSnapshotsParams {
	arg := db.WatchdogDeviceSnapshotsParams{Guids: guids}
	for _, r := range p.Rules {
		switch r.Subject {
		case SubjectService:
			arg.WithServices = true
		case SubjectProcess:
			arg.WithProcesses = true
		case SubjectSoftware:
			arg.WithSoftware = true
		case SubjectRoleHealth:
			arg.WithRoles = true
		}
	}
	return arg
}

// stateUnchanged says whether a device's next evaluation state is the
// one stored (had: a row exists), or, without a row, the empty state a
// missing row reads as. Such a state is not written again: the row's
// evaluated_at is when the state last changed, not when it was last
// evaluated (the watchdog's own evaluated_at says that).
func stateUnchanged(prev db.WatchdogDeviceState, had bool, next State, memo []byte) bool {
	if !had {
		return next.Consecutive == 0 && next.ClearSince == nil && next.LastResolvedAt == nil && emptyMemo(next.Memo)
	}
	return int(prev.Consecutive) == next.Consecutive && sameTime(prev.ClearSince, next.ClearSince) &&
		sameTime(prev.LastResolvedAt, next.LastResolvedAt) && jsonEqual(prev.Memo, memo)
}

func emptyMemo(m Memo) bool {
	return m.BootID == "" && !slices.ContainsFunc(m.Since, func(t *time.Time) bool { return t != nil })
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

// jsonEqual compares a stored jsonb document with a marshalled one by
// value (jsonb does not keep the bytes it was given).
func jsonEqual(stored, next []byte) bool {
	var a, b any
	if json.Unmarshal(stored, &a) != nil || json.Unmarshal(next, &b) != nil {
		return false
	}
	return reflect.DeepEqual(a, b)
}

// resolveGone resolves the active incidents of devices the watchdog no
// longer targets (moved out of scope or filter, revoked, deleted).
func (s *Service) resolveGone(ctx context.Context, w Watchdog, guids []string, res *Result) error {
	actives, err := s.store.WatchdogIncidentsActiveOfUnlocked(ctx, w.ID)
	if err != nil {
		return err
	}
	for _, a := range actives {
		if _, ok := slices.BinarySearch(guids, string(a.DeviceGuid)); ok {
			continue
		}
		inc, err := s.store.WatchdogIncidentResolve(ctx, db.WatchdogIncidentResolveParams{ID: a.ID, Now: s.cfg.Now(), Reason: ReasonTarget})
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return err
		}
		res.Resolved = append(res.Resolved, inc.ID)
		s.incidentChanged(ctx, inc, "resolved")
	}
	return nil
}

// PreviewDevice is one device's current evaluation in a preview.
type PreviewDevice struct {
	GUID     string
	Hostname string
	SiteID   int64
	Matched  bool
	Samples  []Sample
}

// Preview is a draft policy's targets and current evaluation, without
// opening incidents.
type Preview struct {
	Targets int
	Matched int
	Devices []PreviewDevice
}

// PreviewLimit is how many devices a preview lists.
const PreviewLimit = 100

// Preview evaluates a draft policy on its targets now, as a first
// evaluation would (no memory, so windows and consecutive matches are
// not yet met): nothing is written.
func (s *Service) Preview(ctx context.Context, by Editor, in Policy) (Preview, error) {
	p, err := s.checkFor(ctx, by, in)
	if err != nil {
		return Preview{}, err
	}
	guids, err := s.targets(ctx, Watchdog{Policy: p})
	if err != nil {
		return Preview{}, err
	}
	out := Preview{Targets: len(guids), Devices: []PreviewDevice{}}
	now := s.cfg.Now()
	for batch := range slices.Chunk(guids, BatchSize) {
		rows, err := s.store.WatchdogDeviceSnapshots(ctx, snapshotParams(p, batch))
		if err != nil {
			return out, err
		}
		for _, row := range rows {
			snap, err := snapshotOf(string(row.Guid), row.Hostname, int64(row.SiteID), row.LastSeen, row.Metrics, row.Hardware, row.Services,
				row.Processes, row.Software, row.Roles, row.AgentVersion, row.BootID)
			if err != nil {
				return out, err
			}
			d := Evaluate(p, snap, State{}, now, s.cfg.OnlineWindow)
			if d.Matched {
				out.Matched++
			}
			if len(out.Devices) < PreviewLimit {
				out.Devices = append(out.Devices, PreviewDevice{GUID: string(row.Guid), Hostname: row.Hostname, SiteID: int64(row.SiteID),
					Matched: d.Matched, Samples: d.Samples})
			}
		}
	}
	return out, nil
}

// Incident is an incident as the queue shows it.
type Incident struct {
	db.WatchdogIncident
	WatchdogName string
	Hostname     string
}

// IncidentQuery filters the queue.
type IncidentQuery struct {
	States     []string
	Severity   string
	WatchdogID *int64
	DeviceGUID string
	SiteID     *int64
	Limit      int
	Offset     int
}

// QueueCount is the number of incidents in one state and severity.
type QueueCount struct {
	State    string
	Severity string
	Count    int64
}

// Queue is a page of incidents, its total and the queue's counts.
type Queue struct {
	Incidents []Incident
	Total     int64
	Counts    []QueueCount
}

// Incidents lists the queue inside scope.
func (s *Service) Incidents(ctx context.Context, scope cairn.SiteScope, q IncidentQuery) (Queue, error) {
	for i, st := range q.States {
		if !slices.Contains(States, st) {
			return Queue{}, cairn.Invalid("state", "must be Open, Acknowledged, Suppressed or Resolved")
		}
		q.States[i] = st
	}
	if q.Severity != "" && !slices.Contains(Severities, q.Severity) {
		return Queue{}, cairn.Invalid("severity", "must be info, warning or critical")
	}
	var states []string
	if len(q.States) > 0 {
		states = q.States
	}
	var sev, guid *string
	if q.Severity != "" {
		sev = &q.Severity
	}
	if q.DeviceGUID != "" {
		guid = &q.DeviceGUID
	}
	rows, err := s.store.WatchdogIncidentList(ctx, db.WatchdogIncidentListParams{Scope: scope.Column(), States: states, Severity: sev,
		WatchdogID: q.WatchdogID, DeviceGuid: guid, SiteID: q.SiteID, MaxRows: int32(q.Limit), Skip: int32(q.Offset)})
	if err != nil {
		return Queue{}, err
	}
	total, err := s.store.WatchdogIncidentCount(ctx, db.WatchdogIncidentCountParams{Scope: scope.Column(), States: states, Severity: sev,
		WatchdogID: q.WatchdogID, DeviceGuid: guid, SiteID: q.SiteID})
	if err != nil {
		return Queue{}, err
	}
	counts, err := s.store.WatchdogIncidentQueueCounts(ctx, scope.Column())
	if err != nil {
		return Queue{}, err
	}
	out := Queue{Incidents: make([]Incident, len(rows)), Total: total, Counts: make([]QueueCount, len(counts))}
	for i, r := range rows {
		out.Incidents[i] = Incident{WatchdogIncident: db.WatchdogIncident{ID: r.ID, WatchdogID: r.WatchdogID, DeviceGuid: r.DeviceGuid,
			SiteID: r.SiteID, Severity: r.Severity, Title: r.Title, State: r.State, Sampled: r.Sampled, OfflineOnly: r.OfflineOnly,
			OpenedAt: r.OpenedAt, LastMatchedAt: r.LastMatchedAt, AcknowledgedBy: r.AcknowledgedBy, AcknowledgedAt: r.AcknowledgedAt,
			SuppressedBy: r.SuppressedBy, SuppressedAt: r.SuppressedAt, SuppressReason: r.SuppressReason, ResolvedAt: r.ResolvedAt,
			ResolveReason: r.ResolveReason, Outcomes: r.Outcomes, UpdatedAt: r.UpdatedAt}, WatchdogName: r.WatchdogName, Hostname: r.Hostname}
	}
	for i, c := range counts {
		out.Counts[i] = QueueCount{State: c.State, Severity: c.Severity, Count: c.Incidents}
	}
	return out, nil
}

// incident is an incident inside scope, locked.
func incidentInScope(ctx context.Context, q *db.Queries, scope cairn.SiteScope, id int64) (db.WatchdogIncident, error) {
	inc, err := q.WatchdogIncidentGetForUpdate(ctx, id)
	if err != nil {
		return inc, db.NotFound(err, "incident not found")
	}
	if !scope.Allows(cairn.SiteID(inc.SiteID)) {
		return inc, cairn.Errorf(cairn.ECodeNotFound, "incident not found")
	}
	return inc, nil
}

// Acknowledge records who owns an open incident.
func (s *Service) Acknowledge(ctx context.Context, scope cairn.SiteScope, actor string, id int64) (db.WatchdogIncident, error) {
	var out db.WatchdogIncident
	err := s.store.InTx(ctx, func(q *db.Queries) error {
		inc, err := incidentInScope(ctx, q, scope, id)
		if err != nil {
			return err
		}
		if inc.State != StateOpen {
			return cairn.Errorf(ECodeIncidentState, "only an Open incident can be acknowledged (it is %s)", inc.State)
		}
		out, err = q.WatchdogIncidentAcknowledge(ctx, db.WatchdogIncidentAcknowledgeParams{ID: id, Actor: actor, Now: s.cfg.Now()})
		return err
	})
	if err != nil {
		return out, err
	}
	s.incidentChanged(ctx, out, "acknowledged")
	return out, nil
}

// SetState moves an incident between Open and Suppressed. Suppressing
// needs a non-empty reason: without one the incident stays as it was.
func (s *Service) SetState(ctx context.Context, scope cairn.SiteScope, actor string, id int64, state, reason string) (db.WatchdogIncident, error) {
	reason = strings.TrimSpace(reason)
	var out db.WatchdogIncident
	err := s.store.InTx(ctx, func(q *db.Queries) error {
		inc, err := incidentInScope(ctx, q, scope, id)
		if err != nil {
			return err
		}
		switch state {
		case StateSuppressed:
			if reason == "" {
				return cairn.Invalid("reason", "is required to suppress an incident")
			}
			if len(reason) > MaxDescription {
				return cairn.Invalid("reason", fmt.Sprintf("must be at most %d characters", MaxDescription))
			}
			if inc.State != StateOpen && inc.State != StateAcknowledged {
				return cairn.Errorf(ECodeIncidentState, "only an Open incident can be suppressed (it is %s)", inc.State)
			}
			out, err = q.WatchdogIncidentSuppress(ctx, db.WatchdogIncidentSuppressParams{ID: id, Actor: actor, Reason: reason, Now: s.cfg.Now()})
		case StateOpen:
			if inc.State != StateSuppressed {
				return cairn.Errorf(ECodeIncidentState, "only a Suppressed incident can be opened again (it is %s)", inc.State)
			}
			out, err = q.WatchdogIncidentReopen(ctx, db.WatchdogIncidentReopenParams{ID: id, Now: s.cfg.Now()})
		default:
			return cairn.Invalid("state", "must be Open or Suppressed")
		}
		return err
	})
	if err != nil {
		return out, err
	}
	s.incidentChanged(ctx, out, strings.ToLower(out.State))
	return out, nil
}

// GetIncident is one incident (the workflow's view: no scope).
func (s *Service) GetIncident(ctx context.Context, id int64) (db.WatchdogIncident, error) {
	inc, err := s.store.WatchdogIncidentGet(ctx, id)
	return inc, db.NotFound(err, "incident not found")
}

// Outcome is what one action of an incident did.
type Outcome struct {
	Action  int    `json:"action"`
	Type    string `json:"type"`
	Status  string `json:"status"` // succeeded, failed, skipped
	Message string `json:"message,omitempty"`
	// RunID is a run_assembly action's job run (GET /api/automation/runs/<id>).
	RunID string    `json:"run_id,omitempty"`
	At    time.Time `json:"at"`
}

// RecordOutcome appends an action's outcome to its incident, once: a
// repeat of the same action index is ignored.
func (s *Service) RecordOutcome(ctx context.Context, id int64, o Outcome) error {
	return s.store.InTx(ctx, func(q *db.Queries) error {
		inc, err := q.WatchdogIncidentGetForUpdate(ctx, id)
		if err != nil {
			return db.NotFound(err, "incident not found")
		}
		var have []Outcome
		if err := json.Unmarshal(inc.Outcomes, &have); err != nil {
			return err
		}
		if slices.ContainsFunc(have, func(h Outcome) bool { return h.Action == o.Action }) {
			return nil
		}
		b, err := json.Marshal(o)
		if err != nil {
			return err
		}
		return q.WatchdogIncidentAddOutcome(ctx, db.WatchdogIncidentAddOutcomeParams{ID: id, Outcome: b})
	})
}

// DeviceWatchdog is one watchdog of a device's tab.
type DeviceWatchdog struct {
	Watchdog Watchdog
	// Targeted: the watchdog applies to the device now.
	Targeted bool
	Override *db.WatchdogDeviceOverride
	Incident *db.WatchdogIncident
}

// DeviceTab is a device's watchdogs: those targeting it, or with an
// override or an active incident on it.
func (s *Service) DeviceTab(ctx context.Context, scope cairn.SiteScope, guid string) ([]DeviceWatchdog, error) {
	dev, err := s.store.WatchdogDeviceSite(ctx, cairn.DeviceGUID(guid))
	if err != nil || !scope.Allows(dev.SiteID) {
		return nil, db.NotFound(orNoRows(err), "device not found")
	}
	site, revoked := dev.SiteID, dev.TrustState == "revoked"
	all, err := s.List(ctx, cairn.AllSites)
	if err != nil {
		return nil, err
	}
	overrides, err := s.store.WatchdogOverridesOfDevice(ctx, cairn.DeviceGUID(guid))
	if err != nil {
		return nil, err
	}
	incidents, err := s.store.WatchdogIncidentsOfDevice(ctx, cairn.DeviceGUID(guid))
	if err != nil {
		return nil, err
	}
	out := []DeviceWatchdog{}
	for _, w := range all {
		dw := DeviceWatchdog{Watchdog: w}
		if w.Scope().Allows(site) {
			switch w.Targets.Kind {
			case TargetAll:
				// Every device of the scope but a revoked one: no need to
				// list them all.
				dw.Targeted = !revoked
			case TargetDevices:
				_, dw.Targeted = slices.BinarySearch(w.Targets.DeviceGUIDs, guid)
				dw.Targeted = dw.Targeted && !revoked
			default:
				guids, err := s.targets(ctx, w)
				if err != nil {
					return nil, err
				}
				_, dw.Targeted = slices.BinarySearch(guids, guid)
			}
		}
		for i := range overrides {
			if overrides[i].WatchdogID == w.ID {
				dw.Override = &overrides[i]
			}
		}
		for i := range incidents {
			if incidents[i].WatchdogID == w.ID {
				dw.Incident = &incidents[i]
			}
		}
		if dw.Targeted || dw.Override != nil || dw.Incident != nil {
			out = append(out, dw)
		}
	}
	return out, nil
}

func orNoRows(err error) error {
	if err == nil {
		return pgx.ErrNoRows
	}
	return err
}

// SetOverride mutes (reason non-empty) or unmutes a watchdog on a device.
// Muting suppresses the active incident at once, with the same reason.
func (s *Service) SetOverride(ctx context.Context, scope cairn.SiteScope, actor, guid string, watchdogID int64, muted bool, reason string) error {
	dev, err := s.store.WatchdogDeviceSite(ctx, cairn.DeviceGUID(guid))
	if err != nil || !scope.Allows(dev.SiteID) {
		return db.NotFound(orNoRows(err), "device not found")
	}
	site := dev.SiteID
	reason = strings.TrimSpace(reason)
	if muted && reason == "" {
		return cairn.Invalid("reason", "is required to mute a watchdog on a device")
	}
	if len(reason) > MaxDescription {
		return cairn.Invalid("reason", fmt.Sprintf("must be at most %d characters", MaxDescription))
	}
	if _, err := s.Get(ctx, scope, watchdogID); err != nil {
		if cairn.IsCode(err, cairn.ECodeNotFound) {
			return cairn.Invalid("watchdog_id", "names no watchdog")
		}
		return err
	}
	var suppressed *db.WatchdogIncident
	err = s.store.InTx(ctx, func(q *db.Queries) error {
		if !muted {
			_, err := q.WatchdogOverrideDelete(ctx, db.WatchdogOverrideDeleteParams{WatchdogID: watchdogID, DeviceGuid: cairn.DeviceGUID(guid)})
			return err
		}
		if _, err := q.WatchdogOverrideUpsert(ctx, db.WatchdogOverrideUpsertParams{WatchdogID: watchdogID, DeviceGuid: cairn.DeviceGUID(guid),
			Reason: reason, Actor: actor}); err != nil {
			return err
		}
		inc, err := q.WatchdogIncidentActiveFor(ctx, db.WatchdogIncidentActiveForParams{WatchdogID: watchdogID, DeviceGuid: cairn.DeviceGUID(guid)})
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if inc.State == StateSuppressed {
			return nil
		}
		inc, err = q.WatchdogIncidentSuppress(ctx, db.WatchdogIncidentSuppressParams{ID: inc.ID, Actor: actor, Reason: reason, Now: s.cfg.Now()})
		suppressed = &inc
		return err
	})
	if err != nil {
		return err
	}
	s.publish(ctx, TypeDeviceWatchdogsChanged, site, map[string]any{"guid": guid, "watchdog_id": watchdogID, "muted": muted})
	if suppressed != nil {
		s.incidentChanged(ctx, *suppressed, "suppressed")
	}
	return nil
}

func (s *Service) incidentChanged(ctx context.Context, inc db.WatchdogIncident, change string) {
	s.publish(ctx, TypeIncidentsChanged, inc.SiteID, map[string]any{"incident_id": inc.ID, "watchdog_id": inc.WatchdogID,
		"guid": inc.DeviceGuid, "state": inc.State, "change": change})
	s.publish(ctx, TypeDeviceWatchdogsChanged, inc.SiteID, map[string]any{"guid": inc.DeviceGuid, "watchdog_id": inc.WatchdogID})
}

// publish sends an operator event; siteID 0 reaches every operator, so
// such events carry IDs only.
func (s *Service) publish(ctx context.Context, typ string, siteID cairn.SiteID, data any) {
	if s.bus == nil {
		return
	}
	b, err := json.Marshal(data)
	if err == nil {
		err = s.bus.Publish(ctx, events.Event{ID: uuid.NewString(), Type: typ, SiteID: cairn.SiteID(siteID), Data: b})
	}
	if err != nil {
		s.cfg.Log.WarnContext(ctx, "publish watchdog event", "type", typ, "err", err)
	}
}

// IncidentsWithoutOutcomes are active incidents older than age whose
// watchdog has actions and that recorded none.
func (s *Service) IncidentsWithoutOutcomes(ctx context.Context, age time.Duration) ([]int64, error) {
	return s.store.WatchdogIncidentsWithoutOutcomes(ctx, s.cfg.Now().Add(-age))
}

// Plan is an incident with its watchdog's actions.
type Plan struct {
	Incident     db.WatchdogIncident
	WatchdogName string
	Severity     string
	Actions      []Action
}

// IncidentPlan reads an incident and its watchdog's actions.
func (s *Service) IncidentPlan(ctx context.Context, id int64) (Plan, error) {
	inc, err := s.GetIncident(ctx, id)
	if err != nil {
		return Plan{}, err
	}
	r, err := s.store.WatchdogGet(ctx, inc.WatchdogID)
	if err != nil {
		return Plan{}, notFound(err)
	}
	w, err := watchdogFrom(r)
	if err != nil {
		return Plan{}, err
	}
	return Plan{Incident: inc, WatchdogName: w.Name, Severity: w.Severity, Actions: w.Actions}, nil
}

// toastVariant is a severity's toast colour.
var toastVariant = map[string]string{SeverityInfo: "info", SeverityWarning: "warning", SeverityCritical: "error"}

// Toast sends an incident's toast (SPEC "Operator event stream":
// service_notification) to the operators who may see its device.
func (s *Service) Toast(ctx context.Context, id int64) error {
	inc, err := s.GetIncident(ctx, id)
	if err != nil {
		return err
	}
	title, message, variant := "Watchdog incident", inc.Title, toastVariant[inc.Severity]
	toast, err := notify.Build(notify.Input{Title: &title, Message: &message, Variant: &variant}, "watchdog", "system", s.cfg.Now())
	if err != nil {
		return err
	}
	data, err := json.Marshal(toast)
	if err != nil {
		return err
	}
	return s.bus.Publish(ctx, events.Event{ID: toast.ID, Type: TypeNotification, SiteID: cairn.SiteID(inc.SiteID), Data: data})
}

// CheckChange refuses an operator's incident change before it reaches the
// incident's workflow: an incident outside scope is not found, a state
// other than Open or Suppressed and a blank suppression reason are
// invalid (the incident stays as it is).
func (s *Service) CheckChange(ctx context.Context, scope cairn.SiteScope, id int64, state, reason string, acknowledge bool) error {
	inc, err := s.store.WatchdogIncidentGet(ctx, id)
	if err != nil || !scope.Allows(cairn.SiteID(inc.SiteID)) {
		return db.NotFound(orNoRows(err), "incident not found")
	}
	if acknowledge {
		return nil
	}
	switch state {
	case StateSuppressed:
		if strings.TrimSpace(reason) == "" {
			return cairn.Invalid("reason", "is required to suppress an incident")
		}
		if len(reason) > MaxDescription {
			return cairn.Invalid("reason", fmt.Sprintf("must be at most %d characters", MaxDescription))
		}
	case StateOpen:
	default:
		return cairn.Invalid("state", "must be Open or Suppressed")
	}
	return nil
}
