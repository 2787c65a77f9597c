package main

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/authtest"
)

// netns is a network namespace joined to this one by a veth pair: the
// host end has hostIP, the namespace's end nsIP (a /30).
type netns struct {
	name, hostIf, hostIP, nsIP string
}

// ipCmd runs ip (or another tool) and fails the test on error.
func ipCmd(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command("ip", args...).CombinedOutput()
	require.NoError(t, err, "ip %s: %s", strings.Join(args, " "), out)
}

// newNetns makes the namespace and the veth pair, and removes both (and
// whatever the test's agent left running in the namespace) at the end.
// Creating namespaces needs root: without it the test fails, it is never
// skipped.
func newNetns(t *testing.T, wgIface string) *netns {
	t.Helper()
	require.Zero(t, os.Geteuid(), "the tunnel test creates network namespaces (ip netns) and needs root")
	for _, tool := range []string{"ip", "wg", "wg-quick", "wireguard-go"} {
		_, err := exec.LookPath(tool)
		require.NoError(t, err, "%s is missing: run scripts/deps.sh test (make deps-test)", tool)
	}
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	n := &netns{name: "cairn-wg-" + id, hostIf: "cwh" + id, hostIP: fmt.Sprintf("10.231.%d.1", b[0]), nsIP: fmt.Sprintf("10.231.%d.2", b[0])}
	ipCmd(t, "netns", "add", n.name)
	t.Cleanup(func() {
		// The agent's interface first (wireguard-go exits with it), then
		// any process of the test's agent still in the namespace, by PID.
		_ = exec.Command("ip", "-n", n.name, "link", "del", wgIface).Run()
		if out, err := exec.Command("ip", "netns", "pids", n.name).Output(); err == nil {
			for _, f := range strings.Fields(string(out)) {
				// Never this test binary: listenIn enters the namespace on a
				// locked thread, and when that thread is the main one the
				// runtime keeps it, so the namespace lists our own PID.
				if pid, err := strconv.Atoi(f); err == nil && pid != os.Getpid() {
					_ = unix.Kill(pid, unix.SIGKILL)
				}
			}
		}
		_ = exec.Command("ip", "link", "del", n.hostIf).Run()
		_ = exec.Command("ip", "netns", "del", n.name).Run()
	})
	ipCmd(t, "link", "add", n.hostIf, "type", "veth", "peer", "name", "cwa"+id)
	ipCmd(t, "link", "set", "cwa"+id, "netns", n.name)
	ipCmd(t, "addr", "add", n.hostIP+"/30", "dev", n.hostIf)
	ipCmd(t, "link", "set", n.hostIf, "up")
	ipCmd(t, "-n", n.name, "addr", "add", n.nsIP+"/30", "dev", "cwa"+id)
	ipCmd(t, "-n", n.name, "link", "set", "cwa"+id, "up")
	ipCmd(t, "-n", n.name, "link", "set", "lo", "up")
	return n
}

// listen opens a TCP listener inside the namespace: a thread enters it,
// makes the socket (which stays in the namespace) and ends with its
// goroutine, so no other goroutine ever runs there.
func (n *netns) listen(t *testing.T, addr string) net.Listener {
	t.Helper()
	type result struct {
		l   net.Listener
		err error
	}
	ch := make(chan result, 1)
	go func() {
		goruntime.LockOSThread() // never unlocked: the thread exits with this goroutine
		f, err := os.Open("/var/run/netns/" + n.name)
		if err != nil {
			ch <- result{err: err}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- result{err: err}
			return
		}
		l, err := net.Listen("tcp", addr)
		ch <- result{l, err}
	}()
	r := <-ch
	require.NoError(t, r.err)
	t.Cleanup(func() { _ = r.l.Close() })
	return r.l
}

