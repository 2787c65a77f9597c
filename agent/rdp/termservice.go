package rdp

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/registry"
	"github.com/cairn-rmm/cairn/agent/roles"
)

// The Windows role (SPEC behaviour 14): the server is the Terminal
// Service (TermService). Everything it touches is behind an interface
// (registry.Store, SCM, Firewall) so the logic below is tested on Linux
// and under Wine with in-memory fakes; the real implementations are in
// service_windows.go and firewall_windows.go.

// AuditEvery bounds the full audit (registry, start mode, firewall rule):
// at most once per AuditEvery from the 30 s loop (behaviour 14), and on
// every rdp_start and recovery.
const AuditEvery = 5 * time.Minute

// FirewallRuleName is the one rule the role manages.
const FirewallRuleName = "Cairn RDP (tunnel)"

var (
	// TerminalServerKey holds fDenyTSConnections.
	TerminalServerKey = registry.Path{Root: "HKLM", Sub: `SYSTEM\CurrentControlSet\Control\Terminal Server`}
	// TerminalServicesPolicyKey is group policy's override, read only:
	// the role does not change group policy.
	TerminalServicesPolicyKey = registry.Path{Root: "HKLM", Sub: `SOFTWARE\Policies\Microsoft\Windows NT\Terminal Services`}
	// CurrentVersionKey holds EditionID (Home editions: "Core...").
	CurrentVersionKey = registry.Path{Root: "HKLM", Sub: `SOFTWARE\Microsoft\Windows NT\CurrentVersion`}
)

const denyTSValue = "fDenyTSConnections"

// Service states and start modes as the role reports them.
const (
	StartModeAuto         = "auto"
	StartModeDemand       = "demand"
	StartModeDisabled     = "disabled"
	StartModeNotInstalled = "not_installed"
)

// SCM is TermService as the Service Control Manager sees it.
type SCM interface {
	// Query returns the state (running, stopped, start_pending,
	// stop_pending, unknown) and start mode (StartMode*; not_installed
	// with a nil error when there is no such service).
	Query(ctx context.Context) (state, startMode string, err error)
	// SetAutomatic sets the start type to automatic.
	SetAutomatic(ctx context.Context) error
	// Start starts the service (nil when it runs already); Restart stops
	// it (with its dependants) and starts it again.
	Start(ctx context.Context) error
	Restart(ctx context.Context) error
}

// FirewallRule is one inbound/outbound rule as the role compares them:
// the fields behaviour 14 names (protocol, port, local and remote
// address, enabled state, direction, action). Addresses are single
// hosts (a /32); a rule scoped otherwise reads as its raw text and
// compares as drift.
type FirewallRule struct {
	Name          string
	Protocol      string // "TCP", "UDP", or the IANA number
	LocalPort     string // "3389"
	LocalAddress  string // "10.213.0.2"
	RemoteAddress string // "10.213.0.1"
	Enabled       bool
	Direction     string // "in" or "out"
	Action        string // "allow" or "block"
}

// Firewall is the host firewall (Windows: the HNetCfg.FwPolicy2 COM
// object; tests: a fake).
type Firewall interface {
	// List returns the rules named name (any number: duplicates too).
	List(ctx context.Context, name string) ([]FirewallRule, error)
	// Add adds a rule (on every profile).
	Add(ctx context.Context, r FirewallRule) error
	// Remove removes every rule named name.
	Remove(ctx context.Context, name string) error
}

// Firewall states in the role's context.
const (
	FirewallInPlace       = "in_place"
	FirewallAdded         = "added"
	FirewallReplaced      = "replaced"
	FirewallAwaitingScope = "awaiting_scope"
	FirewallError         = "error"
)

// WantedRule is the one rule for a scope: inbound TCP port from the
// Engine's tunnel address to the agent's, allowed and enabled.
func WantedRule(scope proto.RDPEnsureResponse) FirewallRule {
	port := scope.Port
	if port == 0 {
		port = proto.RDPPort
	}
	return FirewallRule{Name: FirewallRuleName, Protocol: "TCP", LocalPort: fmt.Sprint(port),
		LocalAddress: scope.AgentIP, RemoteAddress: scope.EngineIP, Enabled: true, Direction: "in", Action: "allow"}
}

