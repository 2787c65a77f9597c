package api_test

import (
	"encoding/base64"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
)

func keyIDs(t *testing.T, keys []string) []string {
	t.Helper()
	out := make([]string, len(keys))
	for i, k := range keys {
		b, err := base64.StdEncoding.DecodeString(k)
		require.NoError(t, err)
		out[i] = proto.KeyID(b)
	}
	return out
}

// Enrollment hands the agent the script-signing key; heartbeats report
// which keys an agent trusts and carry the current list, so a rotation
// reaches agents; the admin route counts who has the active key.
func TestScriptSigningKeysReachAgents(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "signing")
	a := f.enrolled(t, admin, site, "sign-01")
	require.Len(t, a.scriptKeys, 1, "enrollment delivers the key")
	b := f.enrolled(t, admin, site, "sign-02")
	require.Equal(t, a.scriptKeys, b.scriptKeys)

	beat := func(ag *testAgent, ids []string) []string {
		hb := ag.device(t, "POST", proto.PathHeartbeat, proto.Heartbeat{SentAt: time.Now().UTC(), AgentVersion: "t",
			ScriptSigningKeyIDs: ids, Metrics: proto.Metrics{LoggedInUsers: []string{}}})
		require.Equal(t, 200, hb.Status, hb.Raw)
		return trustedKeys(hb.Body)
	}
	require.Equal(t, a.scriptKeys, beat(a, keyIDs(t, a.scriptKeys)))

	st := f.do(t, "GET", "/api/server/script-signing", admin, nil)
	require.Equal(t, 200, st.Status, st.Raw)
	keys := st.Body["keys"].([]any)
	require.Len(t, keys, 1)
	k0 := keys[0].(map[string]any)
	require.Equal(t, "active", k0["state"])
	require.Equal(t, a.scriptKeys[0], k0["public_key"])
	require.Equal(t, keyIDs(t, a.scriptKeys)[0], k0["key_id"])
	require.EqualValues(t, 1, st.Body["agents_on_current"])
	require.EqualValues(t, 2, st.Body["agents_total"])

	// Rotating now would retire nothing yet, but the next rotation would
	// retire the key sign-02 is still on: refused until every agent has
	// the active key.
	rot := f.do(t, "POST", "/api/server/script-signing/rotate", admin, nil)
	require.Equal(t, 409, rot.Status, rot.Raw)
	require.Equal(t, "script_key_rotation_pending", rot.Body["error"])
	beat(b, keyIDs(t, b.scriptKeys))
	rot = f.do(t, "POST", "/api/server/script-signing/rotate", admin, nil)
	require.Equal(t, 200, rot.Status, rot.Raw)
	keys = rot.Body["keys"].([]any)
	require.Len(t, keys, 2)
	require.Equal(t, "active", keys[0].(map[string]any)["state"])
	require.Equal(t, "previous", keys[1].(map[string]any)["state"])
	require.Equal(t, a.scriptKeys[0], keys[1].(map[string]any)["public_key"])
	require.EqualValues(t, 0, rot.Body["agents_on_current"])

	// The next heartbeat answer carries the new key first and keeps the
	// old one trusted; once the agent reports both it counts as current.
	var current []string
	require.Eventually(t, func() bool { current = beat(b, keyIDs(t, b.scriptKeys)); return len(current) == 2 }, 30*time.Second, 200*time.Millisecond)
	require.Equal(t, a.scriptKeys[0], current[1])
	beat(b, keyIDs(t, current))
	st = f.do(t, "GET", "/api/server/script-signing", admin, nil)
	require.EqualValues(t, 1, st.Body["agents_on_current"])

	// sign-01 has not reported the new key: only a forced rotation
	// proceeds (a key believed compromised).
	require.Equal(t, 409, f.do(t, "POST", "/api/server/script-signing/rotate", admin, nil).Status)
	rot = f.do(t, "POST", "/api/server/script-signing/rotate", admin, map[string]any{"force": true})
	require.Equal(t, 200, rot.Status, rot.Raw)
	require.Len(t, rot.Body["keys"].([]any), 2)

	// Operators are not administrators.
	op := f.operator(t, "signing-op")
	require.Equal(t, 403, f.do(t, "GET", "/api/server/script-signing", op, nil).Status)
	require.Equal(t, 403, f.do(t, "POST", "/api/server/script-signing/rotate", op, nil).Status)
}

// A scheduled job's content is signed when the job is saved; rotations
// sign it again, so the job still runs on an agent after the key that
// first signed it is retired.
func TestScriptKeyRotationsKeepJobsRunnable(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "rotate")
	a := f.scriptAgent(t, admin, site, "rotate-01")
	// beat reports the keys the agent trusts and takes the answer's list,
	// as the real agent's heartbeat loop does.
	beat := func() []string {
		a.mu.Lock()
		ids := keyIDs(t, a.trusted)
		a.mu.Unlock()
		hb := a.device(t, "POST", proto.PathHeartbeat, proto.Heartbeat{SentAt: time.Now().UTC(), AgentVersion: "t",
			ScriptSigningKeyIDs: ids, Metrics: proto.Metrics{LoggedInUsers: []string{}}})
		require.Equal(t, 200, hb.Status, hb.Raw)
		keys := trustedKeys(hb.Body)
		a.mu.Lock()
		a.trusted = keys
		a.mu.Unlock()
		return keys
	}
	first := beat()
	require.Len(t, first, 1)

	r := f.do(t, "POST", "/api/assemblies", admin, map[string]any{"name": "signed once", "kind": "script", "language": "sh",
		"body": "echo still-runs"})
	require.Equal(t, 201, r.Status, r.Raw)
	r = f.do(t, "POST", "/api/scheduled_jobs", admin, map[string]any{"name": "yearly", "kind": "script",
		"assembly_id": r.Body["id"], "targets": map[string]any{"devices": []string{a.guid}},
		"schedule": map[string]any{"type": "cron", "expression": "0 0 1 1 *"}})
	require.Equal(t, 201, r.Status, r.Raw)
	job := int64(r.Body["id"].(float64))

	// Two rotations, the agent catching up after each: the key that
	// signed the job is retired by the second.
	for range 2 {
		rot := f.do(t, "POST", "/api/server/script-signing/rotate", admin, nil)
		require.Equal(t, 200, rot.Status, rot.Raw)
		active := rot.Body["keys"].([]any)[0].(map[string]any)["public_key"]
		require.Eventually(t, func() bool { return beat()[0] == active }, 30*time.Second, 200*time.Millisecond)
		beat()
	}
	require.NotContains(t, beat(), first[0], "the first key is retired")

	r = f.do(t, "POST", fmt.Sprintf("/api/scheduled_jobs/%d/rerun", job), admin, nil)
	require.Equal(t, 202, r.Status, r.Raw)
	runID := r.Body["run_id"].(string)
	var run response
	require.Eventually(t, func() bool {
		run = f.do(t, "GET", fmt.Sprintf("/api/scheduled_jobs/%d/runs/%s", job, runID), admin, nil)
		return run.Status == 200 && (run.Body["status"] == "succeeded" || run.Body["status"] == "failed")
	}, 90*time.Second, 100*time.Millisecond, "the rerun never finished")
	res := onlyResult(t, run)
	require.Equal(t, "succeeded", res["status"], "%v", res)
	require.Equal(t, "still-runs\n", res["stdout"])
}
