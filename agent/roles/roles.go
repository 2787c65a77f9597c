// Package roles tracks the health of the agent's roles and publishes it as
// the `system:<role>` rows of SPEC "Agent role health snapshot".
//
// A role is registered by the code that runs it, so a build only publishes
// the roles it actually has. Each check of a role reports its outcome with
// Role.Report; the tracker turns the sequence of outcomes into the observed
// state (docs/agent.md "Role health"):
//
//   - success: Healthy, last healthy = now, no error, 0 recovery attempts;
//   - first failure after a success (or as the first check): Unhealthy;
//   - each further consecutive failure: Recovering, recovery attempts + 1;
//   - an unsupported failure (Unsupported): Unhealthy and stays so, with 0
//     recovery attempts, because retrying cannot fix it.
package roles

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// Role names (SPEC "Agent role health snapshot"). The spec's "vpn tunnel"
// is VPNTunnel, published as system:vpn_tunnel.
const (
	SystemContext      = "system_context"
	CurrentUser        = "current_user"
	DeviceAudit        = "device_audit"
	FileManagement     = "file_management"
	PatchManagement    = "patch_management"
	ProcessManagement  = "process_management"
	RegistryManagement = "registry_management"
	ServiceManagement  = "service_management"
	SoftwareManagement = "software_management"
	VPNTunnel          = "vpn_tunnel"
	RemoteShell        = "remote_shell"
	VNC                = "vnc"
	RDP                = "rdp"
	// APIWebSocket is the agent's realtime socket to the Engine (issue 27:
	// system:api_websocket), published beside the roles.
	APIWebSocket = "api_websocket"
)

// Names lists every role the spec knows, in the spec's order (the wire
// package's list, so the Engine shares it; TestNamesAreTheConstants keeps
// the two in step).
var Names = proto.RoleNames

// Connection lists the health rows published beside the roles: the
// agent's connection to the Engine, which the console shows apart from
// them (Agent Connection).
var Connection = proto.ConnectionRoles

// KeyPrefix starts every role health key.
const KeyPrefix = "system:"

// Key is the health row key of a role, e.g. "system:device_audit".
func Key(role string) string { return KeyPrefix + role }

// DesiredRunning and DesiredStopped are a role's desired states; every
// role starts running unless the operator stopped it (SetDesired).
const (
	DesiredRunning = proto.RoleDesiredRunning
	DesiredStopped = proto.RoleDesiredStopped
)

// Stoppable reports whether an operator may stop the role
// (proto.StoppableRoles).
func Stoppable(name string) bool { _, ok := proto.StoppableRoles[name]; return ok }

// ErrUnsupported marks failures that retrying cannot fix: the platform or
// the host lacks what the role needs. Errors made by Unsupported match it.
var ErrUnsupported = errors.New("not supported")

type unsupportedError struct{ msg string }

func (e unsupportedError) Error() string        { return e.msg }
func (e unsupportedError) Is(target error) bool { return target == ErrUnsupported }

// Unsupported returns an error whose message is exactly the formatted text
// (it becomes last_error as is) and which matches ErrUnsupported.
func Unsupported(format string, args ...any) error {
	return unsupportedError{msg: fmt.Sprintf(format, args...)}
}

// Tracker holds the health of the registered roles. It is safe for
// concurrent use.
type Tracker struct {
	now   func() time.Time
	mu    sync.Mutex
	roles map[string]*Role
	// changed holds a signal when an operator changed a desired state.
	changed chan struct{}
}

// New returns an empty tracker. now is the clock (nil: time.Now).
func New(now func() time.Time) *Tracker {
	if now == nil {
		now = time.Now
	}
	return &Tracker{now: now, roles: map[string]*Role{}, changed: make(chan struct{}, 1)}
}

// Changed receives when an operator stopped or started a role
// (SetDesired), so the run loop can post the new state at once instead of
// at its next check. Signals coalesce.
func (t *Tracker) Changed() <-chan struct{} { return t.changed }

// Role is the handle a role's code reports its checks with.
type Role struct {
	t       *Tracker
	checked bool // a role appears in Snapshot only once it has been checked
	stopped bool // the operator stopped it (SetDesired)
	health  proto.RoleHealth
}

