package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/cairn-rmm/cairn"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/authtest"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
	"github.com/cairn-rmm/cairn/internal/pgtest"
)

func TestEnrollmentCodes(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "codes")

	r := f.do(t, "POST", "/api/admin/enrollment-codes", admin, map[string]any{"site_id": site, "expires_in_seconds": 3600, "max_uses": 2})
	require.Equal(t, 201, r.Status, r.Raw)
	code := r.Body["code"].(string)
	require.Len(t, code, 32+3, "160 bits of base32 in groups of eight")
	require.EqualValues(t, 2, r.Body["max_uses"])
	require.EqualValues(t, 0, r.Body["uses"])
	require.Equal(t, "active", r.Body["status"])
	id := r.Body["id"].(float64)

	list := f.do(t, "GET", "/api/admin/enrollment-codes", admin, nil)
	require.Equal(t, 200, list.Status, list.Raw)
	codes := list.Body["codes"].([]any)
	require.Len(t, codes, 1)
	require.Equal(t, code, codes[0].(map[string]any)["code"], "admins can copy a code again")

	rot := f.do(t, "POST", "/api/admin/enrollment-codes/"+itoa(id)+"/rotate", admin, nil)
	require.Equal(t, 200, rot.Status, rot.Raw)
	require.NotEqual(t, code, rot.Body["code"])
	old := f.newAgent(t, "rotated-away").request(t, code)
	require.Equal(t, 400, old.Status, old.Raw)
	require.Contains(t, old.field("code"), "unknown", "a rotated code stops working at once")

	del := f.do(t, "DELETE", "/api/admin/enrollment-codes/"+itoa(id), admin, nil)
	require.Equal(t, 200, del.Status, del.Raw)
	require.Empty(t, f.do(t, "GET", "/api/admin/enrollment-codes", admin, nil).Body["codes"])
	require.Equal(t, 404, f.do(t, "DELETE", "/api/admin/enrollment-codes/"+itoa(id), admin, nil).Status)

	for _, tc := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{}, "site_id"},
		{map[string]any{"site_id": 999999}, "site_id"},
		{map[string]any{"site_id": site, "expires_in_seconds": 5}, "expires_in_seconds"},
		{map[string]any{"site_id": site, "max_uses": 0}, "max_uses"},
	} {
		r := f.do(t, "POST", "/api/admin/enrollment-codes", admin, tc.body)
		require.Equal(t, 400, r.Status, r.Raw)
		require.NotEmpty(t, r.field(tc.field), r.Raw)
	}

	// An operator of another site neither sees nor makes codes here.
	f.enrollmentCode(t, admin, site)
	other := f.operator(t, "codes-elsewhere")
	require.Empty(t, f.do(t, "GET", "/api/admin/enrollment-codes", other, nil).Body["codes"])
	r = f.do(t, "POST", "/api/admin/enrollment-codes", other, map[string]any{"site_id": site})
	require.Equal(t, 400, r.Status, r.Raw)
}

