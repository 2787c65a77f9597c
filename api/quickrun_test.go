package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent"
	"github.com/cairn-rmm/cairn/agent/automation"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/runtime"
)

// scriptAgent is an enrolled test agent whose socket is served by the
// real script runner (agent/scripts), with live output posted through
// Device auth like the real agent does.
type scriptAgent struct {
	*testAgent
	conn     *websocket.Conn
	handlers *runtime.Handlers

	mu      sync.Mutex
	trusted []string // script_signing.trusted_public_keys
}

func (f *fixture) scriptAgent(t *testing.T, admin string, site int64, hostname string) *scriptAgent {
	return f.scriptAgentWith(t, admin, site, hostname, nil)
}

// scriptAgentWith is scriptAgent with the runner's options changed (its
// PATH).
func (f *fixture) scriptAgentWith(t *testing.T, admin string, site int64, hostname string, change func(*automation.Options)) *scriptAgent {
	t.Helper()
	a := f.enrolled(t, admin, site, hostname)
	s := &scriptAgent{testAgent: a, trusted: a.scriptKeys}
	handlers := runtime.NewHandlers()
	opts := automation.Options{Config: s.config, OutputInterval: 100 * time.Millisecond, TempDir: t.TempDir()}
	if change != nil {
		change(&opts)
	}
	require.NoError(t, automation.Register(handlers, opts))
	s.handlers = handlers
	s.serve(t)
	return s
}

// serve connects the agent's socket and answers on it until the test
// ends; called again, it reconnects as an agent would after the Engine
// closed its socket.
func (s *scriptAgent) serve(t *testing.T) {
	conn := s.connect(t)
	s.conn = conn
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); conn.CloseNow(); <-done })
	go func() {
		defer close(done)
		serveSocket(ctx, conn, s.handlers, s)
	}()
}

func (s *scriptAgent) config() (*agent.Config, error) {
	cfg := agent.Default()
	cfg.Agent.GUID = s.guid
	s.mu.Lock()
	cfg.ScriptSigning.TrustedPublicKeys = append([]string(nil), s.trusted...)
	s.mu.Unlock()
	return cfg, nil
}

// Call makes a Device call like the agent's token manager (DPoP-bound
// access token and proof), without failing the test from the socket's
// goroutine.
func (s *scriptAgent) Call(ctx context.Context, method, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	proof, err := agent.NewProof(s.key, method, testPublicURL+path, s.access, s.f.clk.Now())
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, method, s.f.url+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(proto.HeaderAgentContext, proto.AgentContextValue(proto.ContextPrivileged))
	req.Header.Set(proto.HeaderDPoP, proof)
	req.Header.Set("Authorization", proto.AuthScheme+" "+s.access)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %d", method, path, res.StatusCode)
	}
	if out != nil {
		return json.NewDecoder(res.Body).Decode(out)
	}
	return nil
}

// serveSocket answers the Engine's requests on conn with handlers.
func serveSocket(ctx context.Context, conn *websocket.Conn, handlers *runtime.Handlers, call runtime.Caller) {
	serveSocketSeeing(ctx, conn, handlers, call, nil)
}

// serveSocketSeeing is serveSocket telling seen (when not nil) the type of
// each request before it is answered.
func serveSocketSeeing(ctx context.Context, conn *websocket.Conn, handlers *runtime.Handlers, call runtime.Caller, seen func(typ string)) {
	var writeMu sync.Mutex
	write := func(env proto.Envelope) {
		writeMu.Lock()
		defer writeMu.Unlock()
		_ = writeEnvelope(ctx, conn, env)
	}
	for {
		_, b, err := conn.Read(ctx)
		if err != nil {
			return
		}
		var env proto.Envelope
		if json.Unmarshal(b, &env) != nil {
			continue
		}
		if env.Type == proto.MsgPing {
			write(proto.Envelope{Type: proto.MsgPong, ID: env.ID})
			continue
		}
		if seen != nil {
			seen(env.Type)
		}
		h := handlers.Lookup(env.Type)
		go func() {
			var result any
			err := error(&proto.Error{Code: proto.CodeOpUnsupported, Message: "no handler"})
			if h != nil {
				result, err = h(ctx, call, env.Payload)
			}
			if err != nil {
				var pe *proto.Error
				if !errors.As(err, &pe) {
					pe = &proto.Error{Code: "failed", Message: err.Error()}
				}
				result = pe
			}
			raw, _ := json.Marshal(result)
			write(proto.Envelope{Type: proto.MsgReply, ID: env.ID, Payload: raw})
		}()
	}
}

