package devices_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/events"
	"github.com/cairn-rmm/cairn/internal/inventory"
)

func fullInventory(boot time.Time) proto.Inventory {
	return proto.Inventory{
		Hardware: &proto.Hardware{CPUModel: " Xeon ", CPUCores: 4, CPUThreads: 8, MemoryTotalBytes: 16 << 30,
			Disks: []proto.Disk{{Name: "sdb", SizeBytes: 1 << 40}, {Name: "sda", SizeBytes: 1 << 39, Mountpoint: "/"}}},
		OS:      &proto.OSInfo{Family: "Linux", Name: "Debian GNU/Linux 12 (bookworm)", ID: "debian", Version: "12"},
		Network: []proto.NetIface{{Name: "eth0", MAC: "AA:BB:CC:00:11:22", Up: true, Addresses: []string{"10.0.0.5/24"}}},
		Sessions: []proto.Session{
			{Username: "bob", TTY: "pts/1", Type: "SSH"}, {Username: " alice ", TTY: "tty1", Active: true, HelperReady: true},
			{Username: "bob", TTY: "pts/1", Type: "ssh"}, {Username: "", TTY: "tty9"},
		},
		Uptime: &proto.Uptime{BootTime: boot, UptimeSeconds: 3600, BootID: "b-1"},
		Software: []proto.Software{
			{Name: "  OpenSSL ", Version: "3.0.11", Publisher: "Debian", Source: "dpkg"},
			{Name: "openssl", Version: "3.0.11", Source: "dpkg"}, // same name and version: one row
			{Name: "curl", Version: "7.88", Source: "dpkg"},
			{Name: "   ", Version: "1"},
		},
		Services:  []proto.Service{{Name: "ssh.service", State: "Running"}, {Name: "cron.service", State: "running"}},
		Processes: []proto.Process{{PID: 2, Name: "kthreadd"}, {PID: 1, Name: "systemd"}},
		Patches: []proto.PatchEntry{
			{KB: "kb5034441", Title: "Security update", State: proto.PatchPending, Source: "wua_pending"},
			{KB: "5034441", Title: "Security update", State: proto.PatchInstalled, Source: "wua_history"},
			{KB: "KB5034441", State: proto.PatchPending, Source: "quick_fix_engineering"},
			{UpdateID: "ABC-DEF", Title: "Defender definitions", Revision: 200, State: proto.PatchPending, Source: "wua_pending"},
			{Package: "openssl", CandidateVersion: "3.0.13", State: proto.PatchPending, Source: "apt"},
			{Title: "Some  driver", State: proto.PatchPending, Source: "wua_pending"},
		},
	}
}

func (f *fixture) software(t *testing.T, guid string) []db.DeviceSoftware {
	t.Helper()
	rows, err := f.store.DeviceSoftwareList(context.Background(), cairn.DeviceGUID(guid))
	require.NoError(t, err)
	return rows
}