func TestEnrollmentApproveAndDeviceAuth(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "enroll")
	a := f.newAgent(t, "web-01")
	code := f.enrollmentCode(t, admin, site)

	r := a.request(t, code)
	require.Equal(t, 202, r.Status, r.Raw)
	require.Equal(t, proto.ApprovalPending, r.Body["status"])
	again := a.request(t, code)
	require.Equal(t, a.approvalID, again.Body["approval_id"], "asking again returns the open request")

	pending := f.do(t, "GET", "/api/admin/device-approvals?status=pending", admin, nil)
	require.Equal(t, 200, pending.Status, pending.Raw)
	list := pending.Body["approvals"].([]any)
	require.Len(t, list, 1)
	row := list[0].(map[string]any)
	require.Equal(t, "web-01", row["hostname"])
	require.Equal(t, "fp-web-01", row["fingerprint"])
	require.EqualValues(t, site, row["site_id"])

	p := a.poll(t)
	require.Equal(t, 200, p.Status, p.Raw)
	require.Equal(t, proto.ApprovalPending, p.Body["status"])
	stranger := f.newAgent(t, "stranger")
	stranger.approvalID = a.approvalID
	require.Equal(t, 404, stranger.poll(t).Status, "only the requesting key may collect the tokens")

	d := f.do(t, "POST", "/api/admin/device-approvals/"+a.approvalID+"/approve", admin, nil)
	require.Equal(t, 200, d.Status, d.Raw)
	require.Equal(t, proto.ApprovalApproved, d.Body["status"])
	require.NotEmpty(t, d.Body["decided_by"])
	require.Equal(t, 409, f.do(t, "POST", "/api/admin/device-approvals/"+a.approvalID+"/deny", admin, nil).Status,
		"a decided request cannot be decided again")

	p = a.poll(t)
	require.Equal(t, 200, p.Status, p.Raw)
	require.Equal(t, proto.ApprovalEnrolled, p.Body["status"])
	require.NotEmpty(t, a.guid)
	require.Equal(t, "DPoP", p.Body["tokens"].(map[string]any)["token_type"])

	f.github.setBranch("octo/widgets/main", shaOne)
	h := a.device(t, "GET", "/api/repo/current_hash?repo=octo/widgets&branch=main", nil)
	require.Equal(t, 200, h.Status, "current_hash takes Device auth: %s", h.Raw)
	require.Equal(t, shaOne, h.Body["hash"])

	// The agent context header is required; a replayed proof is refused.
	replay := a.lastProof
	req := a.send(t, "GET", "/api/repo/current_hash?repo=octo/widgets&branch=main", nil, false, a.access)
	require.Equal(t, 401, req.Status)
	require.Equal(t, "invalid_dpop_proof", req.Body["error"], "no proof at all")
	rr := f.replay(t, a, replay)
	require.Equal(t, 401, rr.Status, rr.Raw)
	require.Equal(t, "invalid_dpop_proof", rr.Body["error"])
	require.Contains(t, rr.Body["message"], "replay")

	// Another key cannot use the token.
	thief := f.newAgent(t, "thief")
	thief.access = a.access
	require.Equal(t, 401, thief.device(t, "GET", "/api/repo/current_hash?repo=octo/widgets&branch=main", nil).Status)

	// Refresh rotates; the old refresh token presented by the device after
	// a later one was used is theft and revokes all.
	old := a.refresh
	require.Equal(t, 200, a.doRefresh(t).Status)
	require.Equal(t, 200, a.device(t, "GET", "/api/repo/current_hash?repo=octo/widgets&branch=main", nil).Status)
	require.Equal(t, 200, a.doRefresh(t).Status)
	reuse := a.send(t, "POST", proto.PathTokenRefresh, proto.RefreshRequest{RefreshToken: old, Fingerprint: a.fingerprint}, true, "")
	require.Equal(t, 401, reuse.Status, reuse.Raw)
	require.Equal(t, "token_revoked", reuse.Body["error"])
	fresh := a.doRefresh(t)
	require.Equal(t, 401, fresh.Status, "the whole family is revoked: %s", fresh.Raw)
	require.Equal(t, "token_revoked", fresh.Body["error"])
}

// refreshWith presents token with a's key, keeping the pair it gets.
func (a *testAgent) refreshWith(t *testing.T, token string) response {
	t.Helper()
	saved := a.refresh
	a.refresh = token
	r := a.doRefresh(t)
	if r.Status != 200 {
		a.refresh = saved
	}
	return r
}

