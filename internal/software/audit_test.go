package software_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
	"github.com/cairn-rmm/cairn/internal/events"
	"github.com/cairn-rmm/cairn/internal/pgtest"
	"github.com/cairn-rmm/cairn/internal/software"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type nopBus struct{}

func (nopBus) Publish(context.Context, events.Event) error { return nil }

type fixture struct {
	store   *db.Store
	devices *devices.Service
	svc     *software.Service
	sites   map[string]int64
}

func setup(t *testing.T) *fixture {
	t.Helper()
	store := pgtest.NewDB(t)
	f := &fixture{store: store, devices: devices.NewService(store, nopBus{}, devices.Config{}), svc: software.New(store),
		sites: map[string]int64{}}
	for _, name := range []string{"a", "b"} {
		s, err := store.SiteInsert(context.Background(), db.SiteInsertParams{Name: "Site " + name, Slug: "site-" + name})
		require.NoError(t, err)
		f.sites[name] = int64(s.ID)
	}
	return f
}

func (f *fixture) device(t *testing.T, guid, site string) {
	t.Helper()
	_, err := f.store.DeviceInsert(context.Background(), db.DeviceInsertParams{Guid: cairn.DeviceGUID(guid), Hostname: guid, SiteID: cairn.SiteID(f.sites[site])})
	require.NoError(t, err)
}

// ingest posts a device's software through the details path, as an
// agent's details post does (DELETE + COPY in one transaction).
func (f *fixture) ingest(t *testing.T, guid string, sw ...proto.Software) {
	t.Helper()
	require.NoError(t, f.ingestErr(guid, sw...))
}

func (f *fixture) ingestErr(guid string, sw ...proto.Software) error {
	if sw == nil {
		sw = []proto.Software{}
	}
	_, err := f.devices.Details(context.Background(), devicetrust.Identity{GUID: cairn.DeviceGUID(guid)}, proto.Details{Inventory: proto.Inventory{Software: sw}})
	return err
}

func pkg(name, version, publisher string) proto.Software {
	return proto.Software{Name: name, Version: version, Publisher: publisher, Source: "msi"}
}

type variant struct {
	Site                              int64
	NameKey, Version, Name, Publisher string
	Count                             int64
}

