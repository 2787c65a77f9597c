package cluster_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/nacl/box"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/aegis"
	"github.com/cairn-rmm/cairn/internal/authtest"
	"github.com/cairn-rmm/cairn/internal/cluster"
	"github.com/cairn-rmm/cairn/internal/internalauth"
	"github.com/cairn-rmm/cairn/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

type fixture struct {
	svc      *cluster.Service
	internal *internalauth.Service
}

func setup(t *testing.T) *fixture {
	t.Helper()
	store := pgtest.NewDB(t)
	cipher := aegis.New(aegis.PGStore{Q: store.Queries, S: store}, authtest.CheapKDF)
	cipher.Register(internalauth.SealedColumns()...)
	require.NoError(t, cipher.Setup(context.Background(), "correct horse battery staple"))
	in := internalauth.New(store.Queries, cipher, nil)
	return &fixture{svc: cluster.New(store, in, nil), internal: in}
}

type joiner struct {
	pub, priv *[32]byte
}

func newJoiner(t *testing.T) joiner {
	pub, priv, err := box.GenerateKey(rand.Reader)
	require.NoError(t, err)
	return joiner{pub: pub, priv: priv}
}

func (j joiner) request(code, role string, sites ...string) cluster.JoinRequest {
	return cluster.JoinRequest{Code: code, Role: role, Name: "host-b", Sites: sites, Version: "v1.2.3",
		PublicKey: base64.StdEncoding.EncodeToString(j.pub[:])}
}

func TestJoinApproveSealsTheHandoffToTheJoinersKeyOnce(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	code, err := f.svc.IssueJoinCode(ctx, cluster.RoleWorker, "alice")
	require.NoError(t, err)
	j := newJoiner(t)
	joined, err := f.svc.Join(ctx, j.request(code.Code, cluster.RoleWorker, "hq"))
	require.NoError(t, err)
	require.Equal(t, cluster.StatePending, joined.State)
	require.Equal(t, cluster.Fingerprint(j.pub[:]), joined.Fingerprint)

	// The code is spent.
	_, err = f.svc.Join(ctx, newJoiner(t).request(code.Code, cluster.RoleWorker, "hq"))
	require.Equal(t, cluster.ECodeJoinCodeInvalid, cairn.ErrorCode(err))

	// The channel needs the token.
	_, err = f.svc.Follow(ctx, joined.AdmissionID, "cjt_wrong", 0)
	require.Equal(t, cluster.ECodeJoinTokenInvalid, cairn.ErrorCode(err))
	p, err := f.svc.Follow(ctx, joined.AdmissionID, joined.Token, 0)
	require.NoError(t, err)
	require.Nil(t, p.Handoff)
	require.Equal(t, "join_requested", p.Events[0].Kind)

	state, err := f.svc.Settle(ctx, joined.AdmissionID, cluster.DecisionApprove, "alice", "https://engine.test")
	require.NoError(t, err)
	require.Equal(t, cluster.StateApproved, state)
	// A second decision (a retried activity, a late cancel) changes nothing.
	state, err = f.svc.Settle(ctx, joined.AdmissionID, cluster.DecisionCancel, "bob", "https://engine.test")
	require.NoError(t, err)
	require.Equal(t, cluster.StateApproved, state)
	_, err = f.svc.Pending(ctx, joined.AdmissionID)
	require.Equal(t, cluster.ECodeAdmissionSettled, cairn.ErrorCode(err))

	p, err = f.svc.Follow(ctx, joined.AdmissionID, joined.Token, p.Events[len(p.Events)-1].ID)
	require.NoError(t, err)
	require.NotNil(t, p.Handoff)
	// Only the joiner's private key opens it; it holds an Internal key
	// made for this admission alone.
	_, err = cluster.OpenHandoff(p.Handoff, newJoiner(t).pub, newJoiner(t).priv)
	require.Error(t, err)
	h, err := cluster.OpenHandoff(p.Handoff, j.pub, j.priv)
	require.NoError(t, err)
	require.Equal(t, "https://engine.test", h.EngineURL)
	require.Equal(t, []string{"hq"}, h.Sites)
	secret, err := f.internal.Secret(ctx, h.InternalKeyID)
	require.NoError(t, err)
	require.Equal(t, base64.StdEncoding.EncodeToString(secret), h.InternalKeySecret)
	keys, err := f.internal.List(ctx)
	require.NoError(t, err)
	require.Len(t, keys, 1)
	require.Equal(t, joined.AdmissionID, *keys[0].AdmissionID, "the member's own key")

	require.NoError(t, f.svc.Delivered(ctx, joined.AdmissionID))
	p, err = f.svc.Follow(ctx, joined.AdmissionID, joined.Token, 0)
	require.NoError(t, err)
	require.Nil(t, p.Handoff, "the box is dropped once delivered")
	require.True(t, p.Admission.Delivered)
	require.Equal(t, "alice", p.Admission.DecidedBy)

	ev, err := f.svc.Events(ctx, 10)
	require.NoError(t, err)
	kinds := []string{}
	for _, e := range ev {
		kinds = append(kinds, e.Kind)
		require.NotContains(t, e.Message, code.Code)
		require.NotContains(t, e.Message, joined.Token)
		require.NotContains(t, e.Message, h.InternalKeySecret)
	}
	require.Equal(t, []string{"handoff_delivered", "admission_approved", "join_requested", "join_code_issued"}, kinds)
}

