package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent"
	"github.com/cairn-rmm/cairn/agent/proto"
	agentruntime "github.com/cairn-rmm/cairn/agent/runtime"
	"github.com/cairn-rmm/cairn/agent/runtime/fakeengine"
)

const code = "site-code"

// testHost is the machine with a fixed identity and the loop in
// milliseconds.
func testHost() host {
	h := defaultHost()
	h.fingerprint = func() (string, error) { return "fp-test", nil }
	h.hostname = func() (string, error) { return "test-host", nil }
	h.timing = agentruntime.Timing{
		HeartbeatInterval: 50 * time.Millisecond, HeartbeatJitter: 10 * time.Millisecond,
		DetailsCheck: 50 * time.Millisecond, RetryMin: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond,
		EnrollPoll: 10 * time.Millisecond, ReconnectMin: 10 * time.Millisecond, ReconnectMax: 50 * time.Millisecond,
	}
	return h
}

// lockedBuffer collects a command's output while it runs.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func runTest(ctx context.Context, args ...string) (code int, stdout, stderr string) {
	var out, errOut lockedBuffer
	code = runWith(ctx, args, &out, &errOut, testHost())
	return code, out.String(), errOut.String()
}

// caFile writes a self-signed CA certificate and returns its path and PEM.
func caFile(t *testing.T) (string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Cairn test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	text := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	path := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	return path, text
}

func TestEnrollCommand(t *testing.T) {
	t.Parallel()
	engine := fakeengine.New(t, code)
	engine.SetDecision(proto.ApprovalApproved, 1)
	path := filepath.Join(t.TempDir(), "etc", "cairn-agent", agent.FileName)
	caPath, caPEM := caFile(t)

	status, out, errOut := runTest(t.Context(), "--config", path, "enroll", "--server", engine.URL, "--code", code,
		"--ca-file", caPath, "--trust-public-cas", "--server-ip-fallback", "192.0.2.10", "--hostname", "lab-7")
	require.Equal(t, 0, status, errOut)

	dev := engine.Devices()[0]
	c, err := agent.Load(path)
	require.NoError(t, err)
	require.Equal(t, dev.GUID, c.Agent.GUID)
	require.Equal(t, dev.AgentID, c.Agent.AgentID)
	require.Equal(t, dev.Access, c.AccessToken)
	require.Equal(t, dev.Refresh, c.RefreshToken)
	require.Equal(t, caPEM, c.InternalCAPEM)
	require.True(t, c.TrustPublicCAs, "--trust-public-cas is recorded beside the pinned CA")
	require.Equal(t, "192.0.2.10", c.ServerIPFallback)
	require.Equal(t, engine.URL, c.ServerURL)
	require.Equal(t, code, c.EnrollmentCode)
	require.Equal(t, "enroll", c.Agent.State.Writer)
	require.Equal(t, "lab-7", engine.EnrollRequests()[0].Request.Hostname)
	require.Equal(t, "fp-test", engine.EnrollRequests()[0].Request.Fingerprint)
	info, err := os.Stat(filepath.Dir(path))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), info.Mode().Perm(), "the directory holds the device key")

	approval := ""
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "approval ID "); ok {
			approval, _, _ = strings.Cut(rest, ":")
		}
	}
	require.NotEmpty(t, approval, out)
	require.Contains(t, out, "waiting for approval")
	require.Contains(t, out, "enrolled: device GUID "+dev.GUID+" (agent ID "+dev.AgentID+")\n")

	// Again with the same code: nothing to do, no new request.
	status, out, _ = runTest(t.Context(), "--config", path, "enroll", "--server", engine.URL, "--code", code)
	require.Equal(t, 0, status)
	require.Contains(t, out, "already enrolled as device GUID "+dev.GUID)
	require.Len(t, engine.EnrollRequests(), 1)
	c, err = agent.Load(path)
	require.NoError(t, err)
	require.Equal(t, caPEM, c.InternalCAPEM, "flags not given keep their stored values")
}

func TestEnrollCommandDecisions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		decision string
		want     string
	}{
		{proto.ApprovalDenied, "enrollment denied: an administrator refused approval appr-"},
		{proto.ApprovalExpired, "expired before an administrator approved it; run enroll again"},
	} {
		t.Run(tc.decision, func(t *testing.T) {
			t.Parallel()
			engine := fakeengine.New(t, code)
			engine.SetDecision(tc.decision, 0)
			path := filepath.Join(t.TempDir(), agent.FileName)
			status, _, errOut := runTest(t.Context(), "--config", path, "enroll", "--server", engine.URL, "--code", code)
			require.Equal(t, 1, status)
			require.Contains(t, errOut, tc.want)
			c, err := agent.Load(path)
			require.NoError(t, err)
			require.Empty(t, c.Agent.GUID)
		})
	}
}

func TestRunCommand(t *testing.T) {
	t.Parallel()
	engine := fakeengine.New(t, code)
	path := filepath.Join(t.TempDir(), agent.FileName)
	status, _, errOut := runTest(t.Context(), "--config", path, "enroll", "--server", engine.URL, "--code", code)
	require.Equal(t, 0, status, errOut)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan int, 1)
	var logs lockedBuffer
	go func() { done <- runWith(ctx, []string{"--config", path, "run"}, &lockedBuffer{}, &logs, testHost()) }()
	require.Eventually(t, func() bool {
		return engine.Count("connect_agent") == 1 && engine.Count("heartbeat") >= 2 && engine.Count("details") >= 1
	}, 60*time.Second, 5*time.Millisecond, "the real collectors (dpkg, apt-get -s) take seconds on a loaded machine")
	cancel() // what SIGTERM does
	select {
	case status := <-done:
		require.Equal(t, 0, status, logs.String())
	case <-time.After(10 * time.Second):
		t.Fatal("run did not stop")
	}
	require.Equal(t, 1, engine.Count("status:stopping"))
	require.Contains(t, logs.String(), "cairn-agent starting")
	require.Less(t, strings.Index(logs.String(), "cairn-agent starting"), strings.Index(logs.String(), "cairn-agent ready"),
		"the start is logged before the setup that can wait, the ready line after it")
	hb := engine.Heartbeats()[0].Body
	require.Positive(t, hb.Metrics.MemoryTotalBytes, "metrics come from /proc")
	c, err := agent.Load(path)
	require.NoError(t, err)
	require.NotEmpty(t, c.Agent.Route, "the socket route is cached")
}

func TestSimulateCommand(t *testing.T) {
	t.Parallel()
	engine := fakeengine.New(t, code)
	engine.SetAutoApprove(true)
	status, out, errOut := runTest(t.Context(), "simulate", "--server", engine.URL, "--code", code, "--count", "3",
		"--concurrency", "2", "--duration", "1s", "--prefix", "bench")
	require.Equal(t, 0, status, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var sum agentruntime.SimSummary
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &sum), out)
	require.Equal(t, 3, sum.Agents)
	require.Equal(t, 3, sum.Enrolled)
	require.Equal(t, 3, sum.Connected)
	require.NotNil(t, sum.TimeToAllConnected)
	var hosts []string
	for _, r := range engine.EnrollRequests() {
		hosts = append(hosts, r.Request.Hostname)
	}
	require.ElementsMatch(t, []string{"bench-00001", "bench-00002", "bench-00003"}, hosts)
}
