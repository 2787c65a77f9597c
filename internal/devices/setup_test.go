package devices_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-rmm/cairn"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
	"github.com/cairn-rmm/cairn/internal/events"
	"github.com/cairn-rmm/cairn/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// statements counts the statements sent to PostgreSQL per sqlc query name.
type statements struct {
	mu     sync.Mutex
	byName map[string]int
}

func (s *statements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if rest, ok := strings.CutPrefix(data.SQL, "-- name: "); ok {
		name, _, _ := strings.Cut(rest, " ")
		s.mu.Lock()
		s.byName[name]++
		s.mu.Unlock()
	}
	return ctx
}

func (s *statements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (s *statements) count(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byName[name]
}

// recorder keeps the events the service published.
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

func (r *recorder) take() []events.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.events
	r.events = nil
	return out
}

func (r *recorder) types() []string {
	var out []string
	for _, e := range r.take() {
		out = append(out, e.Type)
	}
	return out
}

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type fixture struct {
	store  *db.Store
	svc    *devices.Service
	events *recorder
	stmts  *statements
	clock  *clock
	siteID int64
}

// setup gives a test its own database, reached through a pool that counts
// statements, one site, and a service on a settable clock.
func setup(t *testing.T) *fixture {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(pgtest.URL(pgtest.NewDatabase(t)))
	require.NoError(t, err)
	stmts := &statements{byName: map[string]int{}}
	cfg.ConnConfig.Tracer = stmts
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	store := db.FromPool(pool)
	site, err := store.SiteInsert(context.Background(), db.SiteInsertParams{Name: "Main", Slug: "main"})
	require.NoError(t, err)
	f := &fixture{store: store, events: &recorder{}, stmts: stmts, clock: &clock{t: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}, siteID: int64(site.ID)}
	f.svc = devices.NewService(store, f.events, devices.Config{Now: f.clock.Now})
	return f
}

// device enrolls a device row and returns its identity.
func (f *fixture) device(t *testing.T, guid, hostname string) devicetrust.Identity {
	t.Helper()
	_, err := f.store.DeviceInsert(context.Background(), db.DeviceInsertParams{Guid: cairn.DeviceGUID(guid), Hostname: hostname, SiteID: cairn.SiteID(f.siteID)})
	require.NoError(t, err)
	return devicetrust.Identity{GUID: cairn.DeviceGUID(guid), Hostname: hostname, SiteID: cairn.SiteID(f.siteID), SiteSlug: "main"}
}

func (f *fixture) row(t *testing.T, guid string) db.Device {
	t.Helper()
	r, err := f.store.DeviceGetInScope(context.Background(), db.DeviceGetInScopeParams{Guid: cairn.DeviceGUID(guid), AllSites: true, SiteIds: []int64{}})
	require.NoError(t, err)
	return r.Device
}
