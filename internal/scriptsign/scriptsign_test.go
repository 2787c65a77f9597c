package scriptsign_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/aegis"
	"github.com/cairn-rmm/cairn/internal/authtest"
	"github.com/cairn-rmm/cairn/internal/pgtest"
	"github.com/cairn-rmm/cairn/internal/scriptsign"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func setup(t *testing.T) (*db.Store, *aegis.Cipher, *scriptsign.Signer) {
	t.Helper()
	store := pgtest.NewDB(t)
	cipher := aegis.New(aegis.PGStore{Q: store.Queries}, authtest.CheapKDF)
	require.NoError(t, cipher.Setup(context.Background(), "correct horse battery staple"))
	return store, cipher, scriptsign.New(store, cipher)
}

func TestSignVerifiesWithTrustedKeyOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, _, s := setup(t)
	sg, err := s.Sign(ctx, []byte(`{"run_id":"r1"}`))
	require.NoError(t, err)
	keys, err := s.TrustedPublicKeys(ctx)
	require.NoError(t, err)
	require.Len(t, keys, 1)
	got, err := sg.Verify(keys)
	require.NoError(t, err)
	require.Equal(t, `{"run_id":"r1"}`, string(got))

	tampered := sg
	tampered.Payload = []byte(`{"run_id":"r2"}`)
	_, err = tampered.Verify(keys)
	require.ErrorIs(t, err, proto.ErrSignatureInvalid)

	// Another Engine's key is not trusted.
	_, _, other := setup(t)
	otherKeys, err := other.TrustedPublicKeys(ctx)
	require.NoError(t, err)
	_, err = sg.Verify(otherKeys)
	require.ErrorIs(t, err, proto.ErrSignatureInvalid)
}

func TestSignNeedsTheCipher(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, cipher, s := setup(t)
	_, err := s.Sign(ctx, []byte("x"))
	require.NoError(t, err)
	cipher.Lock()
	_, err = s.Sign(ctx, []byte("x"))
	require.Equal(t, cairn.ECodeAegisLocked, cairn.ErrorCode(err))
	require.Equal(t, cairn.ECodeAegisLocked, cairn.ErrorCode(s.Rotate(ctx, false)))
	// A process that never unlocked (a worker) still names the keys.
	worker := scriptsign.New(store, aegis.New(aegis.PGStore{Q: store.Queries}, authtest.CheapKDF))
	keys, err := worker.TrustedPublicKeys(ctx)
	require.NoError(t, err)
	require.Len(t, keys, 1)
}

func TestRotationKeepsThePreviousKeyUntilTheNext(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, cipher, s := setup(t)
	old, err := s.Sign(ctx, []byte("signed before rotation"))
	require.NoError(t, err)
	first, err := s.TrustedPublicKeys(ctx)
	require.NoError(t, err)

	require.NoError(t, s.Rotate(ctx, false))
	keys, err := s.TrustedPublicKeys(ctx)
	require.NoError(t, err)
	require.Len(t, keys, 2)
	require.Equal(t, first[0], keys[1], "the old active key is now the previous one, listed second")
	_, err = old.Verify(keys)
	require.NoError(t, err, "payloads signed before the rotation stay valid")
	fresh, err := s.Sign(ctx, []byte("after"))
	require.NoError(t, err)
	require.NotEqual(t, old.KeyID, fresh.KeyID)
	_, err = fresh.Verify(first)
	require.ErrorIs(t, err, proto.ErrSignatureInvalid, "an agent with only the old key refuses new payloads")

	st, err := s.Status(ctx)
	require.NoError(t, err)
	require.Len(t, st.Keys, 2)
	require.Equal(t, scriptsign.StateActive, st.Keys[0].State)
	require.Equal(t, fresh.KeyID, st.Keys[0].KeyID)
	require.Equal(t, scriptsign.StatePrevious, st.Keys[1].State)

	// A second rotation retires the first key: its payloads are refused.
	require.NoError(t, s.Rotate(ctx, false))
	keys, err = s.TrustedPublicKeys(ctx)
	require.NoError(t, err)
	require.Len(t, keys, 2)
	_, err = old.Verify(keys)
	require.ErrorIs(t, err, proto.ErrSignatureInvalid)
	_, err = fresh.Verify(keys)
	require.NoError(t, err)

	// Another process sees the rotation too (no shared memory).
	other := scriptsign.New(store, cipher)
	otherKeys, err := other.TrustedPublicKeys(ctx)
	require.NoError(t, err)
	require.Equal(t, keys, otherKeys)
}

func TestForceResetCipherReplacesTheKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, cipher, s := setup(t)
	before, err := s.Sign(ctx, []byte("x"))
	require.NoError(t, err)
	require.NoError(t, store.AegisStateDelete(ctx))
	cipher.Lock()
	require.NoError(t, cipher.Setup(ctx, "a brand new passphrase"))
	// A fresh process (no cached key) cannot open the sealed seed any more
	// and rotates to a key it can use.
	s2 := scriptsign.New(store, cipher)
	after, err := s2.Sign(ctx, []byte("y"))
	require.NoError(t, err)
	require.NotEqual(t, before.KeyID, after.KeyID)
	keys, err := s2.TrustedPublicKeys(ctx)
	require.NoError(t, err)
	_, err = before.Verify(keys)
	require.NoError(t, err, "the unreadable key stays trusted as the previous one")
}

// link decodes a chain link.
func decodeLink(t *testing.T, sg proto.Signed) proto.KeyList {
	t.Helper()
	var l proto.KeyList
	require.NoError(t, json.Unmarshal(sg.Payload, &l))
	return l
}

// Every rotation writes a link signed by the outgoing key; an agent that
// pinned the first key walks the chain to the current keys, two
// rotations later, with nothing but the links' signatures.
func TestRotationsWriteASignedChain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, cipher, s := setup(t)
	pinned, err := s.TrustedPublicKeys(ctx)
	require.NoError(t, err)
	require.NoError(t, s.Rotate(ctx, true))
	require.NoError(t, s.Rotate(ctx, true))

	tr, err := scriptsign.New(store, cipher).Trust(ctx)
	require.NoError(t, err)
	require.Len(t, tr.Chain, 2)
	require.Equal(t, proto.PurposeScriptKeys, decodeLink(t, tr.Chain[0]).Purpose)
	_, err = tr.Chain[0].Verify(pinned)
	require.NoError(t, err, "the first link is signed by the key agents pinned")
	keys, seq, changed := proto.WalkChain(proto.PurposeScriptKeys, pinned, 0, tr.Chain, nil)
	require.True(t, changed)
	require.EqualValues(t, 2, seq)
	require.Equal(t, tr.TrustedPublicKeys, keys)

	// A payload signed by the current key verifies with the keys reached.
	sg, err := s.Sign(ctx, []byte("after two rotations"))
	require.NoError(t, err)
	_, err = sg.Verify(keys)
	require.NoError(t, err)
}

// A rotation signs again the stored payloads a trusted key signed, and
// leaves a payload planted in the database (signed by a stranger's key)
// as it is: re-signing it would turn it into an order agents accept.
func TestRotationDoesNotResignPlantedPayloads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, _, s := setup(t)
	good, err := s.Sign(ctx, []byte(`{"body":"echo operator"}`))
	require.NoError(t, err)
	_, stranger, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	evil := []byte(`{"body":"echo attacker"}`)
	planted := proto.Signed{Payload: evil, KeyID: good.KeyID, Signature: ed25519.Sign(stranger, evil)}
	insert := func(name string, sg proto.Signed) int64 {
		raw, err := json.Marshal(sg)
		require.NoError(t, err)
		row, err := store.ScheduledJobInsert(ctx, db.ScheduledJobInsertParams{Name: name, Kind: "script", Parameters: []byte(`{}`),
			Targets: []byte(`{}`), Schedule: []byte(`{"type":"manual"}`), Options: []byte(`{}`), Signed: raw, TargetScope: []int64{},
			Actor: "test"})
		require.NoError(t, err)
		return row.ID
	}
	goodID, evilID := insert("good", good), insert("planted", planted)

	require.NoError(t, s.Rotate(ctx, true))
	keys, err := s.TrustedPublicKeys(ctx)
	require.NoError(t, err)
	read := func(id int64) proto.Signed {
		row, err := store.ScheduledJobGet(ctx, id)
		require.NoError(t, err)
		var sg proto.Signed
		require.NoError(t, json.Unmarshal(row.Signed, &sg))
		return sg
	}
	g := read(goodID)
	require.NotEqual(t, good.KeyID, g.KeyID, "the operator's payload is signed by the new key")
	require.Equal(t, good.Payload, g.Payload)
	_, err = g.Verify(keys[:1])
	require.NoError(t, err)

	e := read(evilID)
	require.Equal(t, planted, e, "the planted payload is not signed again")
	_, err = e.Verify(keys)
	require.ErrorIs(t, err, proto.ErrSignatureInvalid)
}
