package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devtemporal"
	"github.com/cairn-rmm/cairn/internal/pgtest"
	"github.com/cairn-rmm/cairn/internal/testpki"
)

// The scale-out topology of docs/architecture.md "Scaling out", every
// process real and on loopback (issue 28): a Temporal server of its own
// (`cairn temporal-server`, go.temporal.io/server on PostgreSQL
// persistence, not the embedded dev server), two `cairn serve` replicas
// that run no site workers behind a TCP load balancer, two `cairn worker`
// processes of one site, and real agents spread across the workers. A
// quick run fans out to every agent; in the middle of it one replica and
// the worker holding half the agents are killed with -9. The run ends
// with every device's result recorded once and every script run once,
// every agent reconnects to the surviving worker, and no device is
// duplicated.
func TestScaleOutSurvivesAReplicaAndAWorkerKilled(t *testing.T) {
	t.Parallel()
	tmp, agentBin := agentWorkspace(t, "cairn-scaleout-e2e-")
	dbURL := pgtest.URL(pgtest.NewDatabase(t))
	temporalAddr := startTemporalServer(t, dbURL)

	lb := startBalancer(t)
	publicURL := fmt.Sprintf("https://localhost:%d", lb.port)
	dataDir := filepath.Join(tmp, "data")
	common := []string{"DATABASE_URL=" + dbURL, "TEMPORAL_ADDRESS=" + temporalAddr, "CAIRN_SITE_WORKERS=none", "CAIRN_PUBLIC_URL=" + publicURL}
	// The first replica is set up by the administrator; the second, on
	// the same database, Temporal and data directory (one host: they
	// share the local CA agents pin), unlocks the cipher from a file.
	a := startServe(t, dataDir, common...)
	token := a.signIn(t)
	pass := filepath.Join(tmp, "passphrase")
	require.NoError(t, os.WriteFile(pass, []byte("e2e test passphrase"), 0o600))
	b := startServe(t, dataDir, append(common, "CAIRN_AEGIS_PASSPHRASE_FILE="+pass)...)
	lb.setBackends(httpsAddr(t, a), httpsAddr(t, b))

	site := b.post(t, "/api/sites", token, map[string]any{"name": "Scale-out", "site_worker_slug": "scaleout"})
	slug := site["site_worker_slug"].(string)
	workerEnv := []string{"DATABASE_URL=" + dbURL, "TEMPORAL_ADDRESS=" + temporalAddr, "CAIRN_PUBLIC_URL=" + publicURL,
		"CAIRN_DATA_DIR=" + dataDir, "CAIRN_AEGIS_PASSPHRASE_FILE=" + pass}
	w1 := startWorker(t, slug, workerEnv)
	w2 := startWorker(t, slug, workerEnv)

	// Agents enroll and connect through the load balancer; the replica
	// that answers their route sends each to the least-loaded worker.
	code := b.post(t, "/api/admin/enrollment-codes", token, map[string]any{"site_id": site["site_id"]})["code"].(string)
	caFile := filepath.Join(tmp, "ca.pem")
	require.NoError(t, os.WriteFile(caFile, b.checkHTTPS(t), 0o644))
	const agents = 4
	var ags []*agentProc
	for i := range agents {
		host := fmt.Sprintf("scale-%d", i)
		ag := startAgent(t, agentBin, tmp, host, "enroll", "--server", publicURL, "--code", code, "--ca-file", caFile)
		id := b.waitApproval(t, token, host)
		b.post(t, "/api/admin/device-approvals/"+id+"/approve", token, nil)
		ag.waitExit(t, 60*time.Second)
		ag.cfg = loadAgentConfig(t, ag.dir)
		ag.env = []string{"E2E_RUNS=" + filepath.Join(tmp, host+".runs")}
		ag.run(t, agentBin)
		ags = append(ags, ag)
	}
	store, err := db.Open(context.Background(), dbURL)
	require.NoError(t, err)
	t.Cleanup(store.Close)
	holders := func() map[string]string {
		out := map[string]string{}
		for _, ag := range ags {
			row, err := store.DeviceSocketGet(context.Background(), db.DeviceSocketGetParams{Guid: ag.cfg.Agent.GUID, FreshSeconds: 90})
			require.NoError(t, err)
			if row.SocketLive {
				out[ag.hostname] = row.SocketReplica
			}
		}
		return out
	}
	require.Eventually(t, func() bool {
		h := holders()
		return len(h) == agents && countOf(h, w1.replica(t, store)) > 0 && countOf(h, w2.replica(t, store)) > 0
	}, 3*time.Minute, 500*time.Millisecond, "every agent connected, spread over both workers: %v", holders)

	// The fan-out: a quick run whose script takes a few seconds and
	// counts its runs per agent.
	var guids []string
	for _, ag := range ags {
		guids = append(guids, ag.cfg.Agent.GUID)
	}
	runID := b.post(t, "/api/scripts/quick_run", token, map[string]any{"device_guids": guids, "language": "sh",
		"body": `echo run >> "$E2E_RUNS"; sleep 8; echo "done $(cat "$E2E_RUNS" | wc -l)"`})["run_id"].(string)
	victim := w1
	if countOf(holders(), w2.replica(t, store)) > countOf(holders(), w1.replica(t, store)) {
		victim = w2
	}
	survivor := w1
	if victim == w1 {
		survivor = w2
	}
	// Once every agent runs its script, kill -9 replica a and the worker
	// holding the most agents.
	require.Eventually(t, func() bool {
		for _, ag := range ags {
			if _, err := os.Stat(filepath.Join(tmp, ag.hostname+".runs")); err != nil {
				return false
			}
		}
		return true
	}, 3*time.Minute, 100*time.Millisecond, "every agent started the script")
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGKILL))
	require.NoError(t, victim.cmd.Process.Signal(syscall.SIGKILL))
	_, _ = a.cmd.Process.Wait()
	_, _ = victim.cmd.Process.Wait()

	// Every agent reconnects, to the surviving worker.
	require.Eventually(t, func() bool {
		h := holders()
		return len(h) == agents && countOf(h, survivor.replica(t, store)) == agents
	}, 3*time.Minute, 500*time.Millisecond, "every agent on the surviving worker: %v", holders)

	// The run ends with every result recorded, each script run once.
	var run map[string]any
	require.Eventually(t, func() bool {
		run = b.call(t, "GET", "/api/scripts/quick_run/"+runID, token, nil)
		return run["status"] == "succeeded" || run["status"] == "failed"
	}, 5*time.Minute, 500*time.Millisecond, "the quick run finishes")
	require.Equal(t, "succeeded", run["status"], "%v", run)
	results := run["results"].([]any)
	require.Len(t, results, agents)
	seen := map[string]bool{}
	for _, r := range results {
		m := r.(map[string]any)
		require.Equal(t, "succeeded", m["status"], "%v", m)
		require.Equal(t, "done 1\n", m["stdout"], "%v", m)
		require.False(t, seen[m["guid"].(string)], "one result per device: %v", results)
		seen[m["guid"].(string)] = true
	}
	for _, ag := range ags {
		runs, err := os.ReadFile(filepath.Join(tmp, ag.hostname+".runs"))
		require.NoError(t, err)
		require.Equal(t, "run\n", string(runs), "%s ran its script once", ag.hostname)
	}

	// No device was duplicated by the reconnects.
	devs := b.call(t, "GET", "/api/devices", token, nil)["devices"].([]any)
	require.Len(t, devs, agents, "%v", devs)
	hosts := map[string]bool{}
	for _, d := range devs {
		m := d.(map[string]any)
		hosts[m["hostname"].(string)] = true
		require.Equal(t, true, m["agent_socket"], "%v", m)
	}
	require.Len(t, hosts, agents)
}

