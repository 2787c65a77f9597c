package devicetrust_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
	"github.com/cairn-rmm/cairn/internal/pgtest"
)

// setupDevice returns a store with one enrolled device (version 1) in a
// site, and that device's GUID and site ID.
func setupDevice(t *testing.T) (*db.Store, string, int64) {
	t.Helper()
	store := pgtest.NewDB(t)
	ctx := context.Background()
	site, err := store.SiteInsert(ctx, db.SiteInsertParams{Name: "HQ", Slug: "hq"})
	require.NoError(t, err)
	d, err := store.DeviceEnrollInsert(ctx, db.DeviceEnrollInsertParams{Guid: "g-1", Hostname: "h-1", SiteID: site.ID,
		AgentID: "agt", PublicKey: []byte("k"), Jkt: "jkt-1", Fingerprint: "fp", TokenVersion: 1, Now: time.Now()})
	require.NoError(t, err)
	require.NoError(t, store.RefreshTokenInsert(ctx, db.RefreshTokenInsertParams{TokenHash: []byte("h"), DeviceGuid: d.Guid, FamilyID: "f", ExpiresAt: time.Now().Add(time.Hour)}))
	return store, string(d.Guid), int64(site.ID)
}

func TestTrustTransitions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		actions []string
		want    string
		version int32
		errCode string
	}{
		{"quarantine", []string{"quarantine"}, "quarantined", 2, ""},
		{"unquarantine", []string{"quarantine", "unquarantine"}, "active", 3, ""},
		{"revoke from active", []string{"revoke"}, "revoked", 2, ""},
		{"revoke from quarantined", []string{"quarantine", "revoke"}, "revoked", 3, ""},
		{"quarantine twice", []string{"quarantine", "quarantine"}, "", 0, cairn.ECodeConflict},
		{"unquarantine an active device", []string{"unquarantine"}, "", 0, cairn.ECodeConflict},
		{"quarantine a revoked device", []string{"revoke", "quarantine"}, "", 0, cairn.ECodeConflict},
		{"unknown action", []string{"explode"}, "", 0, cairn.ECodeValidation},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			store, guid, _ := setupDevice(t)
			var res devicetrust.TrustResult
			var err error
			for _, a := range tc.actions {
				res, err = devicetrust.ApplyTrust(context.Background(), store, cairn.AllSites, guid, a, "alice", time.Now())
				if err != nil {
					break
				}
			}
			if tc.errCode != "" {
				require.Equal(t, tc.errCode, cairn.ErrorCode(err), "%v", err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, res.TrustState)
			require.Equal(t, tc.version, res.TokenVersion, "every action bumps the token version")
		})
	}
}

func TestRevokeRevokesRefreshTokens(t *testing.T) {
	t.Parallel()
	store, guid, _ := setupDevice(t)
	ctx := context.Background()
	_, err := devicetrust.ApplyTrust(ctx, store, cairn.AllSites, guid, "revoke", "alice", time.Now())
	require.NoError(t, err)
	tok, err := store.RefreshTokenGet(ctx, []byte("h"))
	require.NoError(t, err)
	require.NotNil(t, tok.RevokedAt)
}

func TestPurgeLeavesABarrier(t *testing.T) {
	t.Parallel()
	store, guid, _ := setupDevice(t)
	ctx := context.Background()
	res, err := devicetrust.ApplyTrust(ctx, store, cairn.AllSites, guid, "purge", "alice", time.Now())
	require.NoError(t, err)
	require.Equal(t, "purged", res.TrustState)
	_, err = store.DeviceGetByGUID(ctx, cairn.DeviceGUID(guid))
	require.True(t, db.IsNoRows(err), "the device row is gone")
	b, err := store.DevicePurgeGet(ctx, cairn.DeviceGUID(guid))
	require.NoError(t, err)
	require.Equal(t, "jkt-1", b.Jkt)
	require.Equal(t, "alice", b.PurgedBy)
	require.EqualValues(t, 1, b.TokenVersion)
}

func TestTrustRespectsScope(t *testing.T) {
	t.Parallel()
	store, guid, site := setupDevice(t)
	_, err := devicetrust.ApplyTrust(context.Background(), store, cairn.SiteScope{SiteIDs: []int64{site + 1}}, guid, "quarantine", "bob", time.Now())
	require.Equal(t, cairn.ECodeNotFound, cairn.ErrorCode(err))
	_, err = devicetrust.ApplyTrust(context.Background(), store, cairn.AllSites, "missing", "quarantine", "bob", time.Now())
	require.Equal(t, cairn.ECodeNotFound, cairn.ErrorCode(err))
}

// holdTransition starts a transaction that moves the device from active
// (version 1) to state and keeps it open, so the row stays locked; the
// returned commit ends it once another session waits on that lock.
func holdTransition(t *testing.T, store *db.Store, guid, state string) (commit func()) {
	t.Helper()
	ctx := context.Background()
	tx, err := store.Pool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(ctx) })
	q := store.WithTx(tx)
	_, err = q.DeviceTrustSet(ctx, db.DeviceTrustSetParams{Guid: cairn.DeviceGUID(guid), TrustState: state, Now: time.Now(), FromState: "active", FromVersion: 1})
	require.NoError(t, err)
	pid, err := q.BackendPID(ctx)
	require.NoError(t, err)
	return func() {
		t.Helper()
		require.Eventually(t, func() bool {
			n, err := store.BackendsBlockedBy(ctx, pid)
			return err == nil && n > 0
		}, time.Minute, 5*time.Millisecond, "the racing action never waited on the held row")
		require.NoError(t, tx.Commit(ctx))
	}
}

// Issue 13 item 11: an action that read the device before a concurrent
// one committed fails with a conflict instead of chaining from a state it
// never saw (revoked -> quarantined -> active). The racing action reads
// the device while another transaction's change is uncommitted, then
// blocks on its write until that change commits.
func TestTrustActionsRaceToConflict(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ held, racing string }{
		{"revoked", "quarantine"},
		{"revoked", "purge"},
		{"quarantined", "revoke"},
		{"quarantined", "quarantine"},
	} {
		t.Run(tc.racing+" during "+tc.held, func(t *testing.T) {
			t.Parallel()
			store, guid, _ := setupDevice(t)
			ctx := context.Background()
			commit := holdTransition(t, store, guid, tc.held)
			done := make(chan error, 1)
			go func() {
				_, err := devicetrust.ApplyTrust(ctx, store, cairn.AllSites, guid, tc.racing, "bob", time.Now())
				done <- err
			}()
			commit()
			err := <-done
			require.Equal(t, cairn.ECodeConflict, cairn.ErrorCode(err), "%v", err)
			d, err := store.DeviceGetByGUID(ctx, cairn.DeviceGUID(guid))
			require.NoError(t, err, "the device is still there")
			require.Equal(t, tc.held, d.TrustState, "the committed action stands")
			require.EqualValues(t, 2, d.TokenVersion)
		})
	}
}