// quickRun starts a run and returns its ID.
func (f *fixture) quickRun(t *testing.T, token string, body map[string]any) string {
	t.Helper()
	r := f.do(t, "POST", "/api/scripts/quick_run", token, body)
	require.Equal(t, 202, r.Status, r.Raw)
	return r.Body["run_id"].(string)
}

// finishedRun waits until the run is succeeded or failed.
func (f *fixture) finishedRun(t *testing.T, token, runID string) response {
	t.Helper()
	var r response
	require.Eventually(t, func() bool {
		r = f.do(t, "GET", "/api/scripts/quick_run/"+runID, token, nil)
		return r.Status == 200 && (r.Body["status"] == "succeeded" || r.Body["status"] == "failed")
	}, 90*time.Second, 100*time.Millisecond, "the run never finished: %s", r.Raw)
	return r
}

func onlyResult(t *testing.T, r response) map[string]any {
	t.Helper()
	results := r.Body["results"].([]any)
	require.Len(t, results, 1, r.Raw)
	return results[0].(map[string]any)
}

// A quick run on a real agent's script runner: output and exit code, a
// failing script, a timeout, truncated output; each result is also in the
// device's activity history with the run's metadata.
func TestQuickRunOnAgent(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "quick")
	a := f.scriptAgent(t, admin, site, "quick-01")

	cases := []struct {
		name      string
		body      string
		timeout   int
		status    string
		exit      float64
		stdout    string
		stderr    string
		truncated bool
	}{
		{"succeeds", "echo hello; echo warn >&2", 60, "succeeded", 0, "hello\n", "warn\n", false},
		{"non-zero exit", "echo partial; exit 7", 60, "failed", 7, "partial\n", "", false},
		{"timeout", "echo started; sleep 600", 1, "timed_out", -1, "started\n", "", false},
		{"truncated", "head -c 1200000 /dev/zero | tr '\\0' 'y'", 60, "succeeded", 0, strings.Repeat("y", proto.MaxScriptOutput), "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			id := f.quickRun(t, admin, map[string]any{"device_guids": []string{a.guid}, "language": "sh", "body": c.body,
				"timeout_seconds": c.timeout})
			r := f.finishedRun(t, admin, id)
			res := onlyResult(t, r)
			require.Equal(t, c.status, res["status"], r.Raw[:min(len(r.Raw), 2000)])
			require.Equal(t, c.exit, res["exit_code"])
			require.Equal(t, c.stdout == res["stdout"], true, "stdout differs (%d bytes)", len(res["stdout"].(string)))
			require.Equal(t, c.stderr, res["stderr"])
			require.Equal(t, c.truncated, res["stdout_truncated"])
			require.Equal(t, "quick-01", res["hostname"])
			require.NotEmpty(t, res["started_at"])
			require.NotEmpty(t, res["finished_at"])
			require.Equal(t, "quick_run", r.Body["kind"])
			require.Equal(t, "sh", r.Body["language"])
			wantRun := "succeeded"
			if c.status != "succeeded" {
				wantRun = "failed"
			}
			require.Equal(t, wantRun, r.Body["status"])
			require.NotEmpty(t, r.Body["finished_at"])

			// The activity row carries the run and the operation.
			var row map[string]any
			require.Eventually(t, func() bool {
				act := f.do(t, "GET", "/api/device/activity/quick-01", admin, nil)
				for _, e := range act.Body["activity"].([]any) {
					m := e.(map[string]any)
					meta, _ := m["metadata"].(map[string]any)
					if meta["run_id"] == id && m["status"] != "running" {
						row = m
						return true
					}
				}
				return false
			}, 30*time.Second, 100*time.Millisecond)
			meta := row["metadata"].(map[string]any)
			require.Equal(t, res["operation_id"], meta["operation_id"])
			require.Equal(t, "script_run", row["kind"])
		})
	}
}

