package internalauth_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/aegis"
	"github.com/cairn-rmm/cairn/internal/authtest"
	"github.com/cairn-rmm/cairn/internal/internalauth"
	"github.com/cairn-rmm/cairn/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

type fixture struct {
	store  *db.Store
	cipher *aegis.Cipher
	svc    *internalauth.Service
	clock  *clock
}

func setup(t *testing.T) *fixture {
	t.Helper()
	store := pgtest.NewDB(t)
	cipher := aegis.New(aegis.PGStore{Q: store.Queries, S: store}, authtest.CheapKDF)
	cipher.Register(internalauth.SealedColumns()...)
	require.NoError(t, cipher.Setup(context.Background(), "correct horse battery staple"))
	c := &clock{t: time.Unix(1_900_000_000, 0)}
	return &fixture{store: store, cipher: cipher, svc: internalauth.New(store.Queries, cipher, c.now), clock: c}
}

type signed struct {
	method, path string
	body         []byte
	header       http.Header
}

func sign(method, path string, body []byte, keyID string, secret []byte, at time.Time) signed {
	r := httptest.NewRequest(method, path, bytes.NewReader(body))
	internalauth.Sign(r, body, keyID, secret, at)
	return signed{method: method, path: r.URL.RequestURI(), body: body, header: r.Header}
}

func (f *fixture) verify(s signed) (string, error) {
	return f.svc.Verify(context.Background(), s.method, s.path, s.body, s.header)
}

const path = "/api/internal/vnc/session-event"

var body = []byte(`{"session_id":"s1","event":"first_frame"}`)

func TestVerifyAcceptsOnceAndRefusesReplay(t *testing.T) {
	t.Parallel()
	f := setup(t)
	k, secret, err := f.svc.Create(context.Background())
	require.NoError(t, err)
	req := sign("POST", path, body, k.KeyID, secret, f.clock.now())
	got, err := f.verify(req)
	require.NoError(t, err)
	require.Equal(t, k.KeyID, got)
	_, err = f.verify(req)
	require.Equal(t, internalauth.ECodeSignatureReplayed, cairn.ErrorCode(err))
	// A second request with the same content gets its own nonce.
	_, err = f.verify(sign("POST", path, body, k.KeyID, secret, f.clock.now()))
	require.NoError(t, err)
}

func TestVerifyRefuses(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	k, secret, err := f.svc.Create(ctx)
	require.NoError(t, err)
	now := f.clock.now()
	good := func() signed { return sign("POST", path, body, k.KeyID, secret, now) }
	otherSecret := bytes.Repeat([]byte{7}, 32)
	cases := []struct {
		name   string
		mutate func(s *signed)
		code   string
	}{
		{"tampered body", func(s *signed) { s.body = []byte(`{"session_id":"s2","event":"first_frame"}`) }, internalauth.ECodeSignatureInvalid},
		{"tampered path", func(s *signed) { s.path = "/api/internal/vnc/session-event?x=1" }, internalauth.ECodeSignatureInvalid},
		{"tampered method", func(s *signed) { s.method = "PUT" }, internalauth.ECodeSignatureInvalid},
		{"tampered timestamp", func(s *signed) { s.header.Set(internalauth.HeaderTimestamp, "1900000001") }, internalauth.ECodeSignatureInvalid},
		{"tampered nonce", func(s *signed) { s.header.Set(internalauth.HeaderNonce, "another") }, internalauth.ECodeSignatureInvalid},
		{"wrong key", func(s *signed) { *s = sign("POST", path, body, k.KeyID, otherSecret, now) }, internalauth.ECodeSignatureInvalid},
		{"unknown key ID", func(s *signed) { *s = sign("POST", path, body, "ik_0000000000000000", secret, now) }, internalauth.ECodeSignatureInvalid},
		{"no signature", func(s *signed) { s.header.Del(internalauth.HeaderSignature) }, internalauth.ECodeSignatureInvalid},
		{"garbled signature", func(s *signed) { s.header.Set(internalauth.HeaderSignature, "not base64!") }, internalauth.ECodeSignatureInvalid},
		{"stale timestamp", func(s *signed) {
			*s = sign("POST", path, body, k.KeyID, secret, now.Add(-internalauth.Window-time.Second))
		}, internalauth.ECodeSignatureStale},
		{"future timestamp", func(s *signed) {
			*s = sign("POST", path, body, k.KeyID, secret, now.Add(internalauth.Window+time.Second))
		}, internalauth.ECodeSignatureStale},
	}
	for _, c := range cases {
		s := good()
		c.mutate(&s)
		_, err := f.verify(s)
		require.Equal(t, c.code, cairn.ErrorCode(err), c.name)
		// The key never appears in what the caller is told.
		require.NotContains(t, err.Error(), string(secret), c.name)
	}
	// A refused request did not consume the good one's signature.
	_, err = f.verify(good())
	require.NoError(t, err)
}