// sameRule compares the drift fields, addresses as IPs ("10.0.0.2",
// "10.0.0.2/32" and "10.0.0.2/255.255.255.255" are one host).
func sameRule(a, b FirewallRule) bool {
	return strings.EqualFold(protocol(a.Protocol), protocol(b.Protocol)) &&
		strings.TrimSpace(a.LocalPort) == strings.TrimSpace(b.LocalPort) &&
		sameHost(a.LocalAddress, b.LocalAddress) && sameHost(a.RemoteAddress, b.RemoteAddress) &&
		a.Enabled == b.Enabled && strings.EqualFold(a.Direction, b.Direction) && strings.EqualFold(a.Action, b.Action)
}

func protocol(p string) string {
	switch strings.TrimSpace(p) {
	case "6":
		return "TCP"
	case "17":
		return "UDP"
	}
	return strings.TrimSpace(p)
}

func sameHost(a, b string) bool {
	x, ok1 := host(a)
	y, ok2 := host(b)
	return ok1 && ok2 && x == y
}

// host reads a single-host address: "a", "a/32" (or /128) or
// "a/255.255.255.255".
func host(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	ip, mask, hasMask := strings.Cut(s, "/")
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return netip.Addr{}, false
	}
	if hasMask && mask != fmt.Sprint(a.BitLen()) && !(a.Is4() && mask == "255.255.255.255") {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// ReconcileFirewall keeps exactly one rule named want.Name equal to want:
// an identical single rule is left alone; a drifted one, or several, are
// all removed and want added. It returns what it did (FirewallInPlace,
// FirewallAdded, FirewallReplaced).
func ReconcileFirewall(ctx context.Context, fw Firewall, want FirewallRule) (string, error) {
	have, err := fw.List(ctx, want.Name)
	if err != nil {
		return "", fmt.Errorf("list the firewall rules: %w", err)
	}
	if len(have) == 1 && sameRule(have[0], want) {
		return FirewallInPlace, nil
	}
	did := FirewallAdded
	if len(have) > 0 {
		if err := fw.Remove(ctx, want.Name); err != nil {
			return "", fmt.Errorf("remove the drifted firewall rule: %w", err)
		}
		did = FirewallReplaced
	}
	if err := fw.Add(ctx, want); err != nil {
		return "", fmt.Errorf("add the firewall rule: %w", err)
	}
	return did, nil
}

// TermService is the Windows RDP server as the role manages it: it
// implements Service plus the audit, the firewall scope and the extra
// role context.
type TermService struct {
	Registry registry.Store
	SCM      SCM
	Rules    Firewall
	Now      func() time.Time

	mu        sync.Mutex
	scope     *proto.RDPEnsureResponse
	firewall  string
	startMode string
	denyTS    string
	lastAudit time.Time
}

// Name is the service's name.
func (*TermService) Name() string { return "TermService" }

// State is the service's state now.
func (t *TermService) State(ctx context.Context) string {
	state, mode, err := t.SCM.Query(ctx)
	if err != nil {
		return "unknown"
	}
	t.mu.Lock()
	t.startMode = mode
	t.mu.Unlock()
	if mode == StartModeNotInstalled {
		return "not_installed"
	}
	return state
}

// Unsupported is non-nil where Windows has no RDP server: Home editions
// (EditionID Core*) and hosts without TermService.
func (t *TermService) Unsupported() error {
	if ed := t.edition(); strings.HasPrefix(strings.ToLower(ed), "core") {
		return roles.Unsupported("Windows %s (a Home edition) has no RDP server", ed)
	}
	_, mode, err := t.SCM.Query(context.Background())
	if err == nil && mode == StartModeNotInstalled {
		return roles.Unsupported("this Windows has no Terminal Service (TermService)")
	}
	return nil
}

func (t *TermService) edition() string {
	_, values, err := t.Registry.Children(CurrentVersionKey)
	if err != nil {
		return ""
	}
	for _, v := range values {
		if strings.EqualFold(v.Name, "EditionID") {
			s, _ := v.Data.(string)
			return s
		}
	}
	return ""
}

// Start starts TermService; with force (rdp_transport_recovery) it
// restarts it. The role audits (Audit) before.
func (t *TermService) Start(ctx context.Context, force bool) error {
	if force {
		return t.SCM.Restart(ctx)
	}
	return t.SCM.Start(ctx)
}

// AuditDue reports whether the 30 s loop should audit now.
func (t *TermService) AuditDue() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lastAudit.IsZero() || t.now().Sub(t.lastAudit) >= AuditEvery
}