func TestJoinRefusals(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	engineCode, err := f.svc.IssueJoinCode(ctx, cluster.RoleEngine, "alice")
	require.NoError(t, err)
	j := newJoiner(t)
	for _, c := range []struct {
		name  string
		req   cluster.JoinRequest
		field string
	}{
		{"no code", j.request("", cluster.RoleEngine), "code"},
		{"bad role", j.request(engineCode.Code, "database"), "role"},
		{"worker without sites", j.request(engineCode.Code, cluster.RoleWorker), "sites"},
		{"engine with sites", j.request(engineCode.Code, cluster.RoleEngine, "hq"), "sites"},
		{"bad slug", j.request(engineCode.Code, cluster.RoleWorker, "HQ!"), "sites"},
		{"bad key", func() cluster.JoinRequest {
			r := j.request(engineCode.Code, cluster.RoleEngine)
			r.PublicKey = "AAAA"
			return r
		}(), "public_key"},
		{"bad name", func() cluster.JoinRequest {
			r := j.request(engineCode.Code, cluster.RoleEngine)
			r.Name = "-x y"
			return r
		}(), "name"},
	} {
		_, err := f.svc.Join(ctx, c.req)
		require.Equal(t, cairn.ECodeValidation, cairn.ErrorCode(err), c.name)
		var ce *cairn.Error
		require.ErrorAs(t, err, &ce)
		require.Contains(t, ce.Fields, c.field, c.name)
	}
	// A code issued for an Engine replica does not admit a worker, and
	// is not spent by trying.
	_, err = f.svc.Join(ctx, j.request(engineCode.Code, cluster.RoleWorker, "hq"))
	require.Equal(t, cluster.ECodeJoinCodeInvalid, cairn.ErrorCode(err))
	_, err = f.svc.Join(ctx, j.request("cjc_unknown", cluster.RoleEngine))
	require.Equal(t, cluster.ECodeJoinCodeInvalid, cairn.ErrorCode(err))
	joined, err := f.svc.Join(ctx, j.request(engineCode.Code, cluster.RoleEngine))
	require.NoError(t, err)
	state, err := f.svc.Settle(ctx, joined.AdmissionID, cluster.DecisionCancel, "bob", "")
	require.NoError(t, err)
	require.Equal(t, cluster.StateCancelled, state)
	p, err := f.svc.Follow(ctx, joined.AdmissionID, joined.Token, 0)
	require.NoError(t, err)
	require.Nil(t, p.Handoff, "a cancelled joiner gets nothing")
	_, err = f.svc.Pending(ctx, "not-a-uuid")
	require.Equal(t, cairn.ECodeNotFound, cairn.ErrorCode(err))
	_, err = f.svc.IssueJoinCode(ctx, "database", "alice")
	require.Equal(t, cairn.ECodeValidation, cairn.ErrorCode(err))
}

func TestMembersAndBanner(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	started := time.Now().Add(-time.Minute).UTC()
	require.NoError(t, f.svc.Heartbeat(ctx, cluster.Self{MemberID: "m-1", Role: cluster.RoleEngine, Name: "a:1", Version: "v1", StartedAt: started}))
	require.NoError(t, f.svc.Heartbeat(ctx, cluster.Self{MemberID: "m-2", Role: cluster.RoleWorker, Name: "b:2", Version: "v1",
		URL: "https://b.test", StartedAt: started, Sites: func() []string { return []string{"west", "east"} }}))
	members, err := f.svc.Members(ctx)
	require.NoError(t, err)
	require.Len(t, members, 2)
	require.Equal(t, "engine", members[0].Role)
	require.Equal(t, []string{"east", "west"}, members[1].Sites)
	require.Equal(t, "up", members[1].State)
	require.Equal(t, cluster.Banner{Severity: "none", Versions: []string{"v1"}}, cluster.BannerOf(members, nil))

	members[1].Version = "v2"
	b := cluster.BannerOf(members, []cluster.Admission{{State: cluster.StatePending}})
	require.Equal(t, "warning", b.Severity)
	require.Equal(t, 1, b.PendingAdmissions)
	require.Equal(t, "members run 2 different versions; 1 admission(s) wait on a decision", b.Message)
	members[0].State = "down"
	require.Equal(t, 1, cluster.BannerOf(members, nil).MembersDown)
	require.Equal(t, "primary", f.svc.Postgres(ctx).Role)

	// A running process keeps its row; stopping gracefully removes it.
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.svc.Run(runCtx, cluster.Self{MemberID: "m-3", Role: cluster.RoleEngine, Name: "c:3", Version: "v1", StartedAt: started},
			slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	has := func(id string) bool {
		list, err := f.svc.Members(ctx)
		require.NoError(t, err)
		for _, m := range list {
			if m.MemberID == id {
				return true
			}
		}
		return false
	}
	require.Eventually(t, func() bool { return has("m-3") }, time.Minute, 20*time.Millisecond)
	stop()
	<-done
	require.False(t, has("m-3"))
	require.True(t, has("m-1"), "rows of other processes stay")
}
