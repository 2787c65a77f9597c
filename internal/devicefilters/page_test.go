package devicefilters_test

import (
	"context"
	"encoding/base64"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devicefilters"
	"github.com/cairn-rmm/cairn/internal/ownership"
)

// setMetadata stores a decoded value the way internal/metadata does.
func (f *fixture) setMetadata(t *testing.T, guid string, field int, value string) {
	t.Helper()
	f.exec(t, `INSERT INTO device_metadata_values (device_guid, field_number, value_b64, modified_at, source) VALUES ($1, $2, $3, now(), 'agent')`,
		guid, field, base64.StdEncoding.EncodeToString([]byte(value)))
}

// fleetWithTies adds app-1 to the fleet: the same OS, last_seen, agent
// version and metadata value (in other case) as web-1, so sorts tie.
func (f *fixture) fleetWithTies(t *testing.T) {
	t.Helper()
	f.fleet(t)
	_, err := f.store.DeviceInsert(context.Background(), db.DeviceInsertParams{Guid: "g-app-1", Hostname: "app-1", SiteID: cairn.SiteID(f.sites["alpha"])})
	require.NoError(t, err)
	f.exec(t, `UPDATE devices SET operating_system = 'ubuntu 22.04.3 lts', agent_version = '1.4.2', last_seen = $1 WHERE guid = 'g-app-1'`,
		now.Add(-10*time.Second))
	f.setMetadata(t, "g-web-1", 5, "Rack A")
	f.setMetadata(t, "g-app-1", 5, "rack a")
	f.setMetadata(t, "g-web-2", 5, "rack b")
	f.setMetadata(t, "g-db-1", 5, "")
	f.setMetadata(t, "g-db-1", 6, "Ünïcode €")
}

func TestMetadataConditions(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.fleetWithTies(t)
	for cond, want := range map[string][]string{
		`{"field":"metadata","key":5,"op":"equals","value":"RACK A"}`:     {"app-1", "web-1"},
		`{"field":"metadata","key":5,"op":"not_equals","value":"rack a"}`: {"db-1", "never-1", "web-2"},
		`{"field":"metadata","key":5,"op":"contains","value":"ack"}`:      {"app-1", "web-1", "web-2"},
		`{"field":"metadata","key":5,"op":"not_contains","value":"b"}`:    {"app-1", "db-1", "never-1", "web-1"},
		`{"field":"metadata","key":5,"op":"starts_with","value":"Rack "}`: {"app-1", "web-1", "web-2"},
		`{"field":"metadata","key":5,"op":"ends_with","value":"B"}`:       {"web-2"},
		`{"field":"metadata","key":5,"op":"is_empty"}`:                    {"db-1", "never-1"},
		`{"field":"metadata","key":5,"op":"is_not_empty"}`:                {"app-1", "web-1", "web-2"},
		`{"field":"metadata","key":6,"op":"contains","value":"ünï"}`:      {"db-1"},
		`{"field":"metadata","key":7,"op":"is_empty"}`:                    {"app-1", "db-1", "never-1", "web-1", "web-2"},
	} {
		require.Equal(t, want, hostnames(t, f, cairn.AllSites, `{"match":"all","conditions":[`+cond+`]}`), cond)
	}
}

