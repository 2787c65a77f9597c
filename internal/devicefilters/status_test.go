package devicefilters_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devicefilters"
	"github.com/cairn-rmm/cairn/internal/devices"
)

// The status condition, the status drilldown and the status sort decide
// exactly as devices.Status does, at and around both window boundaries
// (now has sub-microsecond digits, stored times are whole microseconds).
func TestStatusMatchesDevicesRuleAtBoundaries(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	window := 90 * time.Second
	f.svc = devicefilters.New(f.store, devicefilters.Config{OnlineWindow: window, SocketWindow: devices.SocketWindow,
		Now: func() time.Time { return now }})
	offsets := []time.Duration{-2 * time.Microsecond, -time.Microsecond, 0, time.Microsecond, 2 * time.Microsecond, -time.Hour}
	replicas := []*string{nil, ptr(""), ptr("replica-1")}
	n := 0
	for _, seen := range append(offsets, 1) { // 1: never seen
		for _, sock := range append(offsets, 1) {
			for _, rep := range replicas {
				n++
				guid := fmt.Sprintf("g%03d", n)
				_, err := f.store.DeviceInsert(ctx, db.DeviceInsertParams{Guid: cairn.DeviceGUID(guid), Hostname: "h-" + guid, SiteID: cairn.SiteID(f.sites["alpha"])})
				require.NoError(t, err)
				var ls, ss *time.Time
				if seen != 1 {
					ls = ptr(now.Add(-window).Add(seen))
				}
				if sock != 1 {
					ss = ptr(now.Add(-devices.SocketWindow).Add(sock))
				}
				f.exec(t, `UPDATE devices SET last_seen = $2, socket_seen_at = $3, socket_replica = $4 WHERE guid = $1`, guid, ls, ss, rep)
			}
		}
	}
	all, err := f.svc.Page(ctx, cairn.AllSites, devicefilters.PageQuery{Limit: 1000})
	require.NoError(t, err)
	require.Len(t, all.Rows, n)
	want := map[string]string{}
	counts := map[string]int{}
	for _, r := range all.Rows {
		st := devices.Status(r.LastSeen, r.SocketReplica, r.SocketSeenAt, now, window)
		want[string(r.GUID)] = st
		counts[st]++
	}
	for _, st := range []string{devices.Connected, devices.Disconnected, devices.Offline} {
		require.NotZero(t, counts[st], "the grid covers %s", st)
		byTree := statusGUIDs(t, f, devicefilters.PageQuery{Filters: []devicefilters.Node{tree(t,
			`{"match":"all","conditions":[{"field":"status","op":"is","value":"`+st+`"}]}`)}, Limit: 1000})
		byDrilldown := statusGUIDs(t, f, devicefilters.PageQuery{Status: st, Limit: 1000})
		notTree := statusGUIDs(t, f, devicefilters.PageQuery{Filters: []devicefilters.Node{tree(t,
			`{"match":"all","conditions":[{"field":"status","op":"is_not","value":"`+st+`"}]}`)}, Limit: 1000})
		for guid, s := range want {
			require.Equal(t, s == st, byTree[guid], "%s is %s by Go", guid, s)
			require.Equal(t, s == st, byDrilldown[guid], guid)
			require.Equal(t, s != st, notTree[guid], guid)
		}
	}
	// The status sort orders Connected, Disconnected, Offline.
	sorted, err := f.svc.Page(ctx, cairn.AllSites, devicefilters.PageQuery{Sort: devicefilters.Sort{Column: "status"}, Limit: 1000})
	require.NoError(t, err)
	rank := map[string]int{devices.Connected: 0, devices.Disconnected: 1, devices.Offline: 2}
	for i := 1; i < len(sorted.Rows); i++ {
		a, b := sorted.Rows[i-1], sorted.Rows[i]
		require.LessOrEqual(t, rank[want[string(a.GUID)]], rank[want[string(b.GUID)]])
		if want[string(a.GUID)] == want[string(b.GUID)] {
			require.Less(t, a.GUID, b.GUID, "ties break by guid")
		}
	}
}

func statusGUIDs(t *testing.T, f *fixture, q devicefilters.PageQuery) map[string]bool {
	t.Helper()
	page, err := f.svc.Page(context.Background(), cairn.AllSites, q)
	require.NoError(t, err)
	out := map[string]bool{}
	for _, r := range page.Rows {
		out[string(r.GUID)] = true
	}
	return out
}

func ptr[T any](v T) *T { return &v }
