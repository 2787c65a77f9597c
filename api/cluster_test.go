package api_test

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/nacl/box"

	"github.com/cairn-rmm/cairn/internal/cluster"
	"github.com/cairn-rmm/cairn/internal/internalauth"
)

type clusterJoiner struct {
	pub, priv *[32]byte
}

func newClusterJoiner(t *testing.T) clusterJoiner {
	pub, priv, err := box.GenerateKey(rand.Reader)
	require.NoError(t, err)
	return clusterJoiner{pub: pub, priv: priv}
}

func (j clusterJoiner) body(code string) map[string]any {
	return map[string]any{"code": code, "role": "worker", "name": "host-b", "sites": []string{"west"}, "version": "v9.9.9",
		"public_key": base64.StdEncoding.EncodeToString(j.pub[:])}
}

// joinStream reads the joiner's events stream to its end: the event
// types in order and the handoff box, if one was sent.
func (f *fixture) joinStream(t *testing.T, id, token string) ([]string, string) {
	t.Helper()
	req, err := http.NewRequest("GET", f.url+"/api/bootstrap/cluster/join/"+id+"/events", nil)
	require.NoError(t, err)
	req.Header.Set(cluster.TokenHeader, token)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	var types []string
	var boxB64 string
	sc := bufio.NewScanner(res.Body)
	typ := ""
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			typ = v
			types = append(types, v)
		}
		if v, ok := strings.CutPrefix(line, "data: "); ok && typ == "handoff" {
			var h map[string]string
			require.NoError(t, json.Unmarshal([]byte(v), &h))
			boxB64 = h["box"]
		}
	}
	return types, boxB64
}

