package roles_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/roles"
)

var t0 = time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func setup(t *testing.T) (*roles.Tracker, *clock) {
	t.Helper()
	c := &clock{now: t0}
	return roles.New(c.Now), c
}

func TestKeys(t *testing.T) {
	t.Parallel()
	require.Equal(t, "system:device_audit", roles.Key(roles.DeviceAudit))
	require.Equal(t, "system:vpn_tunnel", roles.Key(roles.VPNTunnel))
	require.Equal(t, "system:rdp", roles.Key(roles.RDP))
	require.Len(t, roles.Names, 13, "the spec names 13 roles")
	require.Equal(t, "system:api_websocket", roles.Key(roles.APIWebSocket))
	require.NotPanics(t, func() { roles.New(nil).Register(roles.APIWebSocket) })
}

func TestTransitions(t *testing.T) {
	t.Parallel()
	tr, clk := setup(t)
	r := tr.Register(roles.SoftwareManagement)
	boom := errors.New("dpkg-query: exit status 2")

	type want struct {
		observed    string
		attempts    int
		lastError   string
		lastHealthy *time.Time
	}
	at := func(d time.Duration) *time.Time { x := t0.Add(d); return &x }
	steps := []struct {
		name string
		err  error
		want want
	}{
		{"first check fails", boom, want{proto.RoleUnhealthy, 0, boom.Error(), nil}},
		{"retry fails", boom, want{proto.RoleRecovering, 1, boom.Error(), nil}},
		{"second retry fails", errors.New("other"), want{proto.RoleRecovering, 2, "other", nil}},
		{"recovers", nil, want{proto.RoleHealthy, 0, "", at(3 * time.Minute)}},
		{"stays healthy", nil, want{proto.RoleHealthy, 0, "", at(4 * time.Minute)}},
		{"fails after healthy", boom, want{proto.RoleUnhealthy, 0, boom.Error(), at(4 * time.Minute)}},
		{"retry fails again", boom, want{proto.RoleRecovering, 1, boom.Error(), at(4 * time.Minute)}},
		{"becomes unsupported", roles.Unsupported("not supported on windows yet"),
			want{proto.RoleUnhealthy, 0, "not supported on windows yet", at(4 * time.Minute)}},
		{"unsupported stays unhealthy", roles.Unsupported("not supported on windows yet"),
			want{proto.RoleUnhealthy, 0, "not supported on windows yet", at(4 * time.Minute)}},
	}
	for i, s := range steps {
		r.Report(s.err)
		h, checked := r.Health()
		require.True(t, checked)
		require.Equal(t, "system:software_management", h.Key, s.name)
		require.Equal(t, roles.DesiredRunning, h.Desired, s.name)
		require.Equal(t, s.want.observed, h.Observed, s.name)
		require.Equal(t, s.want.attempts, h.RecoveryAttempts, s.name)
		require.Equal(t, s.want.lastError, h.LastError, s.name)
		require.Equal(t, s.want.lastHealthy, h.LastHealthyAt, s.name)
		require.Equal(t, t0.Add(time.Duration(i)*time.Minute), h.LastCheckedAt, s.name)
		clk.Advance(time.Minute)
	}
}

func TestUnsupportedError(t *testing.T) {
	t.Parallel()
	err := roles.Unsupported("not supported on %s yet", "windows")
	require.Equal(t, "not supported on windows yet", err.Error(), "the message is last_error verbatim")
	require.ErrorIs(t, err, roles.ErrUnsupported)
	require.NotErrorIs(t, errors.New("not supported"), roles.ErrUnsupported)
}

func TestSnapshot(t *testing.T) {
	t.Parallel()
	tr, _ := setup(t)
	require.Empty(t, tr.Snapshot())

	svc := tr.Register(roles.ServiceManagement)
	audit := tr.Register(roles.DeviceAudit)
	tr.Register(roles.PatchManagement) // never checked
	require.Same(t, audit, tr.Register(roles.DeviceAudit), "registering twice returns the same handle")

	svc.Report(errors.New("x"))
	audit.Report(nil)
	snap := tr.Snapshot()
	require.Len(t, snap, 2, "a role without a finished check has no row yet")
	require.Equal(t, "system:device_audit", snap[0].Key)
	require.Equal(t, "system:service_management", snap[1].Key)

	// The snapshot is a copy: later reports do not change it.
	audit.Report(errors.New("later"))
	require.Equal(t, proto.RoleHealthy, snap[0].Observed)
	require.NotNil(t, snap[0].LastHealthyAt)
}

