package inventory

import (
	"context"
	"errors"
	"reflect"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/roles"
)

// health returns a role's row from the tracker.
func health(t *testing.T, tr *roles.Tracker, role string) proto.RoleHealth {
	t.Helper()
	for _, h := range tr.Snapshot() {
		if h.Key == roles.Key(role) {
			return h
		}
	}
	t.Fatalf("no health row for %s", role)
	return proto.RoleHealth{}
}

func softwarePart(fail *atomic.Bool) part {
	return part{role: roles.SoftwareManagement, name: "software", timeout: time.Second,
		run: func(_ context.Context, _ *Collector, inv *proto.Inventory) error {
			if fail.Load() {
				inv.Software = []proto.Software{{Name: "half-written"}} // dropped with the failure
				return errors.New("dpkg-query: exit status 2: database locked")
			}
			inv.Software = []proto.Software{{Name: "bash", Version: "5.2", Source: "dpkg"}}
			return nil
		}}
}

func TestCollectFailsThenRecovers(t *testing.T) {
	t.Parallel()
	tr := roles.New(nil)
	var fail atomic.Bool
	fail.Store(true)
	hw := part{role: roles.DeviceAudit, name: "hardware", timeout: time.Second,
		run: func(_ context.Context, _ *Collector, inv *proto.Inventory) error {
			inv.Hardware = &proto.Hardware{CPUThreads: 4}
			return nil
		}}
	c := newCollector(tr, Options{}, []part{hw, softwarePart(&fail)})

	inv := c.Collect(t.Context())
	require.Nil(t, inv.Software, "a failing part leaves its collection nil")
	require.Equal(t, 4, inv.Hardware.CPUThreads, "other parts are unaffected")
	h := health(t, tr, roles.SoftwareManagement)
	require.Equal(t, proto.RoleUnhealthy, h.Observed)
	require.Equal(t, "dpkg-query: exit status 2: database locked", h.LastError, "a role with one part reports its error as is")
	require.Nil(t, h.LastHealthyAt)
	require.Equal(t, proto.RoleHealthy, health(t, tr, roles.DeviceAudit).Observed)

	inv = c.Collect(t.Context())
	require.Nil(t, inv.Software)
	h = health(t, tr, roles.SoftwareManagement)
	require.Equal(t, proto.RoleRecovering, h.Observed)
	require.Equal(t, 1, h.RecoveryAttempts)

	fail.Store(false)
	inv = c.Collect(t.Context())
	require.Equal(t, []proto.Software{{Name: "bash", Version: "5.2", Source: "dpkg"}}, inv.Software)
	h = health(t, tr, roles.SoftwareManagement)
	require.Equal(t, proto.RoleHealthy, h.Observed)
	require.Zero(t, h.RecoveryAttempts)
	require.Empty(t, h.LastError)
	require.NotNil(t, h.LastHealthyAt)
}

func TestCollectRoleWithSeveralParts(t *testing.T) {
	t.Parallel()
	tr := roles.New(nil)
	ok := func(_ context.Context, _ *Collector, inv *proto.Inventory) error {
		inv.OS = &proto.OSInfo{Name: "x"}
		return nil
	}
	bad := func(context.Context, *Collector, *proto.Inventory) error { return errors.New("no such file") }
	c := newCollector(tr, Options{}, []part{
		{roles.DeviceAudit, "os", time.Second, ok},
		{roles.DeviceAudit, "network", time.Second, bad},
	})
	inv := c.Collect(t.Context())
	require.Equal(t, "x", inv.OS.Name, "the role's other parts still report")
	require.Nil(t, inv.Network)
	h := health(t, tr, roles.DeviceAudit)
	require.Equal(t, proto.RoleUnhealthy, h.Observed)
	require.Equal(t, "network: no such file", h.LastError, "the failing part is named")
}