// freeUDPPort is a UDP port nothing here is bound to now.
func freeUDPPort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{})
	require.NoError(t, err)
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// tunnelRig is an Engine and a real cairn-agent in its own network
// namespace, joined only by a veth pair, whose tunnel the TunnelEstablish
// workflow brought up: the setup issue 23's end-to-end tests share.
type tunnelRig struct {
	ns       *netns
	eng      *proc
	token    string
	a        *agentProc
	guid     string
	udpPort  int
	wgIface  string
	agentBin string
	// est and tun are /api/tunnel/connect/status's establishment and
	// tunnel once ready; vip the agent's tunnel address.
	est, tun map[string]any
	vip      string
	// gateway, with rigOptions.gateway: the process, its listener, the
	// Internal key it signs with, and its output.
	gateway     *exec.Cmd
	gatewayAddr string
	gatewayOut  *bytes.Buffer
	keyID       string
	keySecret   []byte
}

// roleRow is the device's agent_health row of role key ("system:vnc"),
// nil when the agent has not reported it.
func (r *tunnelRig) roleRow(t *testing.T, key string) map[string]any {
	t.Helper()
	health := r.eng.call(t, "GET", "/api/device/details/"+r.a.hostname, r.token, nil)["agent_health"].(map[string]any)
	for _, row := range health["roles"].([]any) {
		if m := row.(map[string]any); m["key"] == key {
			return m
		}
	}
	return nil
}

// startGateway signs in, makes an Internal key (re-authenticated) and
// starts `cairn gateway` with it: no DATABASE_URL, only the Engine's URL
// and the key.
func (r *tunnelRig) startGateway(t *testing.T, tmp string) {
	t.Helper()
	token, totpSecret, signedInAt := r.eng.signInSecret(t)
	r.token = token
	require.True(t, assertEventually(time.Minute, func() bool { return time.Now().Unix()/30 > signedInAt.Unix()/30 }))
	res := r.eng.rawCall(t, "POST", "/api/auth/reauth", token, map[string]any{"password": "e2e test password",
		"totp_code": authtest.TOTP(t, totpSecret, time.Now().Add(30*time.Second))})
	require.Equal(t, 200, res.status, res.body)
	key := r.eng.post(t, "/api/server/internal-keys", token, nil)
	r.keyID = key["key_id"].(string)
	var err error
	r.keySecret, err = base64.StdEncoding.DecodeString(key["secret"].(string))
	require.NoError(t, err)
	keyFile := filepath.Join(tmp, "gateway.key")
	require.NoError(t, os.WriteFile(keyFile, []byte(key["secret"].(string)), 0o600))
	r.gateway = cairnCmd([]string{"CAIRN_INTERNAL_KEY_ID=" + r.keyID, "CAIRN_INTERNAL_KEY_FILE=" + keyFile,
		"CAIRN_ENGINE_URL=" + r.eng.base, "CAIRN_GATEWAY_ADDR=" + r.gatewayAddr, "CAIRN_DATA_DIR=" + filepath.Join(tmp, "gateway")}, "gateway")
	for _, kv := range r.gateway.Env {
		require.False(t, strings.HasPrefix(kv, "DATABASE_URL="), "the gateway runs without database credentials")
	}
	r.gatewayOut = &bytes.Buffer{}
	r.gateway.Stdout, r.gateway.Stderr = r.gatewayOut, r.gatewayOut
	require.NoError(t, r.gateway.Start())
	t.Cleanup(func() {
		if r.gateway.ProcessState == nil {
			_ = r.gateway.Process.Kill()
			_, _ = r.gateway.Process.Wait()
		}
	})
	require.True(t, assertEventually(time.Minute, func() bool {
		res, err := http.Get("http://" + r.gatewayAddr + "/ready")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == 200
	}), "the gateway took the WireGuard; output:\n%s", r.gatewayOut)
}

// rigOptions vary the rig: the agent's hostname, its site's slug, the
// tunnel network, and agentEnv, called with the namespace before the
// agent runs, for what the agent's environment needs (a display).
type rigOptions struct {
	hostname, slug, network string
	agentEnv                func(t *testing.T, ns *netns) []string
	// gateway runs the WireGuard and the remote-desktop gateway in a
	// `cairn gateway` process (no DATABASE_URL) under an Internal key;
	// serve is told of it with CAIRN_GATEWAY_URL and binds none.
	gateway bool
}

