package agentupdates

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/events"
	"github.com/cairn-rmm/cairn/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// oneBuild is a catalog with one build for every platform.
type oneBuild struct{}

func (oneBuild) Current(_ context.Context, platform string) (Artifact, error) {
	return Artifact{ID: platform + "-1", Platform: platform, BuildID: "build-2", SHA256: "00", Size: 1}, nil
}

type fixture struct {
	store *db.Store
	svc   *Service
	guid  string
}

func setup(t *testing.T) fixture {
	t.Helper()
	store := pgtest.NewDB(t)
	ctx := t.Context()
	site, err := store.SiteInsert(ctx, db.SiteInsertParams{Name: "HQ", Slug: "hq"})
	require.NoError(t, err)
	d, err := store.DeviceEnrollInsert(ctx, db.DeviceEnrollInsertParams{Guid: "g-1", Hostname: "h-1", SiteID: site.ID,
		AgentID: "agt", OperatingSystem: "Debian GNU/Linux 13", PublicKey: []byte("k"), Jkt: "jkt-1", Fingerprint: "fp",
		TokenVersion: 1, AgentVersion: "build-1", Now: time.Now()})
	require.NoError(t, err)
	bus := events.NewBus(store, nil)
	devs := devices.NewService(store, bus, devices.Config{})
	return fixture{store: store, svc: New(store, devs, bus, oneBuild{}, nil), guid: string(d.Guid)}
}

// The agent can report its outcome at any moment after the request,
// also before the workflow records the start: the outcome wins, in the
// operation, its job result and run, and its activity row, whichever
// order the two arrive in.
func TestOutcomeWinsOverALateStart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, f fixture, opID string)
	}{
		{"start then outcome", func(t *testing.T, f fixture, opID string) {
			require.NoError(t, f.svc.Begin(t.Context(), cairn.OperationID(opID)))
			f.finish(t, opID)
		}},
		{"outcome then start", func(t *testing.T, f fixture, opID string) {
			f.finish(t, opID)
			require.NoError(t, f.svc.Begin(t.Context(), cairn.OperationID(opID)))
		}},
		{"outcome between the start's read and its write", func(t *testing.T, f fixture, opID string) {
			read, err := f.store.AgentUpdateOperationGet(t.Context(), cairn.OperationID(opID))
			require.NoError(t, err)
			f.finish(t, opID)
			require.NoError(t, f.svc.begin(t.Context(), read))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			ctx := t.Context()
			runID, opID := f.requestUpdate(t)

			tc.run(t, f, opID)

			op, err := f.store.AgentUpdateOperationGet(ctx, cairn.OperationID(opID))
			require.NoError(t, err)
			require.Equal(t, StatusSucceeded, op.Status)
			var result, run string
			require.NoError(t, f.store.Pool.QueryRow(ctx, `SELECT status FROM job_run_results WHERE run_id = $1`, runID).Scan(&result))
			require.NoError(t, f.store.Pool.QueryRow(ctx, `SELECT status FROM job_runs WHERE id = $1`, runID).Scan(&run))
			require.Equal(t, "succeeded", result)
			require.Equal(t, "succeeded", run)
			require.NotContains(t, f.updateActivity(t, op.Hostname), devices.ActivityRunning, "no activity row is left running")
		})
	}
}

