package automation_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/automation"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// beforeQuery runs hook once, right before the first statement of the
// named sqlc query is sent.
type beforeQuery struct {
	name string
	hook func()
	done atomic.Bool
}

func (b *beforeQuery) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if strings.HasPrefix(data.SQL, "-- name: "+b.name+" ") && b.done.CompareAndSwap(false, true) {
		b.hook()
	}
	return ctx
}

func (b *beforeQuery) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// A result that finishes between a dispatch's read and its write (the
// agent's answer to an earlier try came in) makes the dispatch not_found;
// the activity row it opened goes with it, because the row and the
// result's dispatch are written in one transaction. Before, the row was
// left running for ever.
func TestDispatchOfAFinishedResultLeavesNoActivityRow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name := pgtest.NewDatabase(t)
	plain, err := db.Open(ctx, pgtest.URL(name))
	require.NoError(t, err)
	t.Cleanup(plain.Close)
	race := &beforeQuery{name: "JobRunResultDispatch"}
	cfg, err := pgxpool.ParseConfig(pgtest.URL(name))
	require.NoError(t, err)
	cfg.ConnConfig.Tracer = race
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	store := db.FromPool(pool)

	site, err := plain.SiteInsert(ctx, db.SiteInsertParams{Name: "Main", Slug: "main"})
	require.NoError(t, err)
	_, err = plain.DeviceInsert(ctx, db.DeviceInsertParams{Guid: "guid-1", Hostname: "ALPHA", SiteID: site.ID})
	require.NoError(t, err)
	_, err = plain.JobRunInsert(ctx, db.JobRunInsertParams{ID: "run-1", Kind: "quick_run", Trigger: "manual", Language: "sh",
		RequestedBy: "admin", TargetCount: 1, Parameters: []byte("{}"), TimeoutSeconds: 60})
	require.NoError(t, err)
	require.NoError(t, plain.JobRunResultsInsert(ctx, db.JobRunResultsInsertParams{RunID: "run-1", Guids: []string{"guid-1"},
		Hostnames: []string{"ALPHA"}, SiteIds: []int64{int64(site.ID)}, Statuses: []string{automation.StatusPending},
		ErrorCodes: []string{""}, ErrorMessages: []string{""}, Signed: []string{`{"payload":"signed"}`}}))
	race.hook = func() {
		_, err := plain.JobRunResultFinish(ctx, db.JobRunResultFinishParams{RunID: "run-1", DeviceGuid: "guid-1",
			Status: automation.StatusFailed, ErrorCode: "agent_error", ErrorMessage: "answered before the retry"})
		require.NoError(t, err)
	}

	svc := automation.NewService(store, nil, devices.NewService(store, nil, devices.Config{}))
	_, err = svc.Dispatch(ctx, "run-1", "guid-1", "op-1")
	require.Equal(t, cairn.ECodeNotFound, cairn.ErrorCode(err), "%v", err)
	require.True(t, race.done.Load(), "the result finished between the dispatch's read and its write")

	rows, err := plain.DeviceActivityList(ctx, db.DeviceActivityListParams{Hostname: "ALPHA", AllSites: true,
		SiteIds: []int64{}, MaxRows: 10})
	require.NoError(t, err)
	require.Empty(t, rows, "no activity row is left running")
}