// While a script runs, GET shows its output so far.
func TestQuickRunLiveOutput(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "live")
	a := f.scriptAgent(t, admin, site, "live-01")
	gate := filepath.Join(t.TempDir(), "gate")
	id := f.quickRun(t, admin, map[string]any{"device_guids": []string{a.guid}, "language": "sh",
		"body": "echo first; while [ ! -f " + gate + " ]; do sleep 0.05; done; echo second"})
	require.Eventually(t, func() bool {
		r := f.do(t, "GET", "/api/scripts/quick_run/"+id, admin, nil)
		res := onlyResult(t, r)
		return r.Body["status"] == "running" && res["status"] == "running" && res["stdout"] == "first\n"
	}, 60*time.Second, 100*time.Millisecond)
	require.NoError(t, os.WriteFile(gate, nil, 0o600))
	res := onlyResult(t, f.finishedRun(t, admin, id))
	require.Equal(t, "first\nsecond\n", res["stdout"])
}

// An agent that does not trust the signing key refuses the payload and
// runs nothing; the result says signature_invalid.
func TestQuickRunRefusedSignature(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "refuse")
	a := f.scriptAgent(t, admin, site, "refuse-01")
	// Two rotations retire the key the agent got at enrollment; the agent
	// (which skipped the heartbeats that carried the new keys) trusts
	// nothing the Engine signs now. Forced, since the agent lags.
	for range 2 {
		require.Equal(t, 200, f.do(t, "POST", "/api/server/script-signing/rotate", admin, map[string]any{"force": true}).Status)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	id := f.quickRun(t, admin, map[string]any{"device_guids": []string{a.guid}, "language": "sh", "body": "touch " + marker})
	r := f.finishedRun(t, admin, id)
	res := onlyResult(t, r)
	require.Equal(t, "failed", res["status"])
	require.Equal(t, proto.CodeSignatureInvalid, res["error_code"])
	require.Nil(t, res["exit_code"])
	require.NoFileExists(t, marker)

	// Given the current keys (as a heartbeat would), it runs the next one.
	hb := a.device(t, "POST", proto.PathHeartbeat, proto.Heartbeat{SentAt: time.Now().UTC(), Metrics: proto.Metrics{LoggedInUsers: []string{}}})
	require.Equal(t, 200, hb.Status)
	a.mu.Lock()
	a.trusted = trustedKeys(hb.Body)
	a.mu.Unlock()
	id = f.quickRun(t, admin, map[string]any{"device_guids": []string{a.guid}, "language": "sh", "body": "touch " + marker})
	require.Equal(t, "succeeded", onlyResult(t, f.finishedRun(t, admin, id))["status"])
	require.FileExists(t, marker)
}

// Quarantined devices are skipped with the code; a Windows language on a
// Linux device fails with unsupported_language; neither is sent.
func TestQuickRunSkipsAndUnsupported(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "skips")
	ok := f.scriptAgent(t, admin, site, "skip-ok")
	q := f.scriptAgent(t, admin, site, "skip-quarantined")
	require.Equal(t, 200, f.do(t, "POST", "/api/devices/"+q.guid+"/quarantine", admin, nil).Status)
	id := f.quickRun(t, admin, map[string]any{"device_guids": []string{ok.guid, q.guid}, "language": "sh", "body": "echo ok"})
	r := f.finishedRun(t, admin, id)
	byHost := map[string]map[string]any{}
	for _, x := range r.Body["results"].([]any) {
		m := x.(map[string]any)
		byHost[m["hostname"].(string)] = m
	}
	require.Equal(t, "succeeded", byHost["skip-ok"]["status"])
	require.Equal(t, "skipped", byHost["skip-quarantined"]["status"])
	require.Equal(t, "device_quarantined", byHost["skip-quarantined"]["error_code"])
	require.Equal(t, "failed", r.Body["status"])
	counts := r.Body["counts"].(map[string]any)
	require.EqualValues(t, 1, counts["succeeded"])
	require.EqualValues(t, 1, counts["skipped"])

	id = f.quickRun(t, admin, map[string]any{"device_guids": []string{ok.guid}, "language": "powershell", "body": "Write-Output hi"})
	res := onlyResult(t, f.finishedRun(t, admin, id))
	require.Equal(t, "failed", res["status"])
	require.Equal(t, proto.CodeUnsupportedLanguage, res["error_code"])
}

