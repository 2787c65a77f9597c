package rdp

import (
	"context"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/registry"
	"github.com/cairn-rmm/cairn/agent/registry/registrytest"
	"github.com/cairn-rmm/cairn/agent/roles"
)

// These tests run on Linux and, compiled for Windows, under Wine
// (scripts/wine/run-tests.sh ./agent/rdp): the role's registry, service
// and firewall logic over an in-memory registry, a fake SCM and a fake
// firewall.

type fakeFirewall struct {
	mu    sync.Mutex
	rules []FirewallRule
	calls []string
}

func (f *fakeFirewall) List(_ context.Context, name string) ([]FirewallRule, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "list")
	var out []FirewallRule
	for _, r := range f.rules {
		if r.Name == name {
			out = append(out, r)
		}
	}
	return out, nil
}

func (f *fakeFirewall) Add(_ context.Context, r FirewallRule) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "add")
	f.rules = append(f.rules, r)
	return nil
}

func (f *fakeFirewall) Remove(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "remove")
	var keep []FirewallRule
	for _, r := range f.rules {
		if r.Name != name {
			keep = append(keep, r)
		}
	}
	f.rules = keep
	return nil
}

func (f *fakeFirewall) take() ([]FirewallRule, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return append([]FirewallRule(nil), f.rules...), c
}

type fakeSCM struct {
	mu     sync.Mutex
	state  string
	mode   string
	calls  []string
	listen func()
}

func (s *fakeSCM) Query(context.Context) (string, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state, s.mode, nil
}

func (s *fakeSCM) SetAutomatic(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, "automatic")
	s.mode = StartModeAuto
	return nil
}

func (s *fakeSCM) start(verb string) error {
	s.mu.Lock()
	s.calls = append(s.calls, verb)
	s.state = "running"
	listen := s.listen
	s.listen = nil
	s.mu.Unlock()
	if listen != nil {
		listen()
	}
	return nil
}

func (s *fakeSCM) Start(context.Context) error   { return s.start("start") }
func (s *fakeSCM) Restart(context.Context) error { return s.start("restart") }

func (s *fakeSCM) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.calls
	s.calls = nil
	return c
}

type fakeRelay struct {
	mu  sync.Mutex
	fwd map[int]string
}

func (f *fakeRelay) Forward(port int, target string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fwd[port] = target
	return nil
}

func (f *fakeRelay) Unforward(port int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.fwd, port)
}

func (f *fakeRelay) get() map[int]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[int]string{}
	for k, v := range f.fwd {
		out[k] = v
	}
	return out
}