// requireExact compares both aggregates with a GROUP BY over
// device_software: the answer they stand in for.
func (f *fixture) requireExact(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	read := func(sql string) []variant {
		rows, err := f.store.Pool.Query(ctx, sql)
		require.NoError(t, err)
		defer rows.Close()
		var out []variant
		for rows.Next() {
			var v variant
			require.NoError(t, rows.Scan(&v.Site, &v.NameKey, &v.Version, &v.Name, &v.Publisher, &v.Count))
			out = append(out, v)
		}
		require.NoError(t, rows.Err())
		return out
	}
	require.Equal(t,
		read(`SELECT d.site_id, s.name_key, s.version, s.name, s.publisher, count(*) FROM device_software s
			JOIN devices d ON d.guid = s.device_guid GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5`),
		read(`SELECT site_id, name_key, version, name, publisher, device_count FROM software_audit_counts ORDER BY 1, 2, 3, 4, 5`))
	require.Equal(t,
		read(`SELECT 0::bigint, name_key, version, name, publisher, count(*) FROM device_software GROUP BY 2, 3, 4, 5 ORDER BY 2, 3, 4, 5`),
		read(`SELECT 0::bigint, name_key, version, name, publisher, device_count FROM software_audit_totals ORDER BY 2, 3, 4, 5`))
	var staged int
	require.NoError(t, f.store.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM software_audit_deltas) + (SELECT count(*) FROM software_audit_pending)`).Scan(&staged))
	require.Zero(t, staged, "staged deltas must not outlive their transaction")
}

func TestAggregateFollowsIngestMovesAndPurge(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	f.device(t, "d1", "a")
	f.device(t, "d2", "a")
	f.device(t, "d3", "b")
	f.requireExact(t)

	f.ingest(t, "d1", pkg("Google Chrome", "120", "Google LLC"), pkg("7-Zip", "23.01", "Igor Pavlov"))
	f.ingest(t, "d2", pkg("Google Chrome", "120", "Google LLC"), pkg("Zoom", "5.1", "Zoom"))
	f.ingest(t, "d3", pkg("google chrome", "120", "Google LLC"), pkg("Zoom", "5.1", "Zoom"))
	f.requireExact(t)

	// Replace: one package updated, one removed, one added.
	f.ingest(t, "d1", pkg("Google Chrome", "121", "Google LLC"), pkg("Firefox", "130", "Mozilla"))
	f.requireExact(t)
	// An empty report clears the device.
	f.ingest(t, "d2")
	f.requireExact(t)

	// Site reassignment moves the per-site counts in the same transaction.
	require.NoError(t, f.ingestErr("d2", pkg("Zoom", "5.1", "Zoom")))
	_, err := f.devices.AssignSite(ctx, []string{"d1", "d2"}, cairn.SiteID(f.sites["b"]), "admin")
	require.NoError(t, err)
	f.requireExact(t)

	// Purge: ON DELETE CASCADE decrements too.
	n, err := f.store.DeviceDelete(ctx, "d3")
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	f.requireExact(t)
	n, err = f.store.DeviceDelete(ctx, "d1")
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	f.requireExact(t)

	// A rolled-back change leaves the aggregate as it was.
	err = f.store.InTx(ctx, func(q *db.Queries) error {
		require.NoError(t, q.DeviceSoftwareDelete(ctx, "d2"))
		return fmt.Errorf("roll back")
	})
	require.Error(t, err)
	f.requireExact(t)

	// TRUNCATE (cascading from devices too) empties the aggregate.
	_, err = f.store.Pool.Exec(ctx, `TRUNCATE devices CASCADE`)
	require.NoError(t, err)
	f.requireExact(t)
	var left int
	require.NoError(t, f.store.Pool.QueryRow(ctx, `SELECT count(*) FROM software_audit_totals`).Scan(&left))
	require.Zero(t, left)
}

// A raw COPY that does not name site_id (a seeding script) still counts
// under the device's site, and a wrong site cannot be written.
func TestAggregateRawCopyAndWrongSite(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	f.device(t, "d1", "a")
	_, err := f.store.Pool.Exec(ctx, `INSERT INTO device_software (device_guid, name_key, name, version, publisher)
		VALUES ('d1', 'vlc', 'VLC', '3', 'VideoLAN')`)
	require.NoError(t, err)
	f.requireExact(t)
	_, err = f.store.Pool.Exec(ctx, `INSERT INTO device_software (device_guid, site_id, name_key, name, version, publisher)
		VALUES ('d1', $1, 'obs', 'OBS', '30', '')`, f.sites["b"])
	require.Error(t, err)
	f.requireExact(t)
}

// Concurrent ingests of overlapping software, with versions swapped
// between devices (the classic lock-order inversion), never deadlock and
// leave exact counts.
func TestAggregateConcurrentIngests(t *testing.T) {
	t.Parallel()
	f := setup(t)
	const devicesN, rounds = 8, 6
	for i := range devicesN {
		f.device(t, fmt.Sprintf("c%d", i), []string{"a", "b"}[i%2])
	}
	catalog := func(i, round int) []proto.Software {
		var out []proto.Software
		for k := range 40 {
			// Each device holds a shifting window of a shared catalogue,
			// so old and new versions cross between devices every round.
			v := (i + round + k) % 3
			out = append(out, pkg(fmt.Sprintf("App %02d", (k*7+i+round)%50), fmt.Sprint(v), "Vendor"))
		}
		return out
	}
	var wg sync.WaitGroup
	errs := make(chan error, devicesN*rounds)
	for i := range devicesN {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range rounds {
				errs <- f.ingestErr(fmt.Sprintf("c%d", i), catalog(i, round)...)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	f.requireExact(t)
}

func TestAuditScopeSearchSortAndPaging(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	for i := range 3 {
		f.device(t, fmt.Sprintf("a%d", i), "a")
	}
	f.device(t, "b0", "b")
	f.ingest(t, "a0", pkg("Alpha", "1", "P"), pkg("Beta", "2", "P"), pkg("Gamma", "1", "P"))
	f.ingest(t, "a1", pkg("Alpha", "1", "P"), pkg("Beta", "2", "P"))
	f.ingest(t, "a2", pkg("Alpha", "1", "P"))
	f.ingest(t, "b0", pkg("Alpha", "1", "P"), pkg("Secret Tool", "9", "Hidden"), pkg("Beta", "2", "P"))

	type row struct {
		Name  string
		Count int64
	}
	rowsOf := func(p software.AuditPage) []row {
		out := make([]row, len(p.Software))
		for i, r := range p.Software {
			out[i] = row{r.Name, r.DeviceCount}
		}
		return out
	}
	siteA := cairn.SiteScope{SiteIDs: []int64{f.sites["a"]}}
	both := cairn.SiteScope{SiteIDs: []int64{f.sites["a"], f.sites["b"]}}
	cases := []struct {
		name  string
		scope cairn.SiteScope
		q     software.AuditQuery
		want  []row
		total int64
	}{
		{"admin by name", cairn.AllSites, software.AuditQuery{}, []row{{"Alpha", 4}, {"Beta", 3}, {"Gamma", 1}, {"Secret Tool", 1}}, 4},
		{"admin by count desc", cairn.AllSites, software.AuditQuery{Sort: "-device_count"}, []row{{"Alpha", 4}, {"Beta", 3}, {"Gamma", 1}, {"Secret Tool", 1}}, 4},
		{"admin by count asc", cairn.AllSites, software.AuditQuery{Sort: "device_count"}, []row{{"Gamma", 1}, {"Secret Tool", 1}, {"Beta", 3}, {"Alpha", 4}}, 4},
		{"admin by name desc, paged", cairn.AllSites, software.AuditQuery{Sort: "-name", Limit: 2, Offset: 1}, []row{{"Gamma", 1}, {"Beta", 3}}, 4},
		{"admin search", cairn.AllSites, software.AuditQuery{Q: "  ET "}, []row{{"Beta", 3}, {"Secret Tool", 1}}, 2},
		{"site A never counts site B", siteA, software.AuditQuery{}, []row{{"Alpha", 3}, {"Beta", 2}, {"Gamma", 1}}, 3},
		{"site A by count desc", siteA, software.AuditQuery{Sort: "-device_count", Limit: 1}, []row{{"Alpha", 3}}, 3},
		{"site A by name desc", siteA, software.AuditQuery{Sort: "-name"}, []row{{"Gamma", 1}, {"Beta", 2}, {"Alpha", 3}}, 3},
		{"site A search", siteA, software.AuditQuery{Q: "secret"}, []row{}, 0},
		{"site A past the end", siteA, software.AuditQuery{Offset: 10}, []row{}, 3},
		{"every site listed reads the totals", both, software.AuditQuery{Sort: "-device_count", Limit: 1}, []row{{"Alpha", 4}}, 4},
		{"no sites", cairn.SiteScope{}, software.AuditQuery{}, []row{}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := f.svc.Audit(ctx, tc.scope, tc.q)
			require.NoError(t, err)
			require.Equal(t, tc.want, rowsOf(p))
			require.Equal(t, tc.total, p.Total)
		})
	}
	// A wider scope than site A through another site (not every site).
	_, err := f.store.SiteInsert(ctx, db.SiteInsertParams{Name: "Site c", Slug: "site-c"})
	require.NoError(t, err)
	p, err := f.svc.Audit(ctx, both, software.AuditQuery{Sort: "-device_count"})
	require.NoError(t, err)
	require.Equal(t, []row{{"Alpha", 4}, {"Beta", 3}, {"Gamma", 1}, {"Secret Tool", 1}}, rowsOf(p))

	for _, q := range []software.AuditQuery{{Limit: 501}, {Offset: -1}, {Sort: "publisher"}, {Q: string(make([]byte, 300))}} {
		_, err := f.svc.Audit(ctx, cairn.AllSites, q)
		require.True(t, cairn.IsCode(err, cairn.ECodeValidation), "%+v: %v", q, err)
	}
}