func (f *fixture) admissionState(t *testing.T, admin, id string) string {
	t.Helper()
	r := f.do(t, "GET", "/api/server/cluster", admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	for _, a := range r.Body["admissions"].([]any) {
		if m := a.(map[string]any); m["id"] == id {
			return m["state"].(string)
		}
	}
	return ""
}

// The cluster end to end over the API (issue 26): the operator bridge
// (/v1/command, Internal HMAC: accepted once, replay and tamper refused)
// issues a join code; a worker asks to join; the admin sees it with its
// key's fingerprint and approves; the admission's workflow seals the
// Internal key to the joiner, whose channel gets it once; the key then
// signs the worker's own Internal call (public-base-url). A second
// admission cancelled through the bridge hands out nothing.
func TestClusterJoinApproveAndTheOperatorBridge(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	f.sudo(t, admin)
	k := f.createInternalKey(t, admin)

	// The bridge: signed, accepted once.
	cmd := signInternal(t, k, "POST", "/v1/command", map[string]any{"command": "cluster.join-code", "role": "worker"})
	r := f.send(t, cmd)
	require.Equal(t, 200, r.Status, r.Raw)
	code := r.Body["join_code"].(map[string]any)["code"].(string)
	require.True(t, strings.HasPrefix(code, "cjc_"))
	r = f.send(t, cmd)
	require.Equal(t, 401, r.Status, r.Raw)
	require.Equal(t, internalauth.ECodeSignatureReplayed, r.Body["error"])
	tampered := signInternal(t, k, "POST", "/v1/command", map[string]any{"command": "cluster.join-code", "role": "worker"})
	tampered.body = []byte(strings.Replace(string(tampered.body), "worker", "engine", 1))
	r = f.send(t, tampered)
	require.Equal(t, 401, r.Status, r.Raw)
	require.Equal(t, internalauth.ECodeSignatureInvalid, r.Body["error"])
	r = f.do(t, "POST", "/v1/command", admin, map[string]any{"command": "cluster.status"})
	require.Equal(t, 401, r.Status, "an operator session is not an Internal credential: %s", r.Raw)
	r = f.send(t, signInternal(t, k, "POST", "/v1/command", map[string]any{"command": "rm -rf"}))
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("command"))

	// Join: bad input names its field and spends nothing; a wrong code is
	// refused.
	j := newClusterJoiner(t)
	bad := j.body(code)
	bad["public_key"] = "AAAA"
	r = f.do(t, "POST", "/api/bootstrap/cluster/join", "", bad)
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("public_key"))
	r = f.do(t, "POST", "/api/bootstrap/cluster/join", "", j.body("cjc_guessed"))
	require.Equal(t, 403, r.Status, r.Raw)
	require.Equal(t, cluster.ECodeJoinCodeInvalid, r.Body["error"])
	r = f.do(t, "POST", "/api/bootstrap/cluster/join", "", j.body(code))
	require.Equal(t, 201, r.Status, r.Raw)
	id, token := r.Body["admission_id"].(string), r.Body["token"].(string)
	require.Equal(t, cluster.Fingerprint(j.pub[:]), r.Body["fingerprint"])
	r = f.do(t, "POST", "/api/bootstrap/cluster/join", "", j.body(code))
	require.Equal(t, 403, r.Status, "a join code is spent once: %s", r.Raw)

	req, err := http.NewRequest("GET", f.url+"/api/bootstrap/cluster/join/"+id+"/events", nil)
	require.NoError(t, err)
	req.Header.Set(cluster.TokenHeader, "cjt_wrong")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 403, res.StatusCode)

	// The admin's view: this Engine as a member, the admission pending
	// with the joiner's fingerprint, a banner asking for a decision.
	st := f.do(t, "GET", "/api/server/cluster", admin, nil)
	require.Equal(t, 200, st.Status, st.Raw)
	require.Equal(t, "primary", st.Body["postgresql"].(map[string]any)["role"])
	require.Equal(t, "running", st.Body["temporal"].(map[string]any)["state"])
	require.Eventually(t, func() bool {
		st = f.do(t, "GET", "/api/server/cluster", admin, nil)
		for _, m := range st.Body["members"].([]any) {
			if m := m.(map[string]any); m["member_id"] == st.Body["member_id"] {
				return m["role"] == "engine" && m["state"] == "up"
			}
		}
		return false
	}, time.Minute, 100*time.Millisecond, "this Engine is a member: %s", st.Raw)
	adm := st.Body["admissions"].([]any)[0].(map[string]any)
	require.Equal(t, id, adm["id"])
	require.Equal(t, "pending", adm["state"])
	require.Equal(t, cluster.Fingerprint(j.pub[:]), adm["fingerprint"])
	require.NotContains(t, st.Raw, token)
	b := f.do(t, "GET", "/api/server/cluster/banner", admin, nil)
	require.Equal(t, 200, b.Status, b.Raw)
	require.Equal(t, "info", b.Body["severity"])
	require.Equal(t, 1.0, b.Body["pending_admissions"])

	r = f.do(t, "POST", "/api/server/cluster/admissions/"+id+"/approve", admin, nil)
	require.Equal(t, 202, r.Status, r.Raw)
	require.Equal(t, "cluster-admission:"+id, r.Body["workflow_id"])
	require.Eventually(t, func() bool { return f.admissionState(t, admin, id) == "approved" }, time.Minute, 100*time.Millisecond)
	r = f.do(t, "POST", "/api/server/cluster/admissions/"+id+"/cancel", admin, nil)
	require.Equal(t, 409, r.Status, r.Raw)
	require.Equal(t, cluster.ECodeAdmissionSettled, r.Body["error"])

	types, boxB64 := f.joinStream(t, id, token)
	require.Contains(t, types, "handoff")
	require.Equal(t, "end", types[len(types)-1])
	sealed, err := base64.StdEncoding.DecodeString(boxB64)
	require.NoError(t, err)
	h, err := cluster.OpenHandoff(sealed, j.pub, j.priv)
	require.NoError(t, err)
	require.NotEqual(t, k.id, h.InternalKeyID, "the member's key is its own, not the operator's")
	require.Equal(t, testPublicURL, h.EngineURL)
	require.Equal(t, []string{"west"}, h.Sites)
	// Sent once: a second read gets no handoff.
	types, boxB64 = f.joinStream(t, id, token)
	require.NotContains(t, types, "handoff")
	require.Empty(t, boxB64)

	// The joiner's key signs its own Internal calls.
	secret, err := base64.StdEncoding.DecodeString(h.InternalKeySecret)
	require.NoError(t, err)
	r = f.send(t, signInternal(t, internalKey{id: h.InternalKeyID, secret: secret}, "GET", "/api/internal/job-scheduler/public-base-url", nil))
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, testPublicURL, r.Body["public_base_url"])

	// A second admission, cancelled through the bridge.
	r = f.send(t, signInternal(t, k, "POST", "/v1/command", map[string]any{"command": "cluster.join-code", "role": "worker"}))
	require.Equal(t, 200, r.Status, r.Raw)
	j2 := newClusterJoiner(t)
	r = f.do(t, "POST", "/api/bootstrap/cluster/join", "", j2.body(r.Body["join_code"].(map[string]any)["code"].(string)))
	require.Equal(t, 201, r.Status, r.Raw)
	id2, token2 := r.Body["admission_id"].(string), r.Body["token"].(string)
	r = f.send(t, signInternal(t, k, "POST", "/v1/command", map[string]any{"command": "cluster.cancel", "admission_id": id2}))
	require.Equal(t, 200, r.Status, r.Raw)
	require.Eventually(t, func() bool { return f.admissionState(t, admin, id2) == "cancelled" }, time.Minute, 100*time.Millisecond)
	types, _ = f.joinStream(t, id2, token2)
	require.NotContains(t, types, "handoff")

	ev := f.do(t, "GET", "/api/server/cluster/events?limit=50", admin, nil)
	require.Equal(t, 200, ev.Status, ev.Raw)
	require.Contains(t, ev.Raw, "admission_approved")
	require.Contains(t, ev.Raw, "admission_cancelled")
	require.NotContains(t, ev.Raw, code)
	require.NotContains(t, ev.Raw, h.InternalKeySecret)
	r = f.do(t, "GET", "/api/server/cluster/events?limit=0", admin, nil)
	require.Equal(t, 400, r.Status, r.Raw)
	rel := f.do(t, "GET", "/api/server/cluster/releases", admin, nil)
	require.Equal(t, 200, rel.Status, rel.Raw)
	require.NotEmpty(t, rel.Body["engine"])

	status := f.send(t, signInternal(t, k, "POST", "/v1/command", map[string]any{"command": "cluster.status"}))
	require.Equal(t, 200, status.Status, status.Raw)
	require.Len(t, status.Body["admissions"], 2)
}