// A device purged while its update starts takes the operation with it:
// the start answers not_found, and an activity row it had opened (which
// outlives the device) is closed, never left running.
func TestStartOfAPurgedDevice(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// begin starts read while purge purges the device.
		begin   func(t *testing.T, f fixture, read db.AgentUpdateOperation, purge func()) error
		openRow bool
	}{
		{"purged before the activity row", func(t *testing.T, f fixture, read db.AgentUpdateOperation, purge func()) error {
			purge()
			return f.svc.begin(t.Context(), read)
		}, false},
		{"purged between the activity row and the start's write", func(t *testing.T, f fixture, read db.AgentUpdateOperation, purge func()) error {
			// Hold the operation's row so that begin opens its activity
			// row and then waits at the write; purge while it waits.
			tx, err := f.store.Pool.Begin(t.Context())
			require.NoError(t, err)
			defer tx.Rollback(context.Background())
			_, err = tx.Exec(t.Context(), `SELECT 1 FROM agent_update_operations WHERE id = $1 FOR UPDATE`, read.ID)
			require.NoError(t, err)
			done := make(chan error, 1)
			go func() { done <- f.svc.begin(t.Context(), read) }()
			require.Eventually(t, func() bool {
				var waiting bool
				require.NoError(t, f.store.Pool.QueryRow(t.Context(), `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
					WHERE wait_event_type = 'Lock' AND query LIKE '%UPDATE agent_update_operations%')`).Scan(&waiting))
				return waiting
			}, time.Minute, 20*time.Millisecond)
			n, err := f.store.WithTx(tx).DeviceDelete(t.Context(), cairn.DeviceGUID(f.guid))
			require.NoError(t, err)
			require.EqualValues(t, 1, n)
			require.NoError(t, tx.Commit(t.Context()))
			return <-done
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			ctx := t.Context()
			_, opID := f.requestUpdate(t)
			read, err := f.store.AgentUpdateOperationGet(ctx, cairn.OperationID(opID))
			require.NoError(t, err)
			purge := func() {
				n, err := f.store.DeviceDelete(ctx, cairn.DeviceGUID(f.guid))
				require.NoError(t, err)
				require.EqualValues(t, 1, n)
			}

			err = tc.begin(t, f, read, purge)
			require.Equal(t, cairn.ECodeNotFound, cairn.ErrorCode(err), "%v", err)
			statuses := f.updateActivity(t, read.Hostname)
			if tc.openRow {
				require.Equal(t, []string{devices.ActivityFailed}, statuses, "the row opened is closed as failed")
			} else {
				require.Empty(t, statuses)
			}
		})
	}
}

// A start recorded after the outcome leaves the job result's outcome.
func TestResultStartKeepsAnOutcome(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	runID, opID := f.requestUpdate(t)
	f.finish(t, opID)
	require.NoError(t, f.store.AgentUpdateResultStart(ctx, db.AgentUpdateResultStartParams{RunID: cairn.RunID(runID), DeviceGuid: cairn.DeviceGUID(f.guid)}))
	var result string
	require.NoError(t, f.store.Pool.QueryRow(ctx, `SELECT status FROM job_run_results WHERE run_id = $1`, runID).Scan(&result))
	require.Equal(t, "succeeded", result)
}

// requestUpdate asks for an update of the fixture's device: its job run
// and its one operation.
func (f fixture) requestUpdate(t *testing.T) (runID, opID string) {
	t.Helper()
	req, err := f.svc.Request(t.Context(), cairn.AllSites, "alice", []string{f.guid})
	require.NoError(t, err)
	require.Len(t, req.Updates, 1)
	return string(req.RunID), string(req.Updates[0].OperationID)
}

func (f fixture) finish(t *testing.T, opID string) {
	t.Helper()
	status, err := f.svc.Finish(t.Context(), opID, StatusSucceeded, "", "completed")
	require.NoError(t, err)
	require.Equal(t, StatusSucceeded, status)
}

// updateActivity is the statuses of the agent-update activity rows of
// hostname (by hostname: a row outlives its purged device).
func (f fixture) updateActivity(t *testing.T, hostname string) []string {
	t.Helper()
	rows, err := f.store.Pool.Query(t.Context(), `SELECT status FROM device_activity WHERE hostname = $1 AND kind = $2`, hostname, activityKind)
	require.NoError(t, err)
	defer rows.Close()
	var statuses []string
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		statuses = append(statuses, s)
	}
	require.NoError(t, rows.Err())
	return statuses
}
