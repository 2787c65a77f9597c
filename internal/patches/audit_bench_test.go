package patches_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/patches"
)

// BenchmarkPatchAudit50k times audit pages over 50,000 devices in 2 sites
// with 20 rows each (1,000,000 rows: 15 pending, 5 installed; every fifth
// pending row from a security source; a KB row on every tenth device),
// written straight into the schema with generate_series
// (docs/benchmarks.md "Patch audit at 50,000 devices"):
//
//	go test -run '^$' -bench BenchmarkPatchAudit50k -benchtime 50x ./internal/patches/
func BenchmarkPatchAudit50k(b *testing.B) {
	f := setup(b)
	ctx := context.Background()
	seed50k(b, f)

	operator := cairn.SiteScope{SiteIDs: []int64{f.sites["b"]}}
	var deep string
	{
		q := patches.AuditQuery{Limit: 1000}
		for range 100 {
			page, err := f.svc.Audit(ctx, cairn.AllSites, q)
			require.NoError(b, err)
			q.Cursor = *page.NextCursor
		}
		deep = q.Cursor
	}
	for _, c := range []struct {
		name  string
		scope cairn.SiteScope
		q     patches.AuditQuery
	}{
		{"first_page_admin", cairn.AllSites, patches.AuditQuery{}},
		{"first_page_operator", operator, patches.AuditQuery{}},
		{"page_100k_rows_deep", cairn.AllSites, patches.AuditQuery{Cursor: deep}},
		{"pending_security", cairn.AllSites, patches.AuditQuery{State: "pending", SecurityOnly: true}},
		{"kb_on_5000_devices", cairn.AllSites, patches.AuditQuery{KB: "KB5000001"}},
		{"title_contains", operator, patches.AuditQuery{Q: "package-7 "}},
		{"reboot_required", cairn.AllSites, patches.AuditQuery{RebootRequired: true}},
		{"one_host", cairn.AllSites, patches.AuditQuery{Hostname: "host-25000"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				page, err := f.svc.Audit(ctx, c.scope, c.q)
				require.NoError(b, err)
				require.NotEmpty(b, page.Rows)
			}
		})
	}
}

// seed50k writes 50,000 devices in 2 sites with 20 patch rows each
// (15 pending, 5 installed; every fifth pending row from a security
// source; a KB row, KB5000001, on every tenth device, all in site a).
func seed50k(b *testing.B, f *fixture) {
	b.Helper()
	ctx := context.Background()
	exec := func(sql string, args ...any) {
		_, err := f.store.Pool.Exec(ctx, sql, args...)
		require.NoError(b, err)
	}
	start := time.Now()
	exec(`INSERT INTO devices (guid, hostname, site_id)
		SELECT 'g-' || i, 'host-' || lpad(i::text, 5, '0'), CASE WHEN i % 2 = 0 THEN $1::bigint ELSE $2::bigint END
		FROM generate_series(1, 50000) i`, f.sites["a"], f.sites["b"])
	exec(`INSERT INTO device_inventory (device_guid, collected_at, hash, part_hashes)
		SELECT guid, now(), 'h', '{"patches":"x"}'::jsonb FROM devices`)
	for lo := 1; lo <= 50000; lo += 2500 {
		exec(`INSERT INTO device_patches (device_guid, patch_key, kb, kbs, title, state, source, package, installed_version,
			candidate_version, security, severity)
		SELECT d.guid,
			CASE WHEN j = 1 AND substr(d.guid, 3)::int % 10 = 0 THEN 'kb:KB50' || lpad(j::text, 5, '0')
			     ELSE 'pkg:package-' || j || '=1.' || j END,
			CASE WHEN j = 1 AND substr(d.guid, 3)::int % 10 = 0 THEN 'KB50' || lpad(j::text, 5, '0') ELSE '' END,
			CASE WHEN j = 1 AND substr(d.guid, 3)::int % 10 = 0 THEN ARRAY['KB50' || lpad(j::text, 5, '0')] ELSE '{}' END,
			'package-' || j || ' 1.' || j,
			CASE WHEN j <= 15 THEN 'pending' ELSE 'installed' END,
			CASE WHEN j <= 15 THEN 'apt' ELSE 'apt_history' END,
			'package-' || j, '1.0', CASE WHEN j <= 15 THEN '1.' || j ELSE '' END,
			j <= 15 AND j % 5 = 0, CASE WHEN j % 5 = 0 THEN 'Important' ELSE '' END
		FROM devices d, generate_series(1, 20) j WHERE substr(d.guid, 3)::int BETWEEN $1 AND $2`, lo, lo+2499)
	}
	exec(`INSERT INTO device_patch_status (device_guid, provider, reboot_required)
		SELECT guid, 'apt', substr(guid, 3)::int % 7 = 0 FROM devices`)
	exec(`ANALYZE`)
	b.Logf("seeded 50,000 devices and 1,000,000 rows in %s", time.Since(start).Round(time.Millisecond))
}
