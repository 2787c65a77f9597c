package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/authtest"
)

// The end-to-end test: the real Engine and two real cairn-agent
// processes on this machine, over HTTPS with the pinned local CA.
func TestAgentsEndToEnd(t *testing.T) {
	t.Parallel()
	tmp, agentBin := agentWorkspace(t, "cairn-agents-e2e-")

	eng := startServe(t, filepath.Join(tmp, "data"), "CAIRN_DEVICE_ONLINE_WINDOW=30s")
	token := eng.signIn(t)
	site := eng.post(t, "/api/sites", token, map[string]any{"name": "E2E", "site_worker_slug": "e2e"})
	code := eng.post(t, "/api/admin/enrollment-codes", token, map[string]any{"site_id": site["site_id"]})["code"].(string)
	caFile := filepath.Join(tmp, "ca.pem")
	require.NoError(t, os.WriteFile(caFile, eng.checkHTTPS(t), 0o644))

	// Both agents enroll and wait; an operator approves them.
	a := startAgent(t, agentBin, tmp, "e2e-alpha", "enroll", "--server", eng.httpsBase, "--code", code, "--ca-file", caFile)
	b := startAgent(t, agentBin, tmp, "e2e-bravo", "enroll", "--server", eng.httpsBase, "--code", code, "--ca-file", caFile)
	for _, ag := range []*agentProc{a, b} {
		id := eng.waitApproval(t, token, ag.hostname)
		r := eng.post(t, "/api/admin/device-approvals/"+id+"/approve", token, nil)
		// The agent's poll may collect its credentials between the
		// decision and the route's read: enrolled is approved and done.
		require.Contains(t, []any{proto.ApprovalApproved, proto.ApprovalEnrolled}, r["status"])
		ag.waitExit(t, 60*time.Second)
	}
	a.cfg, b.cfg = loadAgentConfig(t, a.dir), loadAgentConfig(t, b.dir)
	require.Equal(t, strings.TrimSpace(string(must(os.ReadFile(caFile)))), strings.TrimSpace(a.cfg.InternalCAPEM), "enroll pins the CA")
	a.run(t, agentBin)
	b.run(t, agentBin)

	// Both show Connected with this machine's inventory.
	osName := prettyName(t)
	for _, ag := range []*agentProc{a, b} {
		eng.waitStatus(t, token, ag, "Connected", 90*time.Second)
		// A hang guard only: a first full collection (package database
		// included) on a loaded machine can take minutes.
		var last map[string]any
		ok := assertEventually(5*time.Minute, func() bool {
			last = eng.call(t, "GET", "/api/device/details/"+ag.hostname, token, nil)
			return strings.Contains(fmt.Sprint(last["os"]), osName) && strings.Contains(fmt.Sprint(last["software"]), "bash")
		})
		require.True(t, ok, "%s shows its inventory; last os %v, software %.300v", ag.hostname, last["os"], last["software"])
	}

	// A replayed DPoP proof is refused.
	proof := a.proof(t, "GET", eng.httpsBase+proto.PathRealtimeRoute)
	require.Equal(t, 200, a.callWithProof(t, eng, proof))
	require.Equal(t, 401, a.callWithProof(t, eng, proof), "the same proof twice")

	// kill -9 of one agent: Disconnected at once (its socket is gone),
	// Offline once the online window passes without heartbeats.
	require.NoError(t, b.cmd.Process.Signal(syscall.SIGKILL))
	eng.waitStatus(t, token, b, "Disconnected", 30*time.Second)
	eng.waitStatus(t, token, b, "Offline", 90*time.Second)

	// Quarantine blocks the agent's calls and drops its socket.
	guid := a.cfg.Agent.GUID
	eng.post(t, "/api/devices/"+guid+"/quarantine", token, nil)
	eng.waitStatus(t, token, a, "Disconnected", 30*time.Second)
	// Wait on the agent's own refused heartbeats, not on the clock: from
	// one refusal to the next, last_seen must not move.
	refused := func() int {
		n := 0
		for line := range strings.Lines(a.output()) {
			if strings.Contains(line, "heartbeat failed") && strings.Contains(line, "device_quarantined") {
				n++
			}
		}
		return n
	}
	require.Eventually(t, func() bool { return refused() >= 1 }, 90*time.Second, 200*time.Millisecond, "a refused heartbeat:\n%s", a.output())
	seen := eng.call(t, "GET", "/api/devices/"+guid, token, nil)["last_seen"]
	n := refused()
	require.Eventually(t, func() bool { return refused() > n }, 90*time.Second, 200*time.Millisecond, "another refused heartbeat")
	dev := eng.call(t, "GET", "/api/devices/"+guid, token, nil)
	require.Equal(t, seen, dev["last_seen"], "a quarantined agent's heartbeats are refused")
	require.Equal(t, false, dev["agent_socket"])
	require.Contains(t, a.output(), "device_quarantined")

	// Unquarantine: a fresh token works and the agent reconnects.
	eng.post(t, "/api/devices/"+guid+"/unquarantine", token, nil)
	eng.waitStatus(t, token, a, "Connected", 150*time.Second)

	// Purge: refresh answers device_purged, so the agent drops its tokens
	// and asks to enroll again.
	eng.post(t, "/api/devices/"+guid+"/purge", token, nil)
	eng.waitApproval(t, token, a.hostname)
	require.Contains(t, a.output(), "device_purged")
}