// Issue 13 item 9: the DPoP key is checked before reuse detection, and a
// retry of a just-used token by the device's key (its answer was lost)
// gets a pair without costing the family.
func TestRefreshKeyFirstAndRetryGrace(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	a := f.enrolled(t, admin, f.createSite(t, admin, "grace"), "grace-01")
	hash := "/api/repo/current_hash?repo=octo/widgets&branch=main"
	f.github.setBranch("octo/widgets/main", shaOne)

	used := a.refresh
	require.Equal(t, 200, a.doRefresh(t).Status)
	lost := a.refresh // the successor whose answer the device never got

	// Someone holding the used token but not the device key changes
	// nothing.
	thief := f.newAgent(t, "thief")
	thief.refresh, thief.fingerprint = used, a.fingerprint
	r := thief.doRefresh(t)
	require.Equal(t, 401, r.Status, r.Raw)
	require.Equal(t, "invalid_dpop_proof", r.Body["error"])

	// The device retries with the used token: a new pair, family intact.
	r = a.refreshWith(t, used)
	require.Equal(t, 200, r.Status, "a retry within the grace window is answered: %s", r.Raw)
	require.NotEqual(t, lost, a.refresh)
	require.Equal(t, 200, a.device(t, "GET", hash, nil).Status)
	r = a.refreshWith(t, lost)
	require.Equal(t, 401, r.Status, "the lost answer's successor is retired: %s", r.Raw)
	require.Equal(t, "token_revoked", r.Body["error"])
	require.Equal(t, 200, a.doRefresh(t).Status, "the family still works")

	// After the grace window the same retry is reuse: the family goes.
	b := f.enrolled(t, admin, f.createSite(t, admin, "late"), "late-01")
	used = b.refresh
	require.Equal(t, 200, b.doRefresh(t).Status)
	f.clk.Advance(devicetrust.RefreshRetryGrace + time.Second)
	r = b.refreshWith(t, used)
	require.Equal(t, 401, r.Status, r.Raw)
	require.Equal(t, "token_revoked", r.Body["error"])
	r = b.doRefresh(t)
	require.Equal(t, 401, r.Status, "the family is revoked: %s", r.Raw)
	require.Equal(t, "token_revoked", r.Body["error"])
}

// replay sends a recorded proof again.
func (f *fixture) replay(t *testing.T, a *testAgent, proof string) response {
	t.Helper()
	r := a.sendRaw(t, "GET", "/api/repo/current_hash?repo=octo/widgets&branch=main", proof, a.access)
	return r
}

func TestEnrollmentDenyAndBadRequests(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "deny")
	code := f.enrollmentCode(t, admin, site)

	a := f.newAgent(t, "denied-01")
	require.Equal(t, 202, a.request(t, code).Status)
	d := f.do(t, "POST", "/api/admin/device-approvals/"+a.approvalID+"/deny", admin, nil)
	require.Equal(t, 200, d.Status, d.Raw)
	require.Equal(t, proto.ApprovalDenied, d.Body["status"])
	p := a.poll(t)
	require.Equal(t, proto.ApprovalDenied, p.Body["status"])
	require.Nil(t, p.Body["tokens"])

	// A signature by another key, and a nonce used twice.
	b := f.newAgent(t, "forger")
	n := b.send(t, "POST", proto.PathEnrollNonce, nil, false, "").Body["nonce"].(string)
	req := proto.EnrollRequest{Code: code, PublicKey: b.publicKey(), Hostname: "forger", Fingerprint: "fp", Nonce: n}
	req.Signature = signWith(t, f.newAgent(t, "other").key, req)
	r := b.send(t, "POST", proto.PathEnrollRequest, req, false, "")
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("signature"))
	req.Signature = signWith(t, b.key, req)
	require.Equal(t, 202, b.send(t, "POST", proto.PathEnrollRequest, req, false, "").Status)
	r = f.newAgent(t, "x").send(t, "POST", proto.PathEnrollRequest, req, false, "")
	require.Equal(t, 400, r.Status, r.Raw)
	require.Contains(t, r.field("nonce"), "already used")

	// Missing fields are named.
	r = b.send(t, "POST", proto.PathEnrollRequest, proto.EnrollRequest{}, false, "")
	require.Equal(t, 400, r.Status)
	for _, field := range []string{"code", "public_key", "hostname", "fingerprint", "nonce", "signature"} {
		require.NotEmpty(t, r.field(field), field)
	}

	// A code with one use is spent by the first request.
	one := f.do(t, "POST", "/api/admin/enrollment-codes", admin, map[string]any{"site_id": site, "max_uses": 1}).Body["code"].(string)
	require.Equal(t, 202, f.newAgent(t, "first").request(t, one).Status)
	r = f.newAgent(t, "second").request(t, one)
	require.Equal(t, 400, r.Status, r.Raw)
	require.Contains(t, r.field("code"), "used up")
}