// startTemporalServer runs `cairn temporal-server` on dbURL's PostgreSQL
// server and returns its frontend address once it serves; its two
// databases are dropped after the test.
func startTemporalServer(t *testing.T, dbURL string, args ...string) string {
	t.Helper()
	storeDB, visDB, err := devtemporal.PostgresDatabases(dbURL)
	require.NoError(t, err)
	t.Cleanup(func() { dropDatabases(storeDB, visDB) })
	port := freePort(t)
	cmd := cairnCmd([]string{"DATABASE_URL=" + dbURL}, append([]string{"temporal-server", "--port", fmt.Sprint(port)}, args...)...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _, _ = cmd.Process.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "Temporal server ready") }, 3*time.Minute, 200*time.Millisecond,
		"cairn temporal-server did not start:\n%s", out)
	require.Contains(t, out.String(), storeDB)
	return fmt.Sprintf("127.0.0.1:%d", port)
}

// httpsAddr is p's HTTPS listener as host:port.
func httpsAddr(t *testing.T, p *proc) string {
	t.Helper()
	u, err := url.Parse(p.httpsBase)
	require.NoError(t, err)
	return net.JoinHostPort("127.0.0.1", u.Port())
}

func countOf(m map[string]string, v string) int {
	n := 0
	for _, x := range m {
		if x == v {
			n++
		}
	}
	return n
}