// agentWorkspace is a temporary directory (traversable by the postgres OS
// user) holding a freshly built cairn-agent.
func agentWorkspace(t *testing.T, prefix string) (dir, agentBin string) {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	agentBin = filepath.Join(dir, "cairn-agent")
	out, err := exec.Command("go", "build", "-o", agentBin, "github.com/cairn-rmm/cairn/cmd/cairn-agent").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return dir, agentBin
}

// signIn bootstraps the Engine and returns an admin session token.
func (p *proc) signIn(t *testing.T) string {
	t.Helper()
	code := p.setupCode(t)
	p.post(t, "/api/bootstrap/aegis/setup", "", map[string]any{"passphrase": "e2e test passphrase", "setup_code": code})
	setup := p.post(t, "/api/bootstrap/admin/setup", "", map[string]any{"username": "admin", "password": "e2e test password", "setup_code": code})
	secret := setup["mfa"].(map[string]any)["secret"].(string)
	now := time.Now()
	p.post(t, "/api/bootstrap/admin/mfa/verify", "", map[string]any{"pending_token": setup["pending_token"], "code": authtest.TOTP(t, secret, now)})
	login := p.post(t, "/api/auth/login", "", map[string]any{"username": "admin", "password": "e2e test password"})
	// The next step's code: the current one was spent (±1 step is accepted).
	sess := p.post(t, "/api/auth/mfa/verify", "", map[string]any{"pending_token": login["pending_token"], "code": authtest.TOTP(t, secret, now.Add(30*time.Second))})
	return sess["token"].(string)
}

// waitApproval returns the ID of hostname's pending enrollment request.
func (p *proc) waitApproval(t *testing.T, token, hostname string) string {
	t.Helper()
	var id string
	require.Eventually(t, func() bool {
		for _, a := range p.call(t, "GET", "/api/admin/device-approvals?status=pending", token, nil)["approvals"].([]any) {
			if m := a.(map[string]any); m["hostname"] == hostname {
				id = m["id"].(string)
				return true
			}
		}
		return false
	}, 60*time.Second, 250*time.Millisecond, "no pending request from %s", hostname)
	return id
}

// enrollAgent enrolls a real cairn-agent as hostname with code over HTTPS
// (caFile pinned), approves it as token's operator and returns it with
// its configuration loaded, not running: the caller sets its environment
// and runs it.
func (p *proc) enrollAgent(t *testing.T, token, agentBin, tmp, hostname, code, caFile string) *agentProc {
	t.Helper()
	ag := startAgent(t, agentBin, tmp, hostname, "enroll", "--server", p.httpsBase, "--code", code, "--ca-file", caFile)
	id := p.waitApproval(t, token, ag.hostname)
	r := p.post(t, "/api/admin/device-approvals/"+id+"/approve", token, nil)
	// The agent's poll may collect its credentials between the decision
	// and the route's read: enrolled is approved and done.
	require.Contains(t, []any{proto.ApprovalApproved, proto.ApprovalEnrolled}, r["status"])
	ag.waitExit(t, 60*time.Second)
	ag.cfg = loadAgentConfig(t, ag.dir)
	return ag
}

func (p *proc) waitStatus(t *testing.T, token string, ag *agentProc, want string, limit time.Duration) {
	t.Helper()
	var last any
	ok := assertEventually(limit, func() bool {
		for _, d := range p.call(t, "GET", "/api/devices", token, nil)["devices"].([]any) {
			if m := d.(map[string]any); m["hostname"] == ag.hostname {
				last = m["connectivity_status"]
				return last == want
			}
		}
		return false
	})
	require.True(t, ok, "%s: want %s, last %v; agent output:\n%s", ag.hostname, want, last, ag.output())
}