// Register adds a role and returns its handle; registering the same name
// again returns the same handle. An unknown name is a programming error and
// panics, so a typo cannot publish a row the Engine does not know.
func (t *Tracker) Register(name string) *Role {
	if !slices.Contains(Names, name) && !slices.Contains(Connection, name) {
		panic(fmt.Sprintf("roles: unknown role %q", name))
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if r, ok := t.roles[name]; ok {
		return r
	}
	r := &Role{t: t, health: proto.RoleHealth{Key: Key(name), Desired: DesiredRunning}}
	t.roles[name] = r
	return r
}

// Report records the outcome of one check: nil is a success, anything else
// a failure (see the package comment for the rules).
func (r *Role) Report(err error) {
	t := r.t
	now := t.now().UTC()
	t.mu.Lock()
	defer t.mu.Unlock()
	h := &r.health
	wasChecked := r.checked
	r.checked = true
	h.LastCheckedAt = now
	switch {
	case err == nil:
		h.Observed = proto.RoleHealthy
		h.LastHealthyAt = &now
		h.LastError = ""
		h.RecoveryAttempts = 0
	case errors.Is(err, ErrUnsupported):
		h.Observed = proto.RoleUnhealthy
		h.LastError = err.Error()
		h.RecoveryAttempts = 0
	case !wasChecked || h.Observed == proto.RoleHealthy:
		h.Observed = proto.RoleUnhealthy
		h.LastError = err.Error()
		h.RecoveryAttempts = 0
	default:
		// The check that just failed was a retry of a failing role.
		h.Observed = proto.RoleRecovering
		h.LastError = err.Error()
		h.RecoveryAttempts++
	}
}

// Health returns the role's current row and whether it has been checked.
func (r *Role) Health() (proto.RoleHealth, bool) {
	r.t.mu.Lock()
	defer r.t.mu.Unlock()
	return r.row(), r.checked || r.stopped
}

// row is the published row: a stopped role shows desired and observed
// stopped whatever its last check said; its checks still run and their
// outcome shows again once it is started. Called with the lock held.
func (r *Role) row() proto.RoleHealth {
	h := copyHealth(r.health)
	if r.stopped {
		h.Desired, h.Observed = DesiredStopped, proto.RoleStopped
	}
	return h
}

// SetDesired stops (DesiredStopped) or starts (DesiredRunning) a
// stoppable role, registering it if need be. A stopped role refuses its
// requests (Stopped) and publishes desired and observed stopped.
func (t *Tracker) SetDesired(name, desired string) error {
	if !Stoppable(name) {
		return fmt.Errorf("roles: %q cannot be stopped", name)
	}
	if desired != DesiredRunning && desired != DesiredStopped {
		return fmt.Errorf("roles: unknown desired state %q", desired)
	}
	r := t.Register(name)
	t.mu.Lock()
	defer t.mu.Unlock()
	r.stopped = desired == DesiredStopped
	if r.stopped && !r.checked {
		r.health.LastCheckedAt = t.now().UTC()
	}
	select {
	case t.changed <- struct{}{}:
	default:
	}
	return nil
}

// Stopped reports whether the operator stopped the role.
func (t *Tracker) Stopped(name string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	r, ok := t.roles[name]
	return ok && r.stopped
}

// Refusal is the error a request of msgType gets while its role is
// stopped (proto.CodeRoleStopped), or nil.
func (t *Tracker) Refusal(msgType string) error {
	for name, types := range proto.StoppableRoles {
		if slices.Contains(types, msgType) && t.Stopped(name) {
			return &proto.Error{Code: proto.CodeRoleStopped,
				Message: fmt.Sprintf("the %s role is stopped on this device; start it from the device's Roles section", name)}
		}
	}
	return nil
}

// Snapshot returns the rows of every role checked at least once, sorted by
// key. A registered role that has not finished its first check has no
// observed state yet, and reporting one would be a guess.
func (t *Tracker) Snapshot() []proto.RoleHealth {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]proto.RoleHealth, 0, len(t.roles))
	for _, r := range t.roles {
		if r.checked || r.stopped {
			out = append(out, r.row())
		}
	}
	slices.SortFunc(out, func(a, b proto.RoleHealth) int { return cmp.Compare(a.Key, b.Key) })
	return out
}

// copyHealth detaches a row from the tracker so callers cannot race with
// later reports through the shared pointer and map.
func copyHealth(h proto.RoleHealth) proto.RoleHealth {
	if h.LastHealthyAt != nil {
		at := *h.LastHealthyAt
		h.LastHealthyAt = &at
	}
	h.Context = maps.Clone(h.Context)
	return h
}

// SetContext replaces the context pairs the role's row carries (the
// tunnel's virtual IP, tunnel ID and agent ID); nil clears them.
func (r *Role) SetContext(ctx map[string]string) {
	r.t.mu.Lock()
	defer r.t.mu.Unlock()
	r.health.Context = maps.Clone(ctx)
}