// Details are stored normalized: software both for display and as filter
// rows keyed by the lower-cased trimmed name, patches keyed KB first and
// de-duplicated (installed beats pending), the OS name on the device.
func TestDetailsStoresNormalizedInventory(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	id := f.device(t, "g1", "alpha")
	boot := f.clock.Now().Add(-2 * time.Hour)
	res, err := f.svc.Details(ctx, id, proto.Details{CollectedAt: f.clock.Now(), Inventory: fullInventory(boot),
		Roles: []proto.RoleHealth{{Key: proto.RoleKeySoftwareManagement, Observed: proto.RoleHealthy}}})
	require.NoError(t, err)
	require.True(t, res.Changed)

	require.Equal(t, "Debian GNU/Linux 12 (bookworm)", f.row(t, "g1").OperatingSystem)
	sw := f.software(t, "g1")
	require.Len(t, sw, 2)
	require.Equal(t, []string{"curl", "openssl"}, []string{sw[0].NameKey, sw[1].NameKey})
	require.Equal(t, "OpenSSL", sw[1].Name)
	require.Equal(t, "Debian", sw[1].Publisher)

	d := health(t, f, "alpha")
	require.Equal(t, "Xeon", d.Hardware.CPUModel)
	require.Equal(t, "sda", d.Hardware.Disks[0].Name)
	require.Equal(t, "linux", d.OS.Family)
	require.Equal(t, "aa:bb:cc:00:11:22", d.Network[0].MAC)
	require.Len(t, d.Sessions, 2, "blank users and repeats are dropped")
	require.Equal(t, "alice", d.Sessions[0].Username)
	require.True(t, d.Sessions[0].HelperReady)
	require.Equal(t, "ssh", d.Sessions[1].Type)
	require.Equal(t, boot, d.Uptime.BootTime)
	require.Equal(t, int64(7200), d.Uptime.UptimeSeconds, "uptime is counted from the boot by the Engine's clock")
	require.Len(t, d.Software, 2)
	require.Equal(t, []string{"cron.service", "ssh.service"}, []string{d.Services[0].Name, d.Services[1].Name})
	require.Equal(t, 1, d.Processes[0].PID)
	require.Equal(t, f.clock.Now(), d.CollectedAt.UTC())
	require.Equal(t, proto.RoleHealthy, roleByKey(t, d.Health, proto.RoleKeySoftwareManagement).Observed)

	keys := map[string]devices.PatchRow{}
	for _, p := range d.Patches {
		keys[p.Key] = p
	}
	require.Len(t, keys, 4)
	kb := keys["kb:KB5034441"]
	require.Equal(t, "KB5034441", kb.KB)
	require.Equal(t, proto.PatchInstalled, kb.State, "an installed report of a KB wins over pending ones")
	require.Equal(t, "wua_history", kb.Source)
	require.Equal(t, int32(200), keys["update:abc-def"].Revision)
	require.Equal(t, "openssl", keys["pkg:openssl=3.0.13"].Title, "a package row without a title is titled by its package")
	require.Contains(t, keys, "title:some driver")

	evs := f.events.take()
	require.Len(t, evs, 2)
	require.Equal(t, events.TypeDeviceInventoryChanged, evs[0].Type)
	require.Equal(t, cairn.SiteID(f.siteID), evs[0].SiteID)
	require.Contains(t, string(evs[0].Data), `"parts":["hardware","os","network","sessions","uptime","software","services","processes","patches"]`)
	require.Equal(t, events.TypeDeviceServicesChanged, evs[1].Type)
}

// The same inventory again changes nothing and emits nothing, even when
// the agent lists things in another order; a change of services alone
// emits both events, a change of software only the inventory one.
func TestDetailsEmitsOnlyOnChange(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	id := f.device(t, "g1", "alpha")
	inv := fullInventory(f.clock.Now().Add(-time.Hour))
	post := func(inv proto.Inventory) bool {
		res, err := f.svc.Details(ctx, id, proto.Details{Inventory: inv})
		require.NoError(t, err)
		return res.Changed
	}
	require.True(t, post(inv))
	f.events.take()

	again := fullInventory(f.clock.Now().Add(-time.Hour).Add(300 * time.Millisecond)) // same second
	again.Software[0], again.Software[2] = again.Software[2], again.Software[0]
	again.Services[0], again.Services[1] = again.Services[1], again.Services[0]
	again.Uptime.UptimeSeconds += 600
	require.False(t, post(again))
	require.Empty(t, f.events.take())

	inv.Services = append(inv.Services, proto.Service{Name: "nginx.service", State: "failed"})
	require.True(t, post(inv))
	evs := f.events.take()
	require.Len(t, evs, 2)
	require.Equal(t, events.TypeDeviceInventoryChanged, evs[0].Type)
	require.Contains(t, string(evs[0].Data), `"parts":["services"]`)
	require.Equal(t, events.TypeDeviceServicesChanged, evs[1].Type)

	inv.Software = append(inv.Software, proto.Software{Name: "nginx", Version: "1.22"})
	require.True(t, post(inv))
	require.Equal(t, []string{events.TypeDeviceInventoryChanged}, f.events.types())
	require.Len(t, f.software(t, "g1"), 3)
}