func TestQuickRunValidation(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "qrval")
	a := f.enrolled(t, admin, site, "qrval-01")
	guids := []string{a.guid}
	tooMany := make([]string, 1001)
	for i := range tooMany {
		tooMany[i] = fmt.Sprintf("g-%d", i)
	}
	cases := []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"no devices", map[string]any{"language": "sh", "body": "true"}, "device_guids"},
		{"too many devices", map[string]any{"device_guids": tooMany, "language": "sh", "body": "true"}, "device_guids"},
		{"unknown device", map[string]any{"device_guids": []string{"nope"}, "language": "sh", "body": "true"}, "device_guids[0]"},
		{"language", map[string]any{"device_guids": guids, "language": "perl", "body": "1"}, "language"},
		{"empty body", map[string]any{"device_guids": guids, "language": "sh", "body": " "}, "body"},
		{"body too large", map[string]any{"device_guids": guids, "language": "sh", "body": strings.Repeat("#", 256<<10+1)}, "body"},
		{"timeout", map[string]any{"device_guids": guids, "language": "sh", "body": "true", "timeout_seconds": 86401}, "timeout_seconds"},
		{"parameter name", map[string]any{"device_guids": guids, "language": "sh", "body": "true", "parameters": map[string]any{"bad-name": "x"}}, "parameters.bad-name"},
		{"parameter value", map[string]any{"device_guids": guids, "language": "sh", "body": "true", "parameters": map[string]any{"x": []int{1}}}, "parameters.x"},
		{"assembly", map[string]any{"device_guids": guids, "assembly_id": 999999}, "assembly_id"},
		{"run_as", map[string]any{"device_guids": guids, "language": "sh", "body": "true", "run_as": "administrator"}, "run_as"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := f.do(t, "POST", "/api/scripts/quick_run", admin, c.body)
			require.Equal(t, 400, r.Status, r.Raw[:min(len(r.Raw), 500)])
			require.Equal(t, "validation_failed", r.Body["error"])
			require.NotEmpty(t, r.field(c.field), r.Raw[:min(len(r.Raw), 500)])
		})
	}
	require.Equal(t, 404, f.do(t, "GET", "/api/scripts/quick_run/no-such-run", admin, nil).Status)
}

// An operator runs scripts only on devices of assigned sites and sees only
// those results; a run elsewhere reads as not found.
func TestQuickRunSiteScope(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	mine := f.createSite(t, admin, "scope-a")
	other := f.createSite(t, admin, "scope-b")
	a := f.scriptAgent(t, admin, mine, "scope-a-01")
	b := f.scriptAgent(t, admin, other, "scope-b-01")
	op := f.scopedOperatorOf(t, admin, "script-op", mine)

	r := f.do(t, "POST", "/api/scripts/quick_run", op, map[string]any{"device_guids": []string{a.guid, b.guid}, "language": "sh", "body": "true"})
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("device_guids[1]"))

	otherRun := f.quickRun(t, admin, map[string]any{"device_guids": []string{b.guid}, "language": "sh", "body": "true"})
	f.finishedRun(t, admin, otherRun)
	hidden := f.do(t, "GET", "/api/scripts/quick_run/"+otherRun, op, nil)
	require.Equal(t, 404, hidden.Status)
	require.NotContains(t, hidden.Raw, "scope-b-01")

	both := f.quickRun(t, admin, map[string]any{"device_guids": []string{a.guid, b.guid}, "language": "sh", "body": "echo hi"})
	f.finishedRun(t, admin, both)
	seen := f.do(t, "GET", "/api/scripts/quick_run/"+both, op, nil)
	require.Equal(t, 200, seen.Status)
	require.Equal(t, "scope-a-01", onlyResult(t, seen)["hostname"])
	mineRun := f.quickRun(t, op, map[string]any{"device_guids": []string{a.guid}, "language": "sh", "body": "echo mine"})
	require.Equal(t, "succeeded", f.finishedRun(t, op, mineRun).Body["status"])
}
