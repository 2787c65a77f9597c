package grants_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/aegis"
	"github.com/cairn-rmm/cairn/internal/authtest"
	"github.com/cairn-rmm/cairn/internal/grants"
	"github.com/cairn-rmm/cairn/internal/pgtest"
	"github.com/cairn-rmm/cairn/internal/scriptsign"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

type fixture struct {
	store  *db.Store
	grants *grants.Service
	signer *scriptsign.Signer
	clock  *authtest.Clock
}

func setup(t testing.TB) fixture {
	t.Helper()
	store := pgtest.NewDB(t)
	c := aegis.New(aegis.PGStore{Q: store.Queries, S: store}, authtest.CheapKDF)
	require.NoError(t, c.Setup(context.Background(), "correct horse battery staple"))
	clk := authtest.NewClock()
	signer := scriptsign.New(store, c)
	return fixture{store: store, grants: grants.New(store, c, signer, clk.Now), signer: signer, clock: clk}
}

var granted = grants.Operation{GUID: "guid-1", OperationID: "op-1", Type: "file_management_request",
	Payload: []byte(`{"action":"write_text","path":"/etc/motd"}`), Actor: "admin"}

// Only the exact request that was granted goes out (issue 21 item 1): a
// grant is useless for another device, operation, type or payload.
func TestVerifyRefusesAnythingButTheGrantedRequest(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	grant, err := f.grants.Sign(ctx, granted, time.Minute)
	require.NoError(t, err)
	require.NoError(t, f.grants.Verify(ctx, grant, granted))
	// A transfer asks its agent again under one grant: "<id>:<attempt>".
	retry := granted
	retry.OperationID = "op-1:3"
	require.NoError(t, f.grants.Verify(ctx, grant, retry))

	other := func(change func(*grants.Operation)) grants.Operation {
		op := granted
		change(&op)
		return op
	}
	for _, tc := range []struct {
		name  string
		grant string
		op    grants.Operation
	}{
		{"no grant", "", granted},
		{"garbage", "not.a.jwt", granted},
		{"tampered", grant[:len(grant)-4] + "AAAA", granted},
		{"another device", grant, other(func(o *grants.Operation) { o.GUID = "guid-2" })},
		{"another operation", grant, other(func(o *grants.Operation) { o.OperationID = "op-2" })},
		{"an operation sharing the prefix", grant, other(func(o *grants.Operation) { o.OperationID = "op-10" })},
		{"another type", grant, other(func(o *grants.Operation) { o.Type = "shell_open" })},
		{"another payload", grant, other(func(o *grants.Operation) { o.Payload = []byte(`{"action":"write_text","path":"/etc/cron.d/x"}`) })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := f.grants.Verify(ctx, tc.grant, tc.op)
			require.True(t, cairn.IsCode(err, grants.ECodeNotGranted), "%v", err)
		})
	}
}

func TestVerifyRefusesAnExpiredGrant(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	grant, err := f.grants.Sign(ctx, granted, time.Minute)
	require.NoError(t, err)
	f.clock.Advance(2 * time.Minute)
	err = f.grants.Verify(ctx, grant, granted)
	require.True(t, cairn.IsCode(err, grants.ECodeNotGranted), "%v", err)
	require.Contains(t, err.Error(), "expired")
}

// A grant made by another deployment's key (or one forged with any key
// but this deployment's) does not verify; a process whose cipher is locked
// (a site worker) verifies with the stored public half, but cannot sign.
func TestGrantKeysAreTheDeployments(t *testing.T) {
	t.Parallel()
	a, b := setup(t), setup(t)
	ctx := context.Background()
	foreign, err := b.grants.Sign(ctx, granted, time.Minute)
	require.NoError(t, err)
	own, err := a.grants.Sign(ctx, granted, time.Minute)
	require.NoError(t, err)
	require.True(t, cairn.IsCode(a.grants.Verify(ctx, foreign, granted), grants.ECodeNotGranted))

	locked := grants.New(a.store, aegis.New(aegis.PGStore{Q: a.store.Queries, S: a.store}, authtest.CheapKDF), nil, a.clock.Now)
	require.NoError(t, locked.Verify(ctx, own, granted))
	_, err = locked.Sign(ctx, granted, time.Minute)
	require.True(t, cairn.IsCode(err, cairn.ECodeAegisLocked), "%v", err)
}

// BenchmarkGrant is one operation's grant: signed by the API, verified by
// the activity that sends to the agent.
func BenchmarkGrant(b *testing.B) {
	f := setup(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		g, err := f.grants.Sign(ctx, granted, time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		if err := f.grants.Verify(ctx, g, granted); err != nil {
			b.Fatal(err)
		}
	}
}

// The grant an agent checks (agent/proto/grant.go) is signed by the
// script key agents trust and names exactly the request; anything else is
// refused by the agent's own check.
func TestAgentGrantVerifiesOnlyForItsRequest(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	trusted, err := f.signer.TrustedPublicKeys(ctx)
	require.NoError(t, err)
	now := f.clock.Now()
	g, err := f.grants.AgentGrant(ctx, granted, now.Add(time.Minute))
	require.NoError(t, err)
	env := proto.Envelope{Type: granted.Type, ID: "r1", OperationID: string(granted.OperationID), Payload: granted.Payload}
	require.NoError(t, proto.VerifyGrant(g, trusted, string(granted.GUID), env, now))

	other := env
	other.Payload = []byte(`{"action":"write_text","path":"/etc/cron.d/x"}`)
	require.ErrorIs(t, proto.VerifyGrant(g, trusted, string(granted.GUID), other, now), proto.ErrGrantMismatch)
	require.ErrorIs(t, proto.VerifyGrant(g, trusted, "guid-2", env, now), proto.ErrGrantMismatch)
	require.ErrorIs(t, proto.VerifyGrant(nil, trusted, string(granted.GUID), env, now), proto.ErrGrantMissing)
	require.ErrorIs(t, proto.VerifyGrant(g, trusted, string(granted.GUID), env, now.Add(2*time.Minute)), proto.ErrGrantExpired)
	forged := *g
	forged.Signature = append([]byte(nil), g.Signature...)
	forged.Signature[0] ^= 1
	require.ErrorIs(t, proto.VerifyGrant(&forged, trusted, string(granted.GUID), env, now), proto.ErrGrantInvalid)
}