func TestAutoApprovalTrustAndPurge(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "auto")
	ctx := context.Background()
	on := f.do(t, "POST", "/api/sites/"+itoa(float64(site))+"/auto-approval", admin, map[string]any{"enabled": true, "duration_seconds": 3600})
	require.Equal(t, 200, on.Status, on.Raw)

	a := f.newAgent(t, "auto-01")
	r := a.request(t, f.enrollmentCode(t, admin, site))
	require.Equal(t, 202, r.Status, r.Raw)
	require.Equal(t, proto.ApprovalApproved, r.Body["status"], "auto-approval approves at once")
	require.Equal(t, proto.ApprovalEnrolled, a.poll(t).Body["status"])
	guid := a.guid
	hash := "/api/repo/current_hash?repo=octo/widgets&branch=main"
	f.github.setBranch("octo/widgets/main", shaOne)

	// A trust change bumps the token version: the old token stops working,
	// a refreshed one works again.
	_, err := f.store.DeviceTrustSet(ctx, db.DeviceTrustSetParams{Guid: cairn.DeviceGUID(guid), TrustState: "active", Now: f.clk.Now(), FromState: "active", FromVersion: 1})
	require.NoError(t, err)
	r = a.device(t, "GET", hash, nil)
	require.Equal(t, 401, r.Status)
	require.Equal(t, "token_version_mismatch", r.Body["error"])
	require.Equal(t, 200, a.doRefresh(t).Status)
	require.Equal(t, 200, a.device(t, "GET", hash, nil).Status)

	// Quarantine blocks device routes and refresh, keeping the tokens valid
	// for later.
	_, err = f.store.DeviceTrustSet(ctx, db.DeviceTrustSetParams{Guid: cairn.DeviceGUID(guid), TrustState: "quarantined", Now: f.clk.Now(), FromState: "active", FromVersion: 2})
	require.NoError(t, err)
	r = a.doRefresh(t)
	require.Equal(t, 409, r.Status, r.Raw)
	require.Equal(t, "device_quarantined", r.Body["error"])

	// Purge: refresh answers device_purged; re-approval recreates the GUID
	// with a higher token version.
	dev, err := f.store.DeviceGetByGUID(ctx, cairn.DeviceGUID(guid))
	require.NoError(t, err)
	require.NoError(t, f.store.DevicePurgeInsert(ctx, db.DevicePurgeInsertParams{Guid: cairn.DeviceGUID(guid), Jkt: dev.Jkt, Hostname: dev.Hostname, TokenVersion: dev.TokenVersion, PurgedBy: "test"}))
	_, err = f.store.DeviceDelete(ctx, cairn.DeviceGUID(guid))
	require.NoError(t, err)
	r = a.doRefresh(t)
	require.Equal(t, 401, r.Status, r.Raw)
	require.Equal(t, "device_purged", r.Body["error"])
	r = a.device(t, "GET", hash, nil)
	require.Equal(t, 401, r.Status)
	require.Equal(t, "device_purged", r.Body["error"])

	// A purged key is never readmitted by auto-approval (item 10): an
	// administrator approves it.
	r = a.request(t, f.enrollmentCode(t, admin, site))
	require.Equal(t, 202, r.Status, r.Raw)
	require.Equal(t, proto.ApprovalPending, r.Body["status"], "no auto-approval for a purged key")
	d := f.do(t, "POST", "/api/admin/device-approvals/"+a.approvalID+"/approve", admin, nil)
	require.Equal(t, 200, d.Status, d.Raw)
	require.Equal(t, proto.ApprovalEnrolled, a.poll(t).Body["status"])
	require.Equal(t, guid, a.guid, "the purged GUID is recreated")
	back, err := f.store.DeviceGetByGUID(ctx, cairn.DeviceGUID(guid))
	require.NoError(t, err)
	require.Greater(t, back.TokenVersion, dev.TokenVersion)
	require.Equal(t, 200, a.device(t, "GET", hash, nil).Status)

	// A blank Engine: the device's tokens are unknown, which the agent
	// treats as recoverable.
	_, err = f.store.DeviceDelete(ctx, cairn.DeviceGUID(guid))
	require.NoError(t, err)
	r = a.doRefresh(t)
	require.Equal(t, 401, r.Status)
	require.Equal(t, "device_not_found", r.Body["error"])
}

