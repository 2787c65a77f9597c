package devices_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devices"
)

// Activity lists newest first in pages; next_before_id walks them.
func TestActivityPages(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	id := f.device(t, "g1", "alpha")
	for i := range 5 {
		a, err := f.svc.RecordActivity(ctx, devices.NewActivity{GUID: id.GUID, Hostname: "alpha", SiteID: cairn.SiteID(f.siteID),
			Kind: "test_action", Summary: fmt.Sprintf("step %d", i), Actor: "admin", Metadata: map[string]any{"n": i}})
		require.NoError(t, err)
		require.Equal(t, devices.ActivityCompleted, a.Status)
		require.NotNil(t, a.FinishedAt, "a completed row is finished")
	}
	var summaries []string
	var before int64
	for pages := 0; ; pages++ {
		require.Less(t, pages, 3)
		rows, next, err := f.svc.ListActivity(ctx, cairn.AllSites, "ALPHA", before, 2)
		require.NoError(t, err)
		for _, r := range rows {
			summaries = append(summaries, r.Summary)
		}
		if next == nil {
			break
		}
		before = *next
	}
	require.Equal(t, []string{"step 4", "step 3", "step 2", "step 1", "step 0"}, summaries)

	running, err := f.svc.RecordActivity(ctx, devices.NewActivity{Hostname: "alpha", Kind: "job", Summary: "running", Status: devices.ActivityRunning})
	require.NoError(t, err)
	require.Nil(t, running.FinishedAt)
	got, err := f.svc.GetActivity(ctx, cairn.AllSites, running.ID)
	require.NoError(t, err)
	require.Equal(t, "running", got.Summary)
	var meta map[string]any
	require.NoError(t, json.Unmarshal(got.Metadata, &meta))
	require.Empty(t, meta)
}

// Scope is each row's own site (issue 13 item 16): a device that moves
// takes none of its old site's rows to operators of the new one, and the
// old site keeps seeing what happened while the device was there.
func TestActivityScopeIsEachRowsOwnSite(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	other, err := f.store.SiteInsert(ctx, db.SiteInsertParams{Name: "Other", Slug: "other"})
	require.NoError(t, err)
	id := f.device(t, "g1", "alpha")
	a, err := f.svc.RecordActivity(ctx, devices.NewActivity{GUID: id.GUID, Hostname: "alpha", SiteID: cairn.SiteID(f.siteID), Kind: "k", Summary: "in main"})
	require.NoError(t, err)
	mainScope, otherScope := cairn.SiteScope{SiteIDs: []int64{f.siteID}}, cairn.SiteScope{SiteIDs: []int64{int64(other.ID)}}

	rows, _, err := f.svc.ListActivity(ctx, mainScope, "alpha", 0, 10)
	require.NoError(t, err)
	require.Len(t, rows, 1)
	_, _, err = f.svc.ListActivity(ctx, otherScope, "alpha", 0, 10)
	require.True(t, cairn.IsCode(err, cairn.ECodeNotFound), "%v", err)

	_, err = f.svc.AssignSite(ctx, []string{"g1"}, other.ID, "admin")
	require.NoError(t, err)
	rows, _, err = f.svc.ListActivity(ctx, otherScope, "alpha", 0, 10)
	require.NoError(t, err)
	require.Len(t, rows, 1, "only the move: the row from site Main stays there")
	require.Equal(t, devices.ActivitySiteAssigned, rows[0].Kind)
	require.Equal(t, "admin", rows[0].Actor)
	_, err = f.svc.GetActivity(ctx, otherScope, a.ID)
	require.True(t, cairn.IsCode(err, cairn.ECodeNotFound), "%v", err)
	rows, _, err = f.svc.ListActivity(ctx, mainScope, "alpha", 0, 10)
	require.NoError(t, err)
	require.Equal(t, []string{"in main"}, summaries(rows), "site Main keeps its own history of the device")
	got, err := f.svc.GetActivity(ctx, mainScope, a.ID)
	require.NoError(t, err)
	require.Equal(t, "in main", got.Summary)

	// A row recorded without a site takes its device's site at the time.
	b, err := f.svc.RecordActivity(ctx, devices.NewActivity{GUID: id.GUID, Hostname: "alpha", Kind: "k", Summary: "in other"})
	require.NoError(t, err)
	require.Equal(t, other.ID, b.SiteID)

	// A clear deletes only the rows inside the caller's scope.
	n, err := f.svc.ClearActivity(ctx, otherScope, "Alpha")
	require.NoError(t, err)
	require.Equal(t, int64(2), n)
	rows, next, err := f.svc.ListActivity(ctx, otherScope, "alpha", 0, 10)
	require.NoError(t, err)
	require.Empty(t, rows)
	require.Nil(t, next)
	rows, _, err = f.svc.ListActivity(ctx, mainScope, "alpha", 0, 10)
	require.NoError(t, err)
	require.Equal(t, []string{"in main"}, summaries(rows))
}

// A hostname reused by a new device in another site does not show the
// old device's rows to the new site's operators.
func TestActivityOfAReusedHostnameStaysWithItsSite(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	other, err := f.store.SiteInsert(ctx, db.SiteInsertParams{Name: "Other", Slug: "other"})
	require.NoError(t, err)
	mainScope, otherScope := cairn.SiteScope{SiteIDs: []int64{f.siteID}}, cairn.SiteScope{SiteIDs: []int64{int64(other.ID)}}
	f.device(t, "old", "beta")
	_, err = f.svc.RecordActivity(ctx, devices.NewActivity{GUID: "old", Hostname: "beta", SiteID: cairn.SiteID(f.siteID), Kind: "k", Summary: "old device"})
	require.NoError(t, err)
	n, err := f.store.DeviceDelete(ctx, "old")
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	_, err = f.store.DeviceInsert(ctx, db.DeviceInsertParams{Guid: "new", Hostname: "BETA", SiteID: other.ID})
	require.NoError(t, err)

	rows, _, err := f.svc.ListActivity(ctx, otherScope, "beta", 0, 10)
	require.NoError(t, err, "the new device is in scope, so its (empty) history is listed")
	require.Empty(t, rows)
	n, err = f.svc.ClearActivity(ctx, otherScope, "beta")
	require.NoError(t, err)
	require.Zero(t, n)
	rows, _, err = f.svc.ListActivity(ctx, mainScope, "beta", 0, 10)
	require.NoError(t, err)
	require.Equal(t, []string{"old device"}, summaries(rows))
}

func summaries(rows []devices.Activity) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Summary
	}
	return out
}

func TestRecordActivityRejectsBadInput(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for _, tc := range []struct {
		field string
		a     devices.NewActivity
	}{
		{"hostname", devices.NewActivity{Kind: "k", Summary: "s"}},
		{"kind", devices.NewActivity{Hostname: "h", Kind: "Bad Kind", Summary: "s"}},
		{"summary", devices.NewActivity{Hostname: "h", Kind: "k", Summary: "  "}},
		{"status", devices.NewActivity{Hostname: "h", Kind: "k", Summary: "s", Status: "done"}},
	} {
		_, err := f.svc.RecordActivity(context.Background(), tc.a)
		var e *cairn.Error
		require.ErrorAs(t, err, &e, tc.field)
		require.Contains(t, e.Fields, tc.field)
	}
}