// assertEventually reports whether cond became true before limit, a hang
// guard only. cond runs on the test's goroutine (it may call require, as
// p.call does, which require.Eventually's goroutine may not), at once and
// then at each tick, never after the deadline.
func assertEventually(limit time.Duration, cond func() bool) bool {
	if cond() {
		return true
	}
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-deadline.C:
			return cond()
		case <-tick.C:
			if cond() {
				return true
			}
		}
	}
}

// agentProc is one cairn-agent with its own config directory.
type agentProc struct {
	hostname string
	dir      string
	cmd      *exec.Cmd
	cfg      *agent.Config
	// env is added to the agent's environment.
	env []string
	mu  sync.Mutex
	out bytes.Buffer
}

func (a *agentProc) Write(b []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.out.Write(b)
}

func (a *agentProc) output() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.out.String()
}

func startAgent(t *testing.T, bin, tmp, hostname string, args ...string) *agentProc {
	t.Helper()
	a := &agentProc{hostname: hostname, dir: filepath.Join(tmp, hostname)}
	require.NoError(t, os.MkdirAll(a.dir, 0o700))
	a.start(t, bin, append(args, "--hostname", hostname)...)
	return a
}

func (a *agentProc) start(t *testing.T, bin string, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, append(args, "--config", filepath.Join(a.dir, "agent.json"))...)
	cmd.Env = append(os.Environ(), a.env...)
	cmd.Stdout, cmd.Stderr = a, a
	require.NoError(t, cmd.Start())
	a.cmd = cmd
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_, _ = cmd.Process.Wait()
		}
	})
}

func (a *agentProc) run(t *testing.T, bin string) {
	t.Helper()
	a.start(t, bin, "run", "--hostname", a.hostname)
}

func (a *agentProc) waitExit(t *testing.T, limit time.Duration) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- a.cmd.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, "%s:\n%s", a.hostname, a.output())
	case <-time.After(limit):
		t.Fatalf("%s did not finish enrolling:\n%s", a.hostname, a.output())
	}
}

func loadAgentConfig(t *testing.T, dir string) *agent.Config {
	t.Helper()
	c, err := agent.Load(filepath.Join(dir, "agent.json"))
	require.NoError(t, err)
	require.NotEmpty(t, c.Agent.GUID)
	require.True(t, c.HasTokens())
	return c
}

// proof makes a DPoP proof with the agent's key and current access token.
func (a *agentProc) proof(t *testing.T, method, url string) string {
	t.Helper()
	a.cfg = loadAgentConfigFresh(t, a.dir)
	key, err := a.cfg.PrivateKey()
	require.NoError(t, err)
	p, err := agent.NewProof(key, method, url, a.cfg.AccessToken, time.Now())
	require.NoError(t, err)
	return p
}

func loadAgentConfigFresh(t *testing.T, dir string) *agent.Config {
	t.Helper()
	c, err := agent.Load(filepath.Join(dir, "agent.json"))
	require.NoError(t, err)
	return c
}

// callWithProof calls the route endpoint as the agent with a given proof.
func (a *agentProc) callWithProof(t *testing.T, p *proc, proof string) int {
	t.Helper()
	req, err := http.NewRequest("GET", p.httpsBase+proto.PathRealtimeRoute, nil)
	require.NoError(t, err)
	req.Header.Set(proto.HeaderAgentContext, proto.AgentContextValue(proto.ContextPrivileged))
	req.Header.Set(proto.HeaderDPoP, proof)
	req.Header.Set("Authorization", proto.AuthScheme+" "+a.cfg.AccessToken)
	res, err := p.httpsClient(t).Do(req)
	require.NoError(t, err)
	res.Body.Close()
	return res.StatusCode
}

func prettyName(t *testing.T) string {
	t.Helper()
	for _, line := range strings.Split(string(must(os.ReadFile("/etc/os-release"))), "\n") {
		if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
			return strings.Trim(v, `"`)
		}
	}
	t.Fatal("no PRETTY_NAME in /etc/os-release")
	return ""
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// httpsClient trusts the Engine's local CA (fetched over loopback HTTP).
func (p *proc) httpsClient(t *testing.T) *http.Client {
	t.Helper()
	res, err := http.Get(p.base + "/api/tls/ca.pem")
	require.NoError(t, err)
	defer res.Body.Close()
	var buf bytes.Buffer
	_, err = buf.ReadFrom(res.Body)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(buf.Bytes()))
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}