type winHost struct {
	reg   *registrytest.Mem
	scm   *fakeSCM
	fw    *fakeFirewall
	relay *fakeRelay
	svc   *TermService
	clock *clock
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// mkKey creates p and its missing parents.
func mkKey(t *testing.T, reg registry.Store, p registry.Path) {
	t.Helper()
	if p.Sub == "" {
		return
	}
	if _, _, err := reg.Children(p); err == nil {
		return
	}
	mkKey(t, reg, p.Parent())
	require.NoError(t, reg.CreateKey(p))
}

func setValue(t *testing.T, reg registry.Store, p registry.Path, v registry.Value) {
	t.Helper()
	mkKey(t, reg, p)
	require.NoError(t, put(reg, p, v))
}

// setupWindows is a Windows Pro host: fDenyTSConnections=1, TermService
// on demand and stopped, no firewall rule; the role's listener check is
// a free loopback port that TermService's start opens.
func setupWindows(t *testing.T) (*RDP, *roles.Role, *fakeCaller, int, *winHost) {
	t.Helper()
	h := &winHost{reg: registrytest.New(), scm: &fakeSCM{state: "stopped", mode: StartModeDemand}, fw: &fakeFirewall{},
		relay: &fakeRelay{fwd: map[int]string{}}, clock: &clock{now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}}
	setValue(t, h.reg, CurrentVersionKey, registry.Value{Name: "EditionID", Type: registry.TypeSZ, Data: "Professional"})
	setValue(t, h.reg, TerminalServerKey, registry.Value{Name: denyTSValue, Type: registry.TypeDWord, Data: uint32(1)})
	h.svc = &TermService{Registry: h.reg, SCM: h.scm, Rules: h.fw, Now: h.clock.Now}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	h.scm.listen = listenOn(t, port)
	role := roles.New(h.clock.Now).Register(roles.RDP)
	r := New(Options{Role: role, VirtualIP: func() string { return "10.213.0.2" }, Port: port, Service: h.svc,
		Relay: h.relay, Now: h.clock.Now})
	return r, role, &fakeCaller{}, port, h
}

func denyTS(t *testing.T, reg registry.Store) uint32 {
	t.Helper()
	n, ok, err := dword(reg, TerminalServerKey, denyTSValue)
	require.NoError(t, err)
	require.True(t, ok)
	return n
}

// Behaviour 14 on Windows: rdp_start sets fDenyTSConnections=0 and
// TermService automatic, starts it, checks the local listener, relays
// the tunnel's port to it, and adds the one firewall rule for the scope
// /api/agent/rdp/ensure answers; system:rdp reports it all. A recovery
// restarts TermService.
func TestWindowsRDPStart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, role, call, port, h := setupWindows(t)

	st, err := r.handle(ctx, call, nil, false)
	require.NoError(t, err)
	require.Equal(t, &proto.RDPStarted{ListenAddress: "10.213.0.2", Port: port, Server: "TermService"}, st)
	require.Zero(t, denyTS(t, h.reg))
	require.Equal(t, []string{"automatic", "start"}, h.scm.take())
	require.Equal(t, map[int]string{port: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}, h.relay.get())
	// The scope came with the post's answer and was applied at once.
	rules, _ := h.fw.take()
	require.Equal(t, []FirewallRule{{Name: FirewallRuleName, Protocol: "TCP", LocalPort: "3389", LocalAddress: "127.0.0.1",
		RemoteAddress: "10.0.0.1", Enabled: true, Direction: "in", Action: "allow"}}, rules)
	hl, ok := role.Health()
	require.True(t, ok)
	require.Equal(t, proto.RoleHealthy, hl.Observed)
	require.Equal(t, "true", hl.Context[proto.RDPContextReady])
	require.Equal(t, "running", hl.Context[proto.RDPContextServiceState])
	require.Equal(t, StartModeAuto, hl.Context[proto.RDPContextStartMode])
	require.Equal(t, "0", hl.Context[proto.RDPContextDenyTS])
	require.Equal(t, "listening", hl.Context[proto.RDPContextListenerState])
	require.Equal(t, FirewallAwaitingScope, hl.Context[proto.RDPContextFirewall], "the first report precedes the scope")
	require.NotEmpty(t, hl.Context[proto.RDPContextLastAuditAt])
	require.Len(t, call.posts, 1)
	require.True(t, call.posts[0].Ready)

	// The next request finds everything in place: nothing is changed.
	_, err = r.handle(ctx, call, nil, false)
	require.NoError(t, err)
	require.Empty(t, h.scm.take(), "running and automatic: nothing to do")
	rules, calls := h.fw.take()
	require.Len(t, rules, 1)
	require.Equal(t, []string{"list"}, calls, "an identical rule is left alone")
	hl, _ = role.Health()
	require.Equal(t, FirewallInPlace, hl.Context[proto.RDPContextFirewall])

	// rdp_transport_recovery restarts TermService although it listens.
	st, err = r.handle(ctx, call, nil, true)
	require.NoError(t, err)
	require.True(t, st.(*proto.RDPStarted).Recovered)
	require.Equal(t, []string{"restart"}, h.scm.take())
}

// The 30 s loop audits at most every 5 minutes: drift made in between
// (fDenyTSConnections back to 1, the rule's remote address changed, a
// duplicate added) is repaired at the next audit, not before, and the
// rule replaced only then.
func TestWindowsRDPAuditCadence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, role, call, _, h := setupWindows(t)
	_, err := r.handle(ctx, call, nil, false)
	require.NoError(t, err)
	h.scm.take()
	h.fw.take()

	drifted := WantedRule(proto.RDPEnsureResponse{EngineIP: "10.0.0.9", AgentIP: "127.0.0.1", Port: 3389})
	h.fw.mu.Lock()
	h.fw.rules = []FirewallRule{drifted, WantedRule(proto.RDPEnsureResponse{EngineIP: "10.0.0.1", AgentIP: "127.0.0.1"})}
	h.fw.mu.Unlock()
	require.NoError(t, put(h.reg, TerminalServerKey, registry.Value{Name: denyTSValue, Type: registry.TypeDWord, Data: uint32(1)}))

	h.clock.Add(AuditEvery - time.Second)
	_, err = r.Ensure(ctx, nil, false, false)
	require.NoError(t, err)
	_, calls := h.fw.take()
	require.Empty(t, calls, "no audit within 5 minutes of the last")
	require.Equal(t, uint32(1), denyTS(t, h.reg))

	h.clock.Add(time.Second)
	_, err = r.Ensure(ctx, nil, false, false)
	require.NoError(t, err)
	require.Zero(t, denyTS(t, h.reg))
	rules, calls := h.fw.take()
	require.Equal(t, []string{"list", "remove", "add"}, calls)
	require.Equal(t, []FirewallRule{WantedRule(proto.RDPEnsureResponse{EngineIP: "10.0.0.1", AgentIP: "127.0.0.1", Port: 3389})}, rules,
		"exactly one rule, the right one")
	hl, _ := role.Health()
	require.Equal(t, FirewallReplaced, hl.Context[proto.RDPContextFirewall])
	require.Empty(t, h.scm.take(), "the loop never starts the service")
}