// Every sort, both directions, ties by GUID in the sort's direction; pages
// of two put together are the whole order, and the total is the count.
func TestPagingAndSorting(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.fleetWithTies(t)
	ctx := context.Background()
	for sort, want := range map[string][]string{
		"":               {"app-1", "db-1", "never-1", "web-1", "web-2"},
		"-hostname":      {"web-2", "web-1", "never-1", "db-1", "app-1"},
		"last_seen":      {"never-1", "db-1", "web-2", "app-1", "web-1"},
		"-last_seen":     {"web-1", "app-1", "web-2", "db-1", "never-1"},
		"os":             {"never-1", "web-2", "app-1", "web-1", "db-1"},
		"-site":          {"never-1", "db-1", "web-2", "web-1", "app-1"},
		"site":           {"app-1", "web-1", "web-2", "db-1", "never-1"},
		"metadata:5":     {"db-1", "never-1", "app-1", "web-1", "web-2"},
		"-metadata:5":    {"web-2", "web-1", "app-1", "never-1", "db-1"},
		"trust_state":    {"app-1", "web-1", "web-2", "db-1", "never-1"},
		"agent_version":  {"never-1", "web-2", "app-1", "web-1", "db-1"},
		"-agent_version": {"db-1", "web-1", "app-1", "web-2", "never-1"},
		"description":    {"app-1", "never-1", "web-2", "web-1", "db-1"},
		"status":         {"web-1", "app-1", "web-2", "db-1", "never-1"},
		"-status":        {"never-1", "db-1", "web-2", "app-1", "web-1"},
	} {
		s, err := devicefilters.ParseSort("sort", sort)
		require.NoError(t, err)
		var got []string
		for offset := 0; offset < 6; offset += 2 {
			page, err := f.svc.Page(ctx, cairn.AllSites, devicefilters.PageQuery{Sort: s, Limit: 2, Offset: offset})
			require.NoError(t, err)
			require.EqualValues(t, 5, page.Total)
			for _, r := range page.Rows {
				got = append(got, r.Hostname)
			}
		}
		require.Equal(t, want, got, sort)
	}
	for _, bad := range []string{"colour", "metadata:0", "metadata:501", "metadata:x", "--hostname", "metadata:05"} {
		_, err := devicefilters.ParseSort("sort", bad)
		require.True(t, cairn.IsCode(err, cairn.ECodeValidation), bad)
	}
	// Past the end: no rows, the same total.
	page, err := f.svc.Page(ctx, cairn.AllSites, devicefilters.PageQuery{Offset: 50})
	require.NoError(t, err)
	require.Empty(t, page.Rows)
	require.EqualValues(t, 5, page.Total)
}

// An operator's scope bounds every evaluation: pages, totals, drilldowns
// into other sites, and MatchGUIDs of a tree that names another site.
func TestScopeBoundsEveryEvaluation(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.fleet(t)
	ctx := context.Background()
	alpha := cairn.SiteScope{SiteIDs: []int64{f.sites["alpha"]}}
	require.Equal(t, []string{"web-1", "web-2"}, hostnames(t, f, alpha, `{"match":"all","conditions":[{"field":"hostname","op":"is_not_empty"}]}`))
	require.Equal(t, []string{}, hostnames(t, f, alpha, `{"match":"all","conditions":[{"field":"hostname","op":"equals","value":"db-1"}]}`))
	betaTree := tree(t, `{"match":"any","conditions":[{"field":"site","op":"in","value":[`+mustJSON(t, f.sites["beta"])+`]}]}`)
	refs, err := f.svc.MatchGUIDs(ctx, alpha, betaTree)
	require.NoError(t, err)
	require.Empty(t, refs)
	refs, err = f.svc.MatchGUIDs(ctx, cairn.AllSites, betaTree)
	require.NoError(t, err)
	require.Equal(t, []devicefilters.DeviceRef{{GUID: "g-db-1", Hostname: "db-1", SiteID: cairn.SiteID(f.sites["beta"])},
		{GUID: "g-never-1", Hostname: "never-1", SiteID: cairn.SiteID(f.sites["beta"])}}, refs)
	page, err := f.svc.Page(ctx, alpha, devicefilters.PageQuery{SiteID: cairn.SiteID(f.sites["beta"])})
	require.NoError(t, err)
	require.Empty(t, page.Rows)
	require.Zero(t, page.Total)
	none, err := f.svc.Page(ctx, cairn.SiteScope{}, devicefilters.PageQuery{})
	require.NoError(t, err)
	require.Zero(t, none.Total, "an operator without sites sees nothing")

	saved, err := f.svc.Create(ctx, ownership.System, devicefilters.FilterInput{Name: "Beta", Tree: betaTree})
	require.NoError(t, err)
	refs, err = f.svc.MatchSaved(ctx, alpha, []int64{saved.ID})
	require.NoError(t, err)
	require.Empty(t, refs)
	refs, err = f.svc.MatchSaved(ctx, cairn.AllSites, []int64{saved.ID, saved.ID})
	require.NoError(t, err)
	require.Len(t, refs, 2)
	_, err = f.svc.MatchSaved(ctx, cairn.AllSites, []int64{saved.ID + 100})
	require.True(t, cairn.IsCode(err, cairn.ECodeNotFound))
}