// Issue 13 item 10: a revoked, quarantined or purged key comes back only
// through an administrator's explicit approval: never auto-approval, never
// an operator's approval, and an approval given before the device was
// revoked is withdrawn when the agent collects it.
func TestReadmissionNeedsAnAdministrator(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "readmit")
	operator := f.scopedOperatorOf(t, admin, "readmit-operator", site)
	on := f.do(t, "POST", "/api/sites/"+itoa(float64(site))+"/auto-approval", admin, map[string]any{"enabled": true, "duration_seconds": 3600})
	require.Equal(t, 200, on.Status, on.Raw)
	a := f.newAgent(t, "readmit-01")
	require.Equal(t, 202, a.request(t, f.enrollmentCode(t, admin, site)).Status)
	require.Equal(t, proto.ApprovalEnrolled, a.poll(t).Body["status"])
	trust := func(action string) {
		t.Helper()
		r := f.do(t, "POST", "/api/devices/"+a.guid+"/"+action, admin, nil)
		require.Equal(t, 200, r.Status, r.Raw)
	}
	approve := func(token string) response {
		t.Helper()
		return f.do(t, "POST", "/api/admin/device-approvals/"+a.approvalID+"/approve", token, nil)
	}

	for _, action := range []string{"revoke", "quarantine", "purge"} {
		if action == "quarantine" {
			// Only an active device can be quarantined.
			require.Equal(t, "active", f.trustState(t, a.guid))
		}
		trust(action)
		r := a.request(t, f.enrollmentCode(t, admin, site))
		require.Equal(t, 202, r.Status, r.Raw)
		require.Equal(t, proto.ApprovalPending, r.Body["status"], "%s: no auto-approval", action)
		list := f.do(t, "GET", "/api/admin/device-approvals?status=pending", operator, nil).Body["approvals"].([]any)
		require.Len(t, list, 1)
		require.Equal(t, true, list[0].(map[string]any)["readmission"])
		r = approve(operator)
		require.Equal(t, 403, r.Status, "%s: an operator cannot readmit: %s", action, r.Raw)
		require.Equal(t, "forbidden", r.Body["error"])
		require.Equal(t, proto.ApprovalPending, a.poll(t).Body["status"])
		r = approve(admin)
		require.Equal(t, 200, r.Status, r.Raw)
		require.Equal(t, proto.ApprovalEnrolled, a.poll(t).Body["status"], action)
		require.Equal(t, "active", f.trustState(t, a.guid))
	}

	// An approval given while the device was active (here auto-approval)
	// does not readmit it once revoked: the agent finds it expired, and
	// its new request waits for an administrator.
	r := a.request(t, f.enrollmentCode(t, admin, site))
	require.Equal(t, 202, r.Status, r.Raw)
	require.Equal(t, proto.ApprovalApproved, r.Body["status"], "an active device is auto-approved as before")
	trust("revoke")
	p := a.poll(t)
	require.Equal(t, 200, p.Status, p.Raw)
	require.Equal(t, proto.ApprovalExpired, p.Body["status"])
	require.Equal(t, "revoked", f.trustState(t, a.guid))
	r = a.request(t, f.enrollmentCode(t, admin, site))
	require.Equal(t, 202, r.Status, r.Raw)
	require.Equal(t, proto.ApprovalPending, r.Body["status"])

	// An operator's approval of a request made before the revoke is
	// refused as well (the device's state is checked at decision time).
	b := f.newAgent(t, "readmit-02")
	off := f.do(t, "POST", "/api/sites/"+itoa(float64(site))+"/auto-approval", admin, map[string]any{"enabled": false})
	require.Equal(t, 200, off.Status, off.Raw)
	require.Equal(t, 202, b.request(t, f.enrollmentCode(t, admin, site)).Status)
	require.Equal(t, 200, f.do(t, "POST", "/api/admin/device-approvals/"+b.approvalID+"/approve", operator, nil).Status)
	require.Equal(t, proto.ApprovalEnrolled, b.poll(t).Body["status"])
	require.Equal(t, 202, b.request(t, f.enrollmentCode(t, admin, site)).Status)
	require.Equal(t, 200, f.do(t, "POST", "/api/devices/"+b.guid+"/revoke", admin, nil).Status)
	r = f.do(t, "POST", "/api/admin/device-approvals/"+b.approvalID+"/approve", operator, nil)
	require.Equal(t, 403, r.Status, r.Raw)
}