// balancer is the simplest TCP load balancer: each connection goes to the
// next backend in turn, and to the one after when a backend refuses (a
// dead replica). TLS passes through to the replicas.
type balancer struct {
	port     int
	mu       sync.Mutex
	backends []string
	next     atomic.Uint32
}

func startBalancer(t *testing.T) *balancer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	lb := &balancer{port: ln.Addr().(*net.TCPAddr).Port}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go lb.serve(c)
		}
	}()
	return lb
}

func (lb *balancer) setBackends(addrs ...string) {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	lb.backends = addrs
}

func (lb *balancer) serve(c net.Conn) {
	defer c.Close()
	lb.mu.Lock()
	backends := lb.backends
	lb.mu.Unlock()
	start := int(lb.next.Add(1))
	for i := range backends {
		up, err := net.DialTimeout("tcp", backends[(start+i)%len(backends)], 2*time.Second)
		if err != nil {
			continue
		}
		defer up.Close()
		done := make(chan struct{}, 2)
		go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
		go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
		<-done
		return
	}
}

// syncBuffer is a bytes.Buffer a process writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// CAIRN_TEMPORAL_STORE=postgres keeps the embedded Temporal's state in
// databases beside the Engine's: serve starts on them, its schedules are
// workflows stored there, and no SQLite file is made.
func TestServeEmbedsTemporalOnPostgres(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	dbURL := pgtest.URL(pgtest.NewDatabase(t))
	storeDB, visDB, err := devtemporal.PostgresDatabases(dbURL)
	require.NoError(t, err)
	t.Cleanup(func() { dropDatabases(storeDB, visDB) })
	eng := startServe(t, dataDir, "DATABASE_URL="+dbURL, "CAIRN_TEMPORAL_STORE=postgres")
	conn, err := pgx.Connect(context.Background(), pgtest.URL(storeDB))
	require.NoError(t, err)
	defer conn.Close(context.Background())
	require.Eventually(t, func() bool {
		var n int
		return conn.QueryRow(context.Background(), "SELECT count(*) FROM executions").Scan(&n) == nil && n > 0
	}, 2*time.Minute, 250*time.Millisecond, "the Engine's schedules run as workflows stored in %s", storeDB)
	_, err = os.Stat(filepath.Join(dataDir, "temporal.sqlite"))
	require.ErrorIs(t, err, os.ErrNotExist)
	eng.stop(t)
}

// dropDatabases drops Temporal's databases a test made on the test
// server.
func dropDatabases(names ...string) {
	conn, err := pgx.Connect(context.Background(), pgtest.URL("postgres"))
	if err != nil {
		return
	}
	defer conn.Close(context.Background())
	for _, name := range names {
		_, _ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	}
}

// `cairn temporal-server` serves TLS and requires client certificates
// when told to: serve reaches it with TEMPORAL_TLS_*, and without a
// client certificate it is turned away.
func TestTemporalServerRequiresClientCertificates(t *testing.T) {
	t.Parallel()
	serverCA := testpki.NewCA(t, "temporal-server")
	clientCA := testpki.NewCA(t, "temporal-clients")
	frontend := serverCA.Server(t, "frontend", "127.0.0.1")
	system := clientCA.Client(t, "system", "temporal-system")
	engineCert := clientCA.Client(t, "engine", "cairn-engine")
	dbURL := pgtest.URL(pgtest.NewDatabase(t))
	addr := startTemporalServer(t, dbURL, "--tls-cert-file", frontend.CertFile, "--tls-key-file", frontend.KeyFile,
		"--tls-ca-file", serverCA.CertFile, "--tls-client-ca-file", clientCA.CertFile,
		"--tls-system-cert-file", system.CertFile, "--tls-system-key-file", system.KeyFile)

	tmp := t.TempDir()
	eng := startServe(t, filepath.Join(tmp, "data"), "DATABASE_URL="+dbURL, "TEMPORAL_ADDRESS="+addr,
		"TEMPORAL_TLS_CERT="+engineCert.CertFile, "TEMPORAL_TLS_KEY="+engineCert.KeyFile, "TEMPORAL_TLS_CA="+serverCA.CertFile)
	require.Eventually(t, func() bool {
		return temporalCheck(t, eng.call(t, "GET", "/ready", "", nil)) == "ok"
	}, 5*time.Minute, 200*time.Millisecond, "serve reaches the Temporal server over mTLS")
	bare := startServe(t, filepath.Join(tmp, "bare"), "DATABASE_URL="+dbURL, "TEMPORAL_ADDRESS="+addr,
		"TEMPORAL_TLS_CA="+serverCA.CertFile, "CAIRN_SITE_WORKERS=none")
	require.Equal(t, "unavailable", temporalCheck(t, bare.call(t, "GET", "/ready", "", nil)))
}
