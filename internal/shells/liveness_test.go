package shells_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/pgtest"
	"github.com/cairn-rmm/cairn/internal/shells"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// A session whose bridging process stopped confirming it is closed by the
// sweep, with its activity row; the sweep leaves confirmed ones alone.
func TestCloseLostSessions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := pgtest.NewDB(t)
	site, err := store.SiteInsert(ctx, db.SiteInsertParams{Name: "Shells", Slug: "shells"})
	require.NoError(t, err)
	_, err = store.DeviceInsert(ctx, db.DeviceInsertParams{Guid: "guid-1", Hostname: "host-1", SiteID: site.ID})
	require.NoError(t, err)
	devs := devices.NewService(store, nil, devices.Config{})
	svc := shells.New(store, devs, nil, shells.Config{})
	target := devices.OperationTarget{GUID: "guid-1", Hostname: "host-1", SiteID: site.ID, SiteSlug: "shells"}

	est, err := svc.Establish(ctx, target, "alice", shells.Options{})
	require.NoError(t, err)
	sess, _, err := svc.ClaimBrowser(ctx, est.ID, est.Token, "alice", "replica-gone")
	require.NoError(t, err)
	require.NotZero(t, sess.ActivityID)

	reg := shells.NewRegistry()
	n, err := svc.CloseLost(ctx, time.Hour)
	require.NoError(t, err)
	require.Zero(t, n, "confirmed within the window: kept")
	got, err := svc.Get(ctx, cairn.AllSites, est.ID)
	require.NoError(t, err)
	require.Equal(t, "connecting", got.State)
	require.Empty(t, reg.IDs())

	n, err = svc.CloseLost(ctx, time.Nanosecond)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	got, err = svc.Get(ctx, cairn.AllSites, est.ID)
	require.NoError(t, err)
	require.Equal(t, "closed", got.State)
	require.Equal(t, shells.ReasonLost, got.CloseReason)
	act, err := devs.GetActivity(ctx, cairn.AllSites, sess.ActivityID)
	require.NoError(t, err)
	require.Equal(t, devices.ActivityCompleted, act.Status)
	require.Contains(t, act.Summary, shells.ReasonLost)

	n, err = svc.CloseLost(ctx, time.Nanosecond)
	require.NoError(t, err)
	require.Zero(t, n, "closed once")
}
