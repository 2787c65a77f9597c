package patches_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
	"github.com/cairn-rmm/cairn/internal/events"
	"github.com/cairn-rmm/cairn/internal/patches"
	"github.com/cairn-rmm/cairn/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type nopBus struct{}

func (nopBus) Publish(context.Context, events.Event) error { return nil }

type fixture struct {
	store   *db.Store
	devices *devices.Service
	svc     *patches.Service
	sites   map[string]int64
}

func setup(t testing.TB) *fixture {
	t.Helper()
	store := pgtest.NewDB(t)
	f := &fixture{store: store, devices: devices.NewService(store, nopBus{}, devices.Config{}), svc: patches.New(store),
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

// report posts a device's patch scan through the details path, as the
// agent does.
func (f *fixture) report(t *testing.T, guid string, status *proto.PatchStatus, rows ...proto.PatchEntry) {
	t.Helper()
	if rows == nil {
		rows = []proto.PatchEntry{}
	}
	_, err := f.devices.Details(context.Background(), devicetrust.Identity{GUID: cairn.DeviceGUID(guid)},
		proto.Details{Inventory: proto.Inventory{Patches: rows, PatchStatus: status}})
	require.NoError(t, err)
}

func pending(pkg, from, to string, security bool) proto.PatchEntry {
	return proto.PatchEntry{Title: pkg + " " + to, State: "pending", Source: "apt", Package: pkg, InstalledVersion: from,
		CandidateVersion: to, Security: security, Origin: "Debian-Security:12/stable-security"}
}

func installed(pkg, version string) proto.PatchEntry {
	at := time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)
	return proto.PatchEntry{Title: pkg + " " + version, State: "installed", Source: "apt_history", Package: pkg,
		InstalledVersion: version, InstalledAt: &at}
}

func TestDeviceViewCarriesTheScanAndItsStatus(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.device(t, "web-1", "a")
	v, err := f.svc.Device(t.Context(), cairn.AllSites, "WEB-1")
	require.NoError(t, err)
	require.Nil(t, v.Patches, "never reported")
	require.Nil(t, v.RebootRequired)

	released := time.Date(2024, 1, 9, 0, 0, 0, 0, time.UTC)
	win := proto.PatchEntry{KB: "kb5034123", KBs: []string{"5034123", "KB5034123"}, Title: "2024-01 Cumulative Update (KB5034123)",
		UpdateID: "6C5B1F2A-3E0D-4C8B-9F00-1A2B3C4D5E6F", Revision: 201, State: "pending", Source: "wua_pending", Severity: "Critical",
		Security: true, Categories: []string{"Security Updates", " ", "Security Updates"}, RebootBehavior: "always_requires_reboot",
		SizeBytes: 734003200, ReleasedAt: &released}
	f.report(t, "web-1", &proto.PatchStatus{Provider: "apt", RebootRequired: true, RebootPackages: []string{"libc6", "linux-image-amd64"}},
		pending("openssl", "3.0.1", "3.0.2", true), pending("bash", "5.1", "5.2", false), installed("tzdata", "2024a"), win)

	v, err = f.svc.Device(t.Context(), cairn.AllSites, "web-1")
	require.NoError(t, err)
	require.True(t, *v.RebootRequired)
	require.Equal(t, "apt", *v.Provider)
	require.Equal(t, []string{"libc6", "linux-image-amd64"}, v.RebootPackages)
	require.Equal(t, 3, v.PendingCount)
	require.Equal(t, 2, v.SecurityPending)
	byKey := map[string]patches.Row{}
	for _, r := range v.Patches {
		byKey[r.PatchKey] = r
		require.Nil(t, r.ActiveInstallJob)
		require.Nil(t, r.PatchPolicySource)
	}
	require.Contains(t, byKey, "pkg:openssl=3.0.2")
	require.Contains(t, byKey, "pkg:tzdata=2024a")
	w := byKey["kb:KB5034123"]
	require.Equal(t, []string{"KB5034123"}, w.KBs)
	require.Equal(t, []string{"Security Updates"}, w.Categories)
	require.Equal(t, "always_requires_reboot", w.RebootBehavior)
	require.Equal(t, int64(734003200), w.SizeBytes)
	require.True(t, released.Equal(*w.ReleasedAt))
	require.Equal(t, int32(201), w.Revision)
	require.True(t, byKey["pkg:openssl=3.0.2"].Security)
	require.Equal(t, "Debian-Security:12/stable-security", byKey["pkg:openssl=3.0.2"].Origin)

	// A details post without patches leaves rows and status alone.
	_, err = f.devices.Details(t.Context(), devicetrust.Identity{GUID: "web-1"},
		proto.Details{Inventory: proto.Inventory{Software: []proto.Software{}}})
	require.NoError(t, err)
	again, err := f.svc.Device(t.Context(), cairn.AllSites, "web-1")
	require.NoError(t, err)
	require.Len(t, again.Patches, 4)
	require.True(t, *again.RebootRequired)

	_, err = f.svc.Device(t.Context(), cairn.SiteScope{SiteIDs: []int64{f.sites["b"]}}, "web-1")
	require.True(t, cairn.IsCode(err, cairn.ECodeNotFound), "outside the scope is not found: %v", err)
}

func TestAuditFiltersScopesAndPages(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for i := range 5 {
		site := "a"
		if i%2 == 1 {
			site = "b"
		}
		guid := fmt.Sprintf("host-%d", i)
		f.device(t, guid, site)
		f.report(t, guid, &proto.PatchStatus{Provider: "apt", RebootRequired: i == 3},
			pending("openssl", "3.0.1", "3.0.2", true), pending("bash", "5.1", "5.2", false), installed("tzdata", "2024a"))
	}
	all := func(scope cairn.SiteScope, q patches.AuditQuery) []string {
		var keys []string
		for {
			page, err := f.svc.Audit(t.Context(), scope, q)
			require.NoError(t, err)
			for _, r := range page.Rows {
				keys = append(keys, r.Hostname+"/"+r.PatchKey)
			}
			if page.NextCursor == nil {
				return keys
			}
			q.Cursor = *page.NextCursor
		}
	}
	every := all(cairn.AllSites, patches.AuditQuery{Limit: 2})
	require.Len(t, every, 15)
	require.Equal(t, []string{"host-0/pkg:bash=5.2", "host-0/pkg:openssl=3.0.2", "host-0/pkg:tzdata=2024a", "host-1/pkg:bash=5.2"}, every[:4])
	require.Equal(t, every, all(cairn.AllSites, patches.AuditQuery{Limit: 1000}), "pages join up to one listing")

	for _, tc := range []struct {
		name  string
		scope cairn.SiteScope
		q     patches.AuditQuery
		want  int
	}{
		{"pending", cairn.AllSites, patches.AuditQuery{State: "pending"}, 10},
		{"security", cairn.AllSites, patches.AuditQuery{SecurityOnly: true}, 5},
		{"site scope", cairn.SiteScope{SiteIDs: []int64{f.sites["b"]}}, patches.AuditQuery{}, 6},
		{"site filter", cairn.AllSites, patches.AuditQuery{SiteID: f.sites["a"]}, 9},
		{"site filter outside scope", cairn.SiteScope{SiteIDs: []int64{f.sites["b"]}}, patches.AuditQuery{SiteID: f.sites["a"]}, 0},
		{"reboot", cairn.AllSites, patches.AuditQuery{RebootRequired: true}, 3},
		{"hostname", cairn.AllSites, patches.AuditQuery{Hostname: "HOST-2"}, 3},
		{"title", cairn.AllSites, patches.AuditQuery{Q: "OPENSSL"}, 5},
		{"source", cairn.AllSites, patches.AuditQuery{Source: "apt_history"}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Len(t, all(tc.scope, tc.q), tc.want)
		})
	}

	for _, q := range []patches.AuditQuery{{State: "done"}, {Cursor: "not-a-cursor!"}, {SiteID: -1}} {
		_, err := f.svc.Audit(t.Context(), cairn.AllSites, q)
		require.True(t, cairn.IsCode(err, cairn.ECodeValidation), "%+v: %v", q, err)
	}
}

func TestAuditFindsKBsAcrossTheirAliases(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.device(t, "win-1", "a")
	f.report(t, "win-1", &proto.PatchStatus{Provider: "wua"},
		proto.PatchEntry{KB: "KB5034123", KBs: []string{"KB5034123", "KB5034124"}, Title: "CU", State: "pending", Source: "wua_pending"})
	for _, kb := range []string{"KB5034123", "5034124", "kb 5034124"} {
		page, err := f.svc.Audit(t.Context(), cairn.AllSites, patches.AuditQuery{KB: kb})
		require.NoError(t, err)
		require.Len(t, page.Rows, 1, kb)
	}
}