// A collection left out (nil) keeps what was stored, patch rows included;
// an empty one replaces it with nothing.
func TestDetailsNilCollectionsLeaveStoredOnes(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	id := f.device(t, "g1", "alpha")
	_, err := f.svc.Details(ctx, id, proto.Details{Inventory: fullInventory(f.clock.Now())})
	require.NoError(t, err)

	res, err := f.svc.Details(ctx, id, proto.Details{Inventory: proto.Inventory{Services: []proto.Service{{Name: "only.service"}}}})
	require.NoError(t, err)
	require.True(t, res.Changed)
	d := health(t, f, "alpha")
	require.Len(t, d.Services, 1)
	require.Len(t, d.Patches, 4, "a details post without patches keeps the patch rows")
	require.Len(t, d.Software, 2)
	require.Len(t, f.software(t, "g1"), 2)
	require.NotNil(t, d.Hardware)
	require.Equal(t, "Debian GNU/Linux 12 (bookworm)", f.row(t, "g1").OperatingSystem)

	_, err = f.svc.Details(ctx, id, proto.Details{Inventory: proto.Inventory{Patches: []proto.PatchEntry{}, Software: []proto.Software{}}})
	require.NoError(t, err)
	d = health(t, f, "alpha")
	require.NotNil(t, d.Patches)
	require.Empty(t, d.Patches, "an empty patch list replaces the rows")
	require.NotNil(t, d.Software)
	require.Empty(t, d.Software)
	require.Empty(t, f.software(t, "g1"))
	require.Len(t, d.Services, 1)
}

// Never-reported collections read back as nil, reported-empty ones as
// empty: the console tells "not collected" from "none".
func TestDetailsBeforeAnyInventory(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.device(t, "g1", "alpha")
	d := health(t, f, "alpha")
	require.Nil(t, d.Hardware)
	require.Nil(t, d.Software)
	require.Nil(t, d.Patches)
	require.Nil(t, d.CollectedAt)
	require.Nil(t, d.Health.Startup)
	require.NotNil(t, d.Health.Roles)
	require.Nil(t, d.LastStatus)
}

func TestDetailsRejectsBadInput(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := f.device(t, "g1", "alpha")
	for _, tc := range []struct {
		field string
		d     proto.Details
	}{
		{"inventory.patches[1].state", proto.Details{Inventory: proto.Inventory{Patches: []proto.PatchEntry{
			{KB: "KB1", State: proto.PatchPending, Source: "wua_pending"}, {KB: "KB2", State: "done", Source: "wua_pending"}}}}},
		{"inventory.patches[0].title", proto.Details{Inventory: proto.Inventory{Patches: []proto.PatchEntry{{State: proto.PatchPending, Source: "apt"}}}}},
		{"inventory.patches[0].source", proto.Details{Inventory: proto.Inventory{Patches: []proto.PatchEntry{{KB: "KB1", State: proto.PatchPending}}}}},
		{"inventory.uptime.boot_time", proto.Details{Inventory: proto.Inventory{Uptime: &proto.Uptime{}}}},
		{"inventory.software", proto.Details{Inventory: proto.Inventory{Software: make([]proto.Software, inventory.MaxSoftware+1)}}},
		{"roles[0].observed", proto.Details{Roles: []proto.RoleHealth{{Key: proto.RoleKeyVNC}}}},
	} {
		_, err := f.svc.Details(context.Background(), id, tc.d)
		var e *cairn.Error
		require.ErrorAs(t, err, &e, tc.field)
		require.Contains(t, e.Fields, tc.field)
	}
	require.Empty(t, f.events.take())
	d := health(t, f, "alpha")
	require.Nil(t, d.Patches)
	require.Nil(t, d.CollectedAt, "nothing was stored")
}