func TestCollectTimeoutAndPanic(t *testing.T) {
	t.Parallel()
	tr := roles.New(nil)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	c := newCollector(tr, Options{Timeout: 50 * time.Millisecond}, []part{
		{roles.ServiceManagement, "services", time.Hour, func(context.Context, *Collector, *proto.Inventory) error {
			<-release // ignores its context, like a read stuck on a dead mount
			return nil
		}},
		{roles.ProcessManagement, "processes", time.Hour, func(context.Context, *Collector, *proto.Inventory) error {
			panic("index out of range")
		}},
	})
	// The services part never returns by itself: Collect returning at all,
	// with this error, means Options.Timeout overrode the part's own hour.
	inv := c.Collect(t.Context())
	require.Nil(t, inv.Services)
	require.Equal(t, "timed out after 50ms", health(t, tr, roles.ServiceManagement).LastError)
	require.Equal(t, "panic: index out of range", health(t, tr, roles.ProcessManagement).LastError)
}

func TestCollectCancelledReportsNothing(t *testing.T) {
	t.Parallel()
	tr := roles.New(nil)
	ctx, cancel := context.WithCancel(t.Context())
	c := newCollector(tr, Options{}, []part{
		{roles.SoftwareManagement, "software", time.Minute, func(ctx context.Context, _ *Collector, _ *proto.Inventory) error {
			cancel()
			<-ctx.Done()
			return ctx.Err()
		}},
	})
	c.Collect(ctx)
	require.Empty(t, tr.Snapshot(), "an agent shutting down is not a failing role")
}

func TestUnsupportedParts(t *testing.T) {
	t.Parallel()
	tr := roles.New(nil)
	c := newCollector(tr, Options{}, unsupportedParts())
	for range 3 {
		inv := c.Collect(t.Context())
		require.Equal(t, proto.Inventory{}, inv, "no data rather than fake data")
	}
	snap := tr.Snapshot()
	require.Len(t, snap, 6)
	for _, h := range snap {
		require.Equal(t, proto.RoleUnhealthy, h.Observed, h.Key)
		require.Equal(t, "not supported on "+runtime.GOOS+" yet", h.LastError, h.Key)
		require.Zero(t, h.RecoveryAttempts, "%s: retrying cannot fix it", h.Key)
	}
}

func TestRoleError(t *testing.T) {
	t.Parallel()
	require.NoError(t, roleError(nil))
	u := roles.Unsupported("systemd is not running")
	plain := errors.New("exit status 1")
	require.ErrorIs(t, roleError([]error{u, prefixed{"x", u}}), roles.ErrUnsupported)
	mixed := roleError([]error{prefixed{"a", u}, prefixed{"b", plain}})
	require.NotErrorIs(t, mixed, roles.ErrUnsupported, "a fixable failure keeps the role recovering")
	require.Equal(t, "a: systemd is not running; b: exit status 1", mixed.Error())
}

func TestMergeCoversEveryCollection(t *testing.T) {
	t.Parallel()
	// Fill every field of an inventory, whatever fields it grows, and
	// check merge carries each one: a forgotten field would be collected
	// and silently never sent.
	var src proto.Inventory
	v := reflect.ValueOf(&src).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		default:
			t.Fatalf("Inventory.%s is neither a pointer nor a slice", v.Type().Field(i).Name)
		}
	}
	var dst proto.Inventory
	merge(&dst, &src)
	require.Equal(t, src, dst)
}

func TestMergeCopiesOnlyFilled(t *testing.T) {
	t.Parallel()
	dst := proto.Inventory{Software: []proto.Software{{Name: "a"}}, Patches: []proto.PatchEntry{}}
	merge(&dst, &proto.Inventory{Services: []proto.Service{}, Uptime: &proto.Uptime{UptimeSeconds: 5}})
	require.Equal(t, proto.Inventory{Software: []proto.Software{{Name: "a"}}, Patches: []proto.PatchEntry{},
		Services: []proto.Service{}, Uptime: &proto.Uptime{UptimeSeconds: 5}}, dst)
}
