package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/internal/authtest"
	"github.com/cairn-rmm/cairn/internal/pgtest"
)

// cairnCmd is the cairn command (the test binary) with env and no
// inherited CAIRN_ variables.
func cairnCmd(env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append([]string{"CAIRN_TEST_MAIN=1"}, env...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DATABASE_URL=") && !strings.HasPrefix(kv, "TEMPORAL_ADDRESS=") && !strings.HasPrefix(kv, "CAIRN_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	return cmd
}

// bridge runs `cairn command` and decodes its JSON answer.
func bridge(t *testing.T, env []string, args ...string) map[string]any {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := cairnCmd(env, append([]string{"command"}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Run(), "cairn command %v: %s", args, errb.String())
	var v map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &v), out.String())
	return v
}

// A standalone worker joins a running Engine through the cluster
// admission, end to end with real processes (issue 26): an operator on
// the Engine's host issues a join code with `cairn command` (the operator
// bridge, POST /v1/command, signed with an Internal key); `cairn cluster
// join` on the new host asks with it and prints its key's fingerprint,
// which the admin sees; the operator approves with `cairn command`; the
// joiner receives the sealed Internal key and writes its member file; the
// worker started from that file asks the Engine for its public URL over
// the Internal class (it has none configured) and shows up as a member
// with its admission, role, version and sites.
func TestClusterWorkerJoinsThroughAnAdmission(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	dbURL := pgtest.URL(pgtest.NewDatabase(t))
	temporalPort := freePort(t)
	eng := startServe(t, filepath.Join(tmp, "data"), "DATABASE_URL="+dbURL, "CAIRN_SITE_WORKERS=none",
		fmt.Sprintf("CAIRN_TEMPORAL_PORT=%d", temporalPort))
	token, totpSecret, signedInAt := eng.signInSecret(t)
	slug := eng.post(t, "/api/sites", token, map[string]any{"name": "Joined", "site_worker_slug": "joined-e2e"})["site_worker_slug"].(string)

	// The admin makes an Internal key for the Engine host's operator,
	// re-authenticating with an authenticator code of a step sign-in did
	// not spend (codes are taken once, in order).
	require.True(t, assertEventually(time.Minute, func() bool { return time.Now().Unix()/30 > signedInAt.Unix()/30 }))
	r := eng.rawCall(t, "POST", "/api/auth/reauth", token, map[string]any{"password": "e2e test password",
		"totp_code": authtest.TOTP(t, totpSecret, time.Now().Add(30*time.Second))})
	require.Equal(t, 200, r.status, r.body)
	key := eng.post(t, "/api/server/internal-keys", token, nil)
	keyFile := filepath.Join(tmp, "internal.key")
	require.NoError(t, os.WriteFile(keyFile, []byte(key["secret"].(string)), 0o600))
	hostEnv := []string{"CAIRN_INTERNAL_KEY_ID=" + key["key_id"].(string), "CAIRN_INTERNAL_KEY_FILE=" + keyFile, "CAIRN_ENGINE_URL=" + eng.base}

	code := bridge(t, hostEnv, "cluster.join-code", "--role", "worker")["join_code"].(map[string]any)["code"].(string)

	workerData := filepath.Join(tmp, "worker-data")
	join := cairnCmd(nil, "cluster", "join", "--engine-url", eng.base, "--code", code, "--role", "worker", "--site", slug,
		"--name", "e2e-joiner", "--data-dir", workerData)
	stdout, err := join.StdoutPipe()
	require.NoError(t, err)
	var joinErr bytes.Buffer
	join.Stderr = &joinErr
	require.NoError(t, join.Start())
	t.Cleanup(func() {
		if join.ProcessState == nil {
			_ = join.Process.Kill()
			_, _ = join.Process.Wait()
		}
	})
	lines := bufio.NewReader(stdout)
	first, err := lines.ReadString('\n')
	require.NoError(t, err, joinErr.String())
	m := regexp.MustCompile(`^admission (\S+) requested; key fingerprint (\S+)`).FindStringSubmatch(first)
	require.NotNil(t, m, first)
	admissionID, fingerprint := m[1], m[2]
	rest := make(chan string, 1)
	go func() { b, _ := io.ReadAll(lines); rest <- string(b) }()

	// The admin sees the request with the fingerprint the joiner printed.
	var adm map[string]any
	for _, a := range eng.call(t, "GET", "/api/server/cluster", token, nil)["admissions"].([]any) {
		if a.(map[string]any)["id"] == admissionID {
			adm = a.(map[string]any)
		}
	}
	require.NotNil(t, adm)
	require.Equal(t, "pending", adm["state"])
	require.Equal(t, fingerprint, adm["fingerprint"])
	require.Equal(t, []any{slug}, adm["sites"])

	decision := bridge(t, hostEnv, "cluster.approve", admissionID)["decision"].(map[string]any)
	require.Equal(t, "cluster-admission:"+admissionID, decision["workflow_id"])
	require.NoError(t, join.Wait(), "cairn cluster join: %s", joinErr.String())
	out := first + <-rest
	require.Contains(t, out, "approved: member file")
	require.NotContains(t, out, key["secret"].(string), "the key is never printed")
	fi, err := os.Stat(filepath.Join(workerData, "cluster-member.json"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	// The worker: no CAIRN_PUBLIC_URL; it asks the Engine.
	pass := filepath.Join(tmp, "passphrase")
	require.NoError(t, os.WriteFile(pass, []byte("e2e test passphrase"), 0o600))
	w := startWorker(t, slug, []string{"DATABASE_URL=" + dbURL, fmt.Sprintf("TEMPORAL_ADDRESS=127.0.0.1:%d", temporalPort),
		"CAIRN_DATA_DIR=" + workerData, "CAIRN_AEGIS_PASSPHRASE_FILE=" + pass})
	require.True(t, assertEventually(time.Minute, func() bool { return strings.Contains(w.out.String(), "site worker running") }), w.out.String())
	require.Contains(t, w.out.String(), `"public_url":"`+eng.publicURL(t)+`"`, "the worker's public URL is the Engine's")
	require.Contains(t, w.out.String(), `"public_url_from_engine":true`)

	var worker map[string]any
	require.True(t, assertEventually(time.Minute, func() bool {
		for _, mm := range eng.call(t, "GET", "/api/server/cluster", token, nil)["members"].([]any) {
			// Its sites appear once its workers run (the next refresh).
			if mm := mm.(map[string]any); mm["role"] == "worker" && mm["state"] == "up" && len(mm["sites"].([]any)) > 0 {
				worker = mm
				return true
			}
		}
		return false
	}), "the worker is a member")
	require.Equal(t, admissionID, worker["admission_id"])
	require.Equal(t, []any{slug}, worker["sites"])
	require.Equal(t, w.base, worker["url"])
	require.NotEmpty(t, worker["version"])

	// The joined host's own operator bridge calls sign with the key from
	// the member file.
	status := bridge(t, []string{"CAIRN_DATA_DIR=" + workerData, "CAIRN_ENGINE_URL=" + eng.base}, "cluster.status")
	require.Contains(t, fmt.Sprint(status["members"]), admissionID)
}

// signInSecret is signIn that also answers the administrator's
// authenticator secret (for re-authentication) and the time whose step
// and the next one sign-in spent.
func (p *proc) signInSecret(t *testing.T) (string, string, time.Time) {
	t.Helper()
	code := p.setupCode(t)
	p.post(t, "/api/bootstrap/aegis/setup", "", map[string]any{"passphrase": "e2e test passphrase", "setup_code": code})
	setup := p.post(t, "/api/bootstrap/admin/setup", "", map[string]any{"username": "admin", "password": "e2e test password", "setup_code": code})
	secret := setup["mfa"].(map[string]any)["secret"].(string)
	now := time.Now()
	p.post(t, "/api/bootstrap/admin/mfa/verify", "", map[string]any{"pending_token": setup["pending_token"], "code": authtest.TOTP(t, secret, now)})
	login := p.post(t, "/api/auth/login", "", map[string]any{"username": "admin", "password": "e2e test password"})
	sess := p.post(t, "/api/auth/mfa/verify", "", map[string]any{"pending_token": login["pending_token"], "code": authtest.TOTP(t, secret, now.Add(30*time.Second))})
	return sess["token"].(string), secret, now
}