// Where Windows has no RDP server (Home editions, no TermService) the
// role is unsupported and nothing is changed or relayed; group policy
// denying RDP fails the role without touching the policy.
func TestWindowsRDPRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("home edition", func(t *testing.T) {
		t.Parallel()
		r, role, call, port, h := setupWindows(t)
		require.NoError(t, put(h.reg, CurrentVersionKey, registry.Value{Name: "EditionID", Type: registry.TypeSZ, Data: "Core"}))
		h.relay.fwd[port] = "127.0.0.1:3389"
		_, err := r.handle(ctx, call, nil, false)
		require.ErrorIs(t, err, roles.ErrUnsupported)
		require.Contains(t, err.Error(), "Home edition")
		require.Equal(t, uint32(1), denyTS(t, h.reg))
		require.Empty(t, h.scm.take())
		_, calls := h.fw.take()
		require.Empty(t, calls)
		require.Empty(t, h.relay.get(), "no relay without a server")
		hl, _ := role.Health()
		require.Equal(t, proto.RoleUnhealthy, hl.Observed)
	})
	t.Run("no TermService", func(t *testing.T) {
		t.Parallel()
		r, _, call, _, h := setupWindows(t)
		h.scm.mode = StartModeNotInstalled
		_, err := r.handle(ctx, call, nil, false)
		require.ErrorIs(t, err, roles.ErrUnsupported)
	})
	t.Run("group policy denies", func(t *testing.T) {
		t.Parallel()
		r, role, call, _, h := setupWindows(t)
		setValue(t, h.reg, TerminalServicesPolicyKey, registry.Value{Name: denyTSValue, Type: registry.TypeDWord, Data: uint32(1)})
		_, err := r.handle(ctx, call, nil, false)
		var pe *proto.Error
		require.ErrorAs(t, err, &pe)
		require.Equal(t, proto.CodeRDPNotReady, pe.Code)
		require.Contains(t, pe.Message, "group policy")
		require.Empty(t, h.scm.take(), "not started")
		require.Empty(t, h.relay.get())
		hl, _ := role.Health()
		require.Equal(t, "policy", hl.Context[proto.RDPContextDenyTS])
		// The policy value is read, never changed.
		n, ok, err := dword(h.reg, TerminalServicesPolicyKey, denyTSValue)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, uint32(1), n)
	})
}

// The rule comparison: an identical rule (addresses in any single-host
// form) is left alone; each drift field, or a duplicate, replaces it.
func TestReconcileFirewall(t *testing.T) {
	t.Parallel()
	want := WantedRule(proto.RDPEnsureResponse{EngineIP: "10.213.0.1", AgentIP: "10.213.0.2", Port: 3389})
	with := func(f func(*FirewallRule)) []FirewallRule {
		r := want
		f(&r)
		return []FirewallRule{r}
	}
	for _, tc := range []struct {
		name string
		have []FirewallRule
		did  string
	}{
		{"none", nil, FirewallAdded},
		{"identical", []FirewallRule{want}, FirewallInPlace},
		{"netmask forms", with(func(r *FirewallRule) {
			r.LocalAddress, r.RemoteAddress, r.Protocol = "10.213.0.2/255.255.255.255", "10.213.0.1/32", "6"
		}), FirewallInPlace},
		{"protocol", with(func(r *FirewallRule) { r.Protocol = "UDP" }), FirewallReplaced},
		{"port", with(func(r *FirewallRule) { r.LocalPort = "3390" }), FirewallReplaced},
		{"local address", with(func(r *FirewallRule) { r.LocalAddress = "*" }), FirewallReplaced},
		{"remote address", with(func(r *FirewallRule) { r.RemoteAddress = "10.213.0.0/24" }), FirewallReplaced},
		{"disabled", with(func(r *FirewallRule) { r.Enabled = false }), FirewallReplaced},
		{"direction", with(func(r *FirewallRule) { r.Direction = "out" }), FirewallReplaced},
		{"action", with(func(r *FirewallRule) { r.Action = "block" }), FirewallReplaced},
		{"duplicates", []FirewallRule{want, want}, FirewallReplaced},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			other := FirewallRule{Name: "Remote Desktop - User Mode (TCP-In)", Protocol: "TCP", LocalPort: "3389", Enabled: true}
			fw := &fakeFirewall{rules: append([]FirewallRule{other}, tc.have...)}
			did, err := ReconcileFirewall(context.Background(), fw, want)
			require.NoError(t, err)
			require.Equal(t, tc.did, did)
			rules, calls := fw.take()
			require.Contains(t, rules, other, "other rules are never touched")
			require.Len(t, rules, 2)
			if tc.did == FirewallInPlace {
				require.Equal(t, []string{"list"}, calls)
				require.Equal(t, tc.have[0], rules[1], "left as it was")
			} else {
				require.Equal(t, want, rules[1])
			}
		})
	}
}
