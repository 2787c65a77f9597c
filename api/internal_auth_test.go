package api_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/internalauth"
)

type internalKey struct {
	id     string
	secret []byte
}

// signedRequest is one Internal request, signed; send sends it as is
// (again, for a replay).
type signedRequest struct {
	method, path string
	body         []byte
	header       http.Header
}

func signInternal(t *testing.T, k internalKey, method, path string, body any) *signedRequest {
	t.Helper()
	raw, err := json.Marshal(body)
	require.NoError(t, err)
	req, err := http.NewRequest(method, "http://engine"+path, bytes.NewReader(raw))
	require.NoError(t, err)
	internalauth.Sign(req, raw, k.id, k.secret, time.Now())
	return &signedRequest{method: method, path: path, body: raw, header: req.Header}
}

func (f *fixture) send(t *testing.T, s *signedRequest) response {
	t.Helper()
	req, err := http.NewRequest(s.method, f.url+s.path, bytes.NewReader(s.body))
	require.NoError(t, err)
	req.Header = s.header.Clone()
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	out := response{Status: res.StatusCode, Header: res.Header, Raw: string(raw)}
	if len(raw) > 0 {
		require.NoError(t, json.Unmarshal(raw, &out.Body), "body: %s", raw)
	}
	return out
}

func (f *fixture) createInternalKey(t *testing.T, admin string) internalKey {
	t.Helper()
	r := f.do(t, "POST", "/api/server/internal-keys", admin, nil)
	require.Equal(t, 201, r.Status, r.Raw)
	secret, err := base64.StdEncoding.DecodeString(r.Body["secret"].(string))
	require.NoError(t, err)
	return internalKey{id: r.Body["key_id"].(string), secret: secret}
}

// The Internal class end to end (issue 26): an admin makes a key (after
// re-authenticating), the remote-desktop gateway's session events signed
// with it are taken once; replayed, tampered, unsigned, stale or wrongly
// keyed requests are refused with stable codes that never carry the key;
// two keys work during rotation and a retired one no more.
func TestInternalSessionEvent(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	admin := f.admin(t)
	site := f.createSite(t, admin, "internal")
	a := f.enrolled(t, admin, site, "internal-01")

	r := f.do(t, "POST", "/api/server/internal-keys", admin, nil)
	require.Equal(t, 403, r.Status, "making a key needs re-authentication: %s", r.Raw)
	f.sudo(t, admin)
	k := f.createInternalKey(t, admin)
	list := f.do(t, "GET", "/api/server/internal-keys", admin, nil)
	require.Equal(t, 200, list.Status, list.Raw)
	require.NotContains(t, list.Raw, base64.StdEncoding.EncodeToString(k.secret))

	sessID := uuid.NewString()
	_, err := f.store.VNCSessionInsert(ctx, db.VNCSessionInsertParams{ID: sessID, DeviceGuid: cairn.DeviceGUID(a.guid),
		SiteID: cairn.SiteID(site), Hostname: "internal-01", Operator: "admin", Protocol: "vnc", Quality: "speed"})
	require.NoError(t, err)
	at := time.Date(2026, 11, 29, 7, 30, 0, 0, time.UTC)
	event := map[string]any{"session_id": sessID, "event": "first_frame", "at": at}
	const path = "/api/internal/vnc/session-event"

	// Accepted once.
	ok := signInternal(t, k, "POST", path, event)
	r = f.send(t, ok)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, at.Format(time.RFC3339), r.Body["first_frame_at"])
	r = f.send(t, ok)
	require.Equal(t, 401, r.Status, r.Raw)
	require.Equal(t, internalauth.ECodeSignatureReplayed, r.Body["error"])

	// Refused: each with its stable code, none carrying the key.
	other := internalKey{id: k.id, secret: bytes.Repeat([]byte{1}, 32)}
	for _, c := range []struct {
		name string
		req  func() *signedRequest
		code string
	}{
		{"tampered body", func() *signedRequest {
			s := signInternal(t, k, "POST", path, event)
			s.body = bytes.Replace(s.body, []byte("first_frame"), []byte("detached"), 1)
			return s
		}, internalauth.ECodeSignatureInvalid},
		{"tampered path", func() *signedRequest {
			s := signInternal(t, k, "POST", path, event)
			s.path += "?session_id=x"
			return s
		}, internalauth.ECodeSignatureInvalid},
		{"wrong key", func() *signedRequest { return signInternal(t, other, "POST", path, event) }, internalauth.ECodeSignatureInvalid},
		{"unsigned", func() *signedRequest {
			s := signInternal(t, k, "POST", path, event)
			s.header = http.Header{}
			return s
		}, internalauth.ECodeSignatureInvalid},
		{"stale", func() *signedRequest {
			raw, _ := json.Marshal(event)
			req, _ := http.NewRequest("POST", "http://engine"+path, bytes.NewReader(raw))
			internalauth.Sign(req, raw, k.id, k.secret, time.Now().Add(-internalauth.Window-time.Minute))
			return &signedRequest{method: "POST", path: path, body: raw, header: req.Header}
		}, internalauth.ECodeSignatureStale},
	} {
		r := f.send(t, c.req())
		require.Equal(t, 401, r.Status, "%s: %s", c.name, r.Raw)
		require.Equal(t, c.code, r.Body["error"], c.name)
		require.NotContains(t, r.Raw, base64.StdEncoding.EncodeToString(k.secret), c.name)
	}
	// An operator's session is not an Internal credential.
	r = f.do(t, "POST", path, admin, event)
	require.Equal(t, 401, r.Status, r.Raw)
	require.Equal(t, internalauth.ECodeSignatureInvalid, r.Body["error"])

	// Bad input, correctly signed: validation_failed with the field.
	r = f.send(t, signInternal(t, k, "POST", path, map[string]any{"session_id": sessID, "event": "exploded"}))
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("event"), r.Raw)
	r = f.send(t, signInternal(t, k, "POST", path, map[string]any{"session_id": uuid.NewString(), "event": "first_frame"}))
	require.Equal(t, 404, r.Status, r.Raw)

	// Rotation: both keys work, then the old one is retired.
	next := f.createInternalKey(t, admin)
	r = f.do(t, "POST", "/api/server/internal-keys", admin, nil)
	require.Equal(t, 409, r.Status, r.Raw)
	require.Equal(t, internalauth.ECodeKeyLimit, r.Body["error"])
	for _, key := range []internalKey{k, next} {
		r := f.send(t, signInternal(t, key, "POST", path, event))
		require.Equal(t, 200, r.Status, r.Raw)
	}
	r = f.do(t, "POST", "/api/server/internal-keys/"+k.id+"/retire", admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	r = f.send(t, signInternal(t, k, "POST", path, event))
	require.Equal(t, 401, r.Status, r.Raw)
	require.Equal(t, internalauth.ECodeSignatureInvalid, r.Body["error"])
	r = f.send(t, signInternal(t, next, "POST", path, event))
	require.Equal(t, 200, r.Status, r.Raw)

	// The audit trail names the key that signed.
	audit := f.do(t, "GET", "/api/server/audit", admin, nil)
	require.Equal(t, 200, audit.Status, audit.Raw)
	require.Contains(t, audit.Raw, "internal:"+next.id)
}