// The join routes are budgeted per address (internal/ratelimit, shared by
// replicas): past cluster.JoinsPerAddress join attempts, or
// cluster.FollowsPerAddress stream opens, in a window the address gets
// rate_limited with Retry-After, whether its attempts were right or
// wrong.
func TestClusterJoinRoutesRateLimitedPerAddress(t *testing.T) {
	t.Parallel()
	f := setup(t)
	j := newClusterJoiner(t)
	for i := range cluster.JoinsPerAddress.Limit {
		r := f.do(t, "POST", "/api/bootstrap/cluster/join", "", j.body("cjc_guessed"))
		require.Equal(t, 403, r.Status, "attempt %d: %s", i, r.Raw)
	}
	r := f.do(t, "POST", "/api/bootstrap/cluster/join", "", j.body("cjc_guessed"))
	require.Equal(t, 429, r.Status, r.Raw)
	require.Equal(t, "rate_limited", r.Body["error"])
	require.NotEmpty(t, r.Header.Get("Retry-After"))

	follow := func() int {
		req, err := http.NewRequest("GET", f.url+"/api/bootstrap/cluster/join/00000000-0000-0000-0000-000000000000/events", nil)
		require.NoError(t, err)
		req.Header.Set(cluster.TokenHeader, "cjt_guessed")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		return res.StatusCode
	}
	for i := range cluster.FollowsPerAddress.Limit {
		require.NotEqual(t, 429, follow(), "stream %d", i)
	}
	require.Equal(t, 429, follow())
}

// memberKey joins a worker with a fresh join code from the bridge (k),
// approves it through the bridge and answers the key its handoff holds.
func (f *fixture) memberKey(t *testing.T, k internalKey) (internalKey, string) {
	t.Helper()
	r := f.send(t, signInternal(t, k, "POST", "/v1/command", map[string]any{"command": "cluster.join-code", "role": "worker"}))
	require.Equal(t, 200, r.Status, r.Raw)
	j := newClusterJoiner(t)
	r = f.do(t, "POST", "/api/bootstrap/cluster/join", "", j.body(r.Body["join_code"].(map[string]any)["code"].(string)))
	require.Equal(t, 201, r.Status, r.Raw)
	id, token := r.Body["admission_id"].(string), r.Body["token"].(string)
	r = f.send(t, signInternal(t, k, "POST", "/v1/command", map[string]any{"command": "cluster.approve", "admission_id": id}))
	require.Equal(t, 200, r.Status, r.Raw)
	var boxB64 string
	require.Eventually(t, func() bool {
		_, boxB64 = f.joinStream(t, id, token)
		return boxB64 != ""
	}, time.Minute, 100*time.Millisecond)
	sealed, err := base64.StdEncoding.DecodeString(boxB64)
	require.NoError(t, err)
	h, err := cluster.OpenHandoff(sealed, j.pub, j.priv)
	require.NoError(t, err)
	secret, err := base64.StdEncoding.DecodeString(h.InternalKeySecret)
	require.NoError(t, err)
	return internalKey{id: h.InternalKeyID, secret: secret}, id
}

// Each admitted member gets an Internal key of its own (issue 26):
// retiring one member's key refuses that member, while another member and
// the operator's key still sign. Member keys are listed with their
// admission and do not count toward the operator's two keys.
func TestClusterMembersHaveTheirOwnInternalKeys(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	f.sudo(t, admin)
	k := f.createInternalKey(t, admin)
	a, admA := f.memberKey(t, k)
	b, admB := f.memberKey(t, k)
	require.NotEqual(t, a.id, b.id)
	require.NotEqual(t, k.id, a.id)

	list := f.do(t, "GET", "/api/server/internal-keys", admin, nil)
	require.Equal(t, 200, list.Status, list.Raw)
	admissions := map[string]any{}
	for _, key := range list.Body["keys"].([]any) {
		m := key.(map[string]any)
		admissions[m["key_id"].(string)] = m["admission_id"]
	}
	require.Equal(t, map[string]any{k.id: nil, a.id: admA, b.id: admB}, admissions)
	// The operator may still make a second key of their own.
	f.createInternalKey(t, admin)

	sign := func(key internalKey) int {
		return f.send(t, signInternal(t, key, "GET", "/api/internal/job-scheduler/public-base-url", nil)).Status
	}
	require.Equal(t, []int{200, 200, 200}, []int{sign(a), sign(b), sign(k)})
	r := f.do(t, "POST", "/api/server/internal-keys/"+a.id+"/retire", admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, []int{401, 200, 200}, []int{sign(a), sign(b), sign(k)})
}