func TestRegisterUnknownPanics(t *testing.T) {
	t.Parallel()
	tr, _ := setup(t)
	require.Panics(t, func() { tr.Register("vpn tunnel") })
	require.Panics(t, func() { tr.Register("system:device_audit") })
}

func TestConcurrentReports(t *testing.T) {
	t.Parallel()
	tr, _ := setup(t)
	var wg sync.WaitGroup
	for _, name := range roles.Names {
		wg.Go(func() {
			r := tr.Register(name)
			for i := range 100 {
				if i%2 == 0 {
					r.Report(nil)
				} else {
					r.Report(errors.New("x"))
				}
				_ = tr.Snapshot()
			}
		})
	}
	wg.Wait()
	require.Len(t, tr.Snapshot(), len(roles.Names))
}

// A stopped role publishes desired and observed stopped and refuses its
// requests with role_stopped; started again its last check shows.
func TestStopStart(t *testing.T) {
	t.Parallel()
	tr, c := setup(t)
	shell := tr.Register(roles.RemoteShell)
	shell.Report(nil)
	require.NoError(t, tr.Refusal(proto.EventShellOpen))

	select {
	case <-tr.Changed():
		t.Fatal("a check is not an operator's change")
	default:
	}
	require.NoError(t, tr.SetDesired(roles.RemoteShell, roles.DesiredStopped))
	require.True(t, tr.Stopped(roles.RemoteShell))
	// The run loop hears of the change at once (signals coalesce).
	require.NoError(t, tr.SetDesired(roles.RemoteShell, roles.DesiredStopped))
	<-tr.Changed()
	select {
	case <-tr.Changed():
		t.Fatal("two changes before the loop looked are one signal")
	default:
	}
	h, ok := shell.Health()
	require.True(t, ok)
	require.Equal(t, roles.DesiredStopped, h.Desired)
	require.Equal(t, proto.RoleStopped, h.Observed)
	var pe *proto.Error
	require.ErrorAs(t, tr.Refusal(proto.EventShellOpen), &pe)
	require.Equal(t, proto.CodeRoleStopped, pe.Code)
	require.NoError(t, tr.Refusal(proto.EventServiceControl), "other roles still serve")

	// Checks go on while stopped; the row stays stopped.
	c.Advance(time.Minute)
	shell.Report(errors.New("no shell"))
	require.Equal(t, []proto.RoleHealth{{Key: "system:remote_shell", Desired: "stopped", Observed: "Stopped",
		LastCheckedAt: t0.Add(time.Minute), LastHealthyAt: ptr(t0), LastError: "no shell"}}, tr.Snapshot())

	require.NoError(t, tr.SetDesired(roles.RemoteShell, roles.DesiredRunning))
	require.NoError(t, tr.Refusal(proto.EventShellOpen))
	h, _ = shell.Health()
	require.Equal(t, roles.DesiredRunning, h.Desired)
	require.Equal(t, proto.RoleUnhealthy, h.Observed)

	// A role stopped before its first check (at start, from agent.json)
	// is published stopped at once.
	require.NoError(t, tr.SetDesired(roles.FileManagement, roles.DesiredStopped))
	require.Len(t, tr.Snapshot(), 2)
}

func TestSetDesiredRefuses(t *testing.T) {
	t.Parallel()
	tr, _ := setup(t)
	for _, name := range []string{roles.SystemContext, roles.APIWebSocket, roles.VPNTunnel, roles.DeviceAudit} {
		require.False(t, roles.Stoppable(name), name)
		require.Error(t, tr.SetDesired(name, roles.DesiredStopped), name)
	}
	require.Error(t, tr.SetDesired(roles.RemoteShell, "paused"))
	require.False(t, tr.Stopped(roles.RemoteShell))
}
func ptr(t time.Time) *time.Time { return &t }