func TestRotation(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	old, oldSecret, err := f.svc.Create(ctx)
	require.NoError(t, err)
	next, nextSecret, err := f.svc.Create(ctx)
	require.NoError(t, err)
	_, _, err = f.svc.Create(ctx)
	require.Equal(t, internalauth.ECodeKeyLimit, cairn.ErrorCode(err))

	// During rotation both keys verify.
	for _, k := range []struct {
		id     string
		secret []byte
	}{{old.KeyID, oldSecret}, {next.KeyID, nextSecret}} {
		_, err := f.verify(sign("POST", path, body, k.id, k.secret, f.clock.now()))
		require.NoError(t, err)
	}
	// A data-key rotation of the master cipher re-seals the keys.
	require.NoError(t, f.cipher.Rotate(ctx, "correct horse battery staple", "a brand new passphrase"))
	_, err = f.verify(sign("POST", path, body, old.KeyID, oldSecret, f.clock.now()))
	require.NoError(t, err)

	require.NoError(t, f.svc.Retire(ctx, old.KeyID))
	_, err = f.verify(sign("POST", path, body, old.KeyID, oldSecret, f.clock.now()))
	require.Equal(t, internalauth.ECodeSignatureInvalid, cairn.ErrorCode(err))
	_, err = f.verify(sign("POST", path, body, next.KeyID, nextSecret, f.clock.now()))
	require.NoError(t, err)
	require.Equal(t, cairn.ECodeNotFound, cairn.ErrorCode(f.svc.Retire(ctx, old.KeyID)))

	keys, err := f.svc.List(ctx)
	require.NoError(t, err)
	require.Len(t, keys, 2)
	require.NotNil(t, keys[0].RetiredAt)
	// A new key may be made once one is retired.
	_, _, err = f.svc.Create(ctx)
	require.NoError(t, err)
}

func TestSecretIsSealed(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	k, secret, err := f.svc.Create(ctx)
	require.NoError(t, err)
	row, err := f.store.Queries.InternalHMACKeyGet(ctx, k.KeyID)
	require.NoError(t, err)
	require.False(t, bytes.Contains(row.SecretSealed, secret))
	f.cipher.Lock()
	_, err = f.verify(sign("POST", path, body, k.KeyID, secret, f.clock.now()))
	require.ErrorIs(t, err, aegis.ErrLocked)
}

func TestSeenSignaturesExpire(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	k, secret, err := f.svc.Create(ctx)
	require.NoError(t, err)
	_, err = f.verify(sign("POST", path, body, k.KeyID, secret, f.clock.now()))
	require.NoError(t, err)
	n, err := f.svc.DeleteExpired(ctx)
	require.NoError(t, err)
	require.Zero(t, n)
	f.clock.mu.Lock()
	f.clock.t = f.clock.t.Add(2*internalauth.Window + time.Second)
	f.clock.mu.Unlock()
	n, err = f.svc.DeleteExpired(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
}