func (f *fixture) trustState(t *testing.T, guid string) string {
	t.Helper()
	d, err := f.store.DeviceGetByGUID(context.Background(), cairn.DeviceGUID(guid))
	require.NoError(t, err)
	return d.TrustState
}

// Issue 13 item 13: a request with more than one DPoP header is refused,
// whichever of them is valid.
func TestDPoPHeaderMoreThanOnce(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	a := f.enrolled(t, admin, f.createSite(t, admin, "twice"), "twice-01")
	hash := "/api/repo/current_hash?repo=octo/widgets&branch=main"
	f.github.setBranch("octo/widgets/main", shaOne)
	send := func(path, token string, body any) response {
		t.Helper()
		var rdr io.Reader
		if body != nil {
			buf, err := json.Marshal(body)
			require.NoError(t, err)
			rdr = bytes.NewReader(buf)
		}
		method := "GET"
		if body != nil {
			method = "POST"
		}
		req, err := http.NewRequest(method, f.url+path, rdr)
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(proto.HeaderAgentContext, proto.AgentContextValue(proto.ContextPrivileged))
		for range 2 {
			p, err := agent.NewProof(a.key, method, testPublicURL+path, token, f.clk.Now())
			require.NoError(t, err)
			req.Header.Add(proto.HeaderDPoP, p)
		}
		if token != "" {
			req.Header.Set("Authorization", proto.AuthScheme+" "+token)
		}
		return do(t, req)
	}
	for name, r := range map[string]response{
		"device":  send(hash, a.access, nil),
		"refresh": send(proto.PathTokenRefresh, "", proto.RefreshRequest{RefreshToken: a.refresh, Fingerprint: a.fingerprint}),
		"poll":    send(proto.PathEnrollPoll, "", proto.EnrollPoll{ApprovalID: a.approvalID}),
	} {
		require.Equal(t, 401, r.Status, "%s: %s", name, r.Raw)
		require.Equal(t, "invalid_dpop_proof", r.Body["error"], name)
		require.Contains(t, r.Body["message"], "DPoP headers", name)
	}
	require.Equal(t, 200, a.device(t, "GET", hash, nil).Status, "one header is fine")
	require.Equal(t, 200, a.doRefresh(t).Status, "the refused refresh did not spend the token")
}

// Issue 13 item 13: proofs the Engine records before anything authorizes
// the request (refresh, enrollment poll) are budgeted per address, so
// nobody can fill the replay cache with proofs of throwaway keys.
func TestUnboundProofsAreRateLimited(t *testing.T) {
	t.Parallel()
	f := &fixture{store: pgtest.NewDB(t), clk: authtest.NewClock(), github: newFakeGitHub(t), proofRateLimit: 5}
	f.engine = f.newEngine(t)
	f.url = f.engine.http.URL
	var last response
	for i := range 6 {
		stranger := f.newAgent(t, "stranger-"+strconv.Itoa(i))
		stranger.approvalID = "00000000-0000-0000-0000-000000000000"
		last = stranger.poll(t)
		if i < 5 {
			require.Equal(t, 404, last.Status, last.Raw)
		}
	}
	require.Equal(t, 429, last.Status, last.Raw)
	require.Equal(t, "rate_limited", last.Body["error"])
	require.NotEmpty(t, last.Header.Get("Retry-After"))
	r := f.newAgent(t, "late").send(t, "POST", proto.PathTokenRefresh, proto.RefreshRequest{RefreshToken: "g.x", Fingerprint: "fp"}, true, "")
	require.Equal(t, 429, r.Status, "refresh shares the budget: %s", r.Raw)
	n, err := f.store.DpopJTIDeleteExpired(context.Background(), f.clk.Now().Add(time.Hour))
	require.NoError(t, err)
	require.EqualValues(t, 5, n, "only the budgeted proofs reached the replay cache")
}