func newTunnelRig(t *testing.T, o rigOptions) *tunnelRig {
	t.Helper()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	r := &tunnelRig{wgIface: "cwg" + hex.EncodeToString(b)}
	r.ns = newNetns(t, r.wgIface)
	tmp, agentBin := agentWorkspace(t, "cairn-"+o.slug+"-")
	r.agentBin = agentBin
	httpPort, httpsPort := freePort(t), freePort(t)
	r.udpPort = freeUDPPort(t)
	serveEnv := []string{fmt.Sprintf("CAIRN_HTTPS_ADDR=0.0.0.0:%d", httpsPort), fmt.Sprintf("CAIRN_WIREGUARD_PORT=%d", r.udpPort),
		"CAIRN_WIREGUARD_FALLBACK_IP=" + r.ns.hostIP, "CAIRN_WIREGUARD_NETWORK=" + o.network}
	if o.gateway {
		r.gatewayAddr = fmt.Sprintf("127.0.0.1:%d", freePort(t))
		serveEnv = append(serveEnv, "CAIRN_GATEWAY_URL=http://"+r.gatewayAddr)
	}
	r.eng = startServeAt(t, filepath.Join(tmp, "data"), httpPort, httpsPort, serveEnv...)
	eng := r.eng
	if o.gateway {
		r.startGateway(t, tmp)
	} else {
		r.token = eng.signIn(t)
	}
	token := r.token
	site := eng.post(t, "/api/sites", token, map[string]any{"name": o.slug, "site_worker_slug": o.slug})
	code := eng.post(t, "/api/admin/enrollment-codes", token, map[string]any{"site_id": site["site_id"]})["code"].(string)
	caFile := filepath.Join(tmp, "ca.pem")
	require.NoError(t, os.WriteFile(caFile, eng.checkHTTPS(t), 0o644))

	// Inside the namespace, localhost is the namespace's own: every call
	// falls back to the host's veth address (behaviour 6).
	a := &agentProc{hostname: o.hostname, dir: filepath.Join(tmp, o.hostname)}
	r.a = a
	require.NoError(t, os.MkdirAll(a.dir, 0o700))
	a.env = []string{"CAIRN_AGENT_WG_INTERFACE=" + r.wgIface}
	if o.agentEnv != nil {
		a.env = append(a.env, o.agentEnv(t, r.ns)...)
	}
	a.start(t, "ip", "netns", "exec", r.ns.name, agentBin, "enroll", "--server", eng.httpsBase, "--code", code, "--ca-file", caFile,
		"--server-ip-fallback", r.ns.hostIP, "--hostname", a.hostname)
	id := eng.waitApproval(t, token, a.hostname)
	eng.post(t, "/api/admin/device-approvals/"+id+"/approve", token, nil)
	a.waitExit(t, 60*time.Second)
	a.cfg = loadAgentConfig(t, a.dir)
	r.guid = a.cfg.Agent.GUID
	a.start(t, "ip", "netns", "exec", r.ns.name, agentBin, "run", "--hostname", a.hostname)
	eng.waitStatus(t, token, a, "Connected", 90*time.Second)

	// Establishment: the workflow asks the agent (vpn_tunnel_start).
	rec := eng.post(t, "/api/server/wireguard/recover", token, map[string]any{"guid": r.guid})
	require.Equal(t, []any{"tunnel:" + r.guid}, rec["queued"])
	var st map[string]any
	ok := assertEventually(3*time.Minute, func() bool {
		st = eng.call(t, "GET", "/api/tunnel/connect/status?guid="+r.guid, token, nil)
		est, _ := st["establishment"].(map[string]any)
		return est != nil && (est["phase"] == "ready" || est["phase"] == "failed")
	})
	require.True(t, ok, "establishment: %v; agent:\n%s", st, a.output())
	r.est = st["establishment"].(map[string]any)
	require.Equal(t, "ready", r.est["phase"], "%v; agent:\n%s", r.est, a.output())
	r.tun = st["tunnel"].(map[string]any)
	r.vip = r.tun["virtual_ip"].(string)
	return r
}