func (t *TermService) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}

// Audit is the full check: fDenyTSConnections=0 (refused when group
// policy denies, which the role does not change), TermService automatic,
// and the firewall rule for the last known scope.
func (t *TermService) Audit(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lastAudit = t.now().UTC()
	if deny, ok, err := dword(t.Registry, TerminalServicesPolicyKey, denyTSValue); err != nil {
		return err
	} else if ok && deny != 0 {
		t.denyTS = "policy"
		return errors.New("group policy denies Remote Desktop connections (Terminal Services fDenyTSConnections=1); the agent does not change group policy")
	}
	deny, ok, err := dword(t.Registry, TerminalServerKey, denyTSValue)
	if err != nil {
		return err
	}
	if !ok || deny != 0 {
		if err := put(t.Registry, TerminalServerKey, registry.Value{Name: denyTSValue, Type: registry.TypeDWord, Data: uint32(0)}); err != nil {
			return fmt.Errorf("set fDenyTSConnections=0: %w", err)
		}
	}
	t.denyTS = "0"
	_, mode, err := t.SCM.Query(ctx)
	if err != nil {
		return fmt.Errorf("query TermService: %w", err)
	}
	if mode != StartModeAuto {
		if err := t.SCM.SetAutomatic(ctx); err != nil {
			return fmt.Errorf("set TermService to automatic: %w", err)
		}
		mode = StartModeAuto
	}
	t.startMode = mode
	return t.reconcileFirewall(ctx)
}

// reconcileFirewall (under t.mu) applies the rule for the known scope.
func (t *TermService) reconcileFirewall(ctx context.Context) error {
	if t.scope == nil || t.scope.EngineIP == "" || t.scope.AgentIP == "" {
		t.firewall = FirewallAwaitingScope
		return nil
	}
	did, err := ReconcileFirewall(ctx, t.Rules, WantedRule(*t.scope))
	if err != nil {
		t.firewall = FirewallError
		return err
	}
	t.firewall = did
	return nil
}

// SetScope takes /api/agent/rdp/ensure's answer; a changed scope is
// applied to the firewall at once, after a first audit.
func (t *TermService) SetScope(ctx context.Context, scope proto.RDPEnsureResponse) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.scope != nil && *t.scope == scope {
		return nil
	}
	t.scope = &scope
	if t.lastAudit.IsZero() {
		return nil
	}
	return t.reconcileFirewall(ctx)
}

// Firewall is the last firewall reconciliation's outcome.
func (t *TermService) Firewall() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.firewall == "" {
		return "not_checked"
	}
	return t.firewall
}

// Context is the role context beyond Linux's: start_mode,
// deny_ts_connections, last_audit_at.
func (t *TermService) Context() map[string]string {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := map[string]string{}
	if t.startMode != "" {
		c[proto.RDPContextStartMode] = t.startMode
	}
	if t.denyTS != "" {
		c[proto.RDPContextDenyTS] = t.denyTS
	}
	if !t.lastAudit.IsZero() {
		c[proto.RDPContextLastAuditAt] = t.lastAudit.Format(time.RFC3339)
	}
	return c
}

// CheckHost is where the listener is checked: TermService listens on the
// host, and the in-process tunnel's address is not the host's (the
// tunnel relays its :3389 to 127.0.0.1:3389).
func (*TermService) CheckHost() string { return "127.0.0.1" }

// dword reads a REG_DWORD (ok false when it or its key is missing).
func dword(s registry.Store, p registry.Path, name string) (uint32, bool, error) {
	_, values, err := s.Children(p)
	if isCode(err, proto.CodeRegistryKeyNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("read %s: %w", p, err)
	}
	for _, v := range values {
		if strings.EqualFold(v.Name, name) {
			n, ok := v.Data.(uint32)
			return n, ok, nil
		}
	}
	return 0, false, nil
}

func put(s registry.Store, p registry.Path, v registry.Value) error {
	err := s.SetValue(p, v, false)
	if isCode(err, proto.CodeRegistryValueNotFound) {
		err = s.SetValue(p, v, true)
	}
	return err
}

func isCode(err error, code string) bool {
	var pe *proto.Error
	return errors.As(err, &pe) && pe.Code == code
}