// Issue 23, the test that matters: a real cairn-agent in its own network
// namespace, which reaches the Engine only over a veth pair, establishes
// its WireGuard tunnel with the Engine (wg-quick over wireguard-go: these
// machines have no WireGuard module) through the TunnelEstablish
// workflow. The primary endpoint (the public URL's host, loopback inside
// the namespace) never answers, so the agent falls back to
// fallback_endpoint after 8 s. The Engine's user-space WireGuard then
// reaches a TCP service on the agent's tunnel address, the role carries
// virtual IP, tunnel ID and agent ID, and a quarantine tears it down.
func TestTunnelEndToEnd(t *testing.T) {
	t.Parallel()
	rig := newTunnelRig(t, rigOptions{hostname: "e2e-tunnel", slug: "tunnel-e2e", network: "10.232.0.0/24"})
	ns, eng, token, a, guid, udpPort, wgIface := rig.ns, rig.eng, rig.token, rig.a, rig.guid, rig.udpPort, rig.wgIface
	tun, vip := rig.tun, rig.vip
	require.Equal(t, "10.232.0.2", vip)
	fallback := net.JoinHostPort(ns.hostIP, strconv.Itoa(udpPort))
	require.Equal(t, fallback, tun["endpoint"], "the primary gave no handshake; the fallback did")
	require.Equal(t, true, tun["healthy"])
	role := tun["role"].(map[string]any)
	require.Equal(t, proto.RoleHealthy, role["observed"])
	require.Equal(t, map[string]any{"virtual_ip": vip, "tunnel_id": tun["tunnel_id"], "agent_id": a.cfg.Agent.AgentID,
		"endpoint": fallback, "mode": "wireguard-go"}, role["context"])

	// The interface is real WireGuard (wg shows the Engine as its peer),
	// and the agent's side allows only the Engine's /32.
	out, err := exec.Command("ip", "netns", "exec", ns.name, "wg", "show", wgIface, "allowed-ips").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "10.232.0.1/32")

	// The Engine reaches a TCP service on the agent's tunnel address
	// through its user-space WireGuard: the service's banner comes back.
	l := ns.listen(t, net.JoinHostPort(vip, "5901"))
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("RFB 003.008\n"))
			_ = c.Close()
		}
	}()
	probe := eng.call(t, "GET", "/api/tunnel/connect/status?guid="+guid+"&port=5901", token, nil)["probe"].(map[string]any)
	require.Equal(t, true, probe["reachable"])
	require.Equal(t, "RFB 003.008\n", probe["banner"])
	// Only through the tunnel: the host's routing table has no route to
	// the address over the veth (the Engine's stack is its own).
	out, err = exec.Command("ip", "route", "get", vip).CombinedOutput()
	require.NotContains(t, string(out), ns.hostIf, "%s", out)

	active := eng.call(t, "GET", "/api/tunnel/active", token, nil)["tunnels"].([]any)
	require.Len(t, active, 1)
	require.Equal(t, guid, active[0].(map[string]any)["device_guid"])

	// Quarantine tears the tunnel down: the Engine drops the peer.
	eng.post(t, "/api/devices/"+guid+"/quarantine", token, nil)
	require.True(t, assertEventually(time.Minute, func() bool {
		return len(eng.call(t, "GET", "/api/tunnel/active", token, nil)["tunnels"].([]any)) == 0
	}), "the quarantined device's tunnel is gone")
	// At once the Engine refuses to reach the device; the trust action's
	// workflow then removes the tunnel itself.
	r := eng.rawCall(t, "GET", "/api/tunnel/connect/status?guid="+guid+"&port=5901", token, nil)
	require.Equal(t, 404, r.status, r.body)
	require.Contains(t, r.body, "tunnel_not_found")
	require.True(t, assertEventually(time.Minute, func() bool {
		r = eng.rawCall(t, "GET", "/api/tunnel/status?guid="+guid, token, nil)
		return r.status == 404
	}), "the tunnel row is removed: %s", r.body)
	require.Contains(t, r.body, "tunnel_not_found")
}
