package inventory

import (
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/windows/registry"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/roles"
)

// These tests collect the inventory of the Windows machine running them
// (Wine in make test-wine) and check it for what any Windows has. Wine's
// registry, SCM and process table are real enough for that; what only a
// real Windows shows (DisplayVersion, BIOS values, RDP sessions) is
// covered by the table tests in wininfo_test.go.

func TestCollectWindowsMachine(t *testing.T) {
	t.Parallel()
	tr := roles.New(nil)
	c := New(tr, Options{})
	inv := c.Collect(t.Context())
	t.Logf("os %+v; hardware %+v; %d interfaces, %d sessions, %d software rows, %d services, %d processes",
		inv.OS, inv.Hardware, len(inv.Network), len(inv.Sessions), len(inv.Software), len(inv.Services), len(inv.Processes))

	t.Run("os", func(t *testing.T) {
		require.NotNil(t, inv.OS)
		require.Equal(t, "windows", inv.OS.Family)
		require.Equal(t, "windows", inv.OS.ID)
		require.NotEmpty(t, inv.OS.Name)
		require.Regexp(t, `^\d+\.\d+\.\d+`, inv.OS.KernelVersion)
		host, err := os.Hostname()
		require.NoError(t, err)
		require.Equal(t, host, inv.OS.Hostname)
		require.Equal(t, map[string]string{"amd64": "x86_64", "arm64": "aarch64", "386": "x86"}[runtime.GOARCH], inv.OS.Arch)
		k, err := registry.OpenKey(registry.LOCAL_MACHINE, `SOFTWARE\Microsoft\Cryptography`, registry.QUERY_VALUE|registry.WOW64_64KEY)
		require.NoError(t, err)
		defer k.Close()
		guid, _, err := k.GetStringValue("MachineGuid")
		require.NoError(t, err)
		require.Equal(t, strings.ToLower(guid), inv.OS.MachineID)
	})

	t.Run("hardware", func(t *testing.T) {
		require.NotNil(t, inv.Hardware)
		require.Positive(t, inv.Hardware.MemoryTotalBytes)
		require.Positive(t, inv.Hardware.CPUThreads)
		require.Equal(t, runtime.NumCPU(), inv.Hardware.CPUThreads)
		require.NotEmpty(t, inv.Hardware.Disks)
		i := slices.IndexFunc(inv.Hardware.Disks, func(d proto.Disk) bool { return d.Name == "C:" })
		require.GreaterOrEqual(t, i, 0, "drive C: is listed: %+v", inv.Hardware.Disks)
		c := inv.Hardware.Disks[i]
		require.Equal(t, `C:\`, c.Mountpoint)
		require.Positive(t, c.SizeBytes)
		require.Equal(t, c.SizeBytes, c.UsedBytes+c.FreeBytes)
	})

	t.Run("network", func(t *testing.T) {
		require.NotNil(t, inv.Network, "collected (Wine may list no adapters, real Windows always has loopback)")
		for _, n := range inv.Network {
			require.NotEmpty(t, n.Name)
			require.NotNil(t, n.Addresses)
		}
	})

	t.Run("uptime", func(t *testing.T) {
		require.NotNil(t, inv.Uptime)
		require.Positive(t, inv.Uptime.UptimeSeconds)
		require.False(t, inv.Uptime.BootTime.IsZero())
		again := c.Collect(t.Context())
		require.Equal(t, inv.Uptime.BootTime, again.Uptime.BootTime, "the boot time does not wander between collections")
	})

	t.Run("sessions", func(t *testing.T) {
		require.NotNil(t, inv.Sessions)
	})

	t.Run("software", func(t *testing.T) {
		require.NotNil(t, inv.Software)
	})

	t.Run("services", func(t *testing.T) {
		require.NotEmpty(t, inv.Services, "Wine's SCM lists its own services")
		for _, s := range inv.Services {
			require.NotEmpty(t, s.Name)
			require.Contains(t, []string{"running", "stopped", "starting", "stopping", "paused"}, s.State, s.Name)
		}
	})

	t.Run("processes", func(t *testing.T) {
		i := slices.IndexFunc(inv.Processes, func(p proto.Process) bool { return p.PID == os.Getpid() })
		require.GreaterOrEqual(t, i, 0, "this test's process is listed")
		self := inv.Processes[i]
		exe, err := os.Executable()
		require.NoError(t, err)
		require.True(t, strings.EqualFold(self.Name, exe[strings.LastIndexAny(exe, `\/`)+1:]), "%q is the executable's name", self.Name)
		require.Positive(t, self.RSSBytes)
		require.False(t, self.StartedAt.IsZero())
		require.NotEmpty(t, self.User)
		require.Contains(t, self.Command, self.Name[:len(self.Name)-len(".exe")])
		require.Equal(t, os.Getppid(), self.PPID)
	})

	t.Run("roles", func(t *testing.T) {
		health := map[string]proto.RoleHealth{}
		for _, r := range tr.Snapshot() {
			health[r.Key] = r
		}
		for _, r := range []string{roles.DeviceAudit, roles.CurrentUser, roles.SoftwareManagement, roles.ServiceManagement, roles.ProcessManagement} {
			require.Equal(t, "Healthy", health["system:"+r].Observed, "%s: %s", r, health["system:"+r].LastError)
		}
		p := health["system:"+roles.PatchManagement]
		require.Equal(t, "Unhealthy", p.Observed, p.LastError)
		require.Contains(t, p.LastError, "Windows Update")
		require.Nil(t, inv.Patches)
	})
}

func TestWindowsMetrics(t *testing.T) {
	t.Parallel()
	c := New(roles.New(nil), Options{})
	m, err := c.Metrics(t.Context())
	require.NoError(t, err)
	require.Positive(t, m.MemoryTotalBytes)
	t.Logf("metrics: %+v", m)
	require.LessOrEqual(t, m.MemoryUsedBytes, m.MemoryTotalBytes)
	require.Positive(t, m.UptimeSeconds)
	require.NotNil(t, m.LoggedInUsers)
}

// TestCollectWindowsSoftware writes Uninstall entries where installers do
// (machine-wide in both registry views, and per user) and finds them in
// the software list.
func TestCollectWindowsSoftware(t *testing.T) {
	t.Parallel()
	suffix := strings.ToUpper(strings.ReplaceAll(t.Name(), "/", "")) + "-" + strconv.Itoa(os.Getpid())
	write := func(root registry.Key, path string, view uint32, values map[string]any) {
		t.Helper()
		k, _, err := registry.CreateKey(root, path, registry.ALL_ACCESS|view)
		require.NoError(t, err, path)
		defer k.Close()
		for n, v := range values {
			switch v := v.(type) {
			case string:
				require.NoError(t, k.SetStringValue(n, v))
			case uint32:
				require.NoError(t, k.SetDWordValue(n, v))
			}
		}
		t.Cleanup(func() {
			// Through the parent opened in the same view: a path from
			// the root would name the 64-bit key.
			if p, err := registry.OpenKey(root, path[:strings.LastIndex(path, `\`)], registry.ALL_ACCESS|view); err == nil {
				_ = registry.DeleteKey(p, path[strings.LastIndex(path, `\`)+1:])
				p.Close()
			}
		})
	}
	write(registry.LOCAL_MACHINE, uninstallPath+`\Cairn64-`+suffix, registry.WOW64_64KEY, map[string]any{
		"DisplayName": "Cairn Test 64 " + suffix, "DisplayVersion": "1.2.3", "Publisher": "Cairn", "InstallDate": "20240305",
		"EstimatedSize": uint32(2048), "WindowsInstaller": uint32(1)})
	write(registry.LOCAL_MACHINE, uninstallPath+`\Cairn32-`+suffix, registry.WOW64_32KEY, map[string]any{
		"DisplayName": "Cairn Test 32 " + suffix, "DisplayVersion": "4.5"})
	write(registry.LOCAL_MACHINE, uninstallPath+`\CairnHidden-`+suffix, registry.WOW64_64KEY, map[string]any{
		"DisplayName": "Cairn Hidden " + suffix, "SystemComponent": uint32(1)})
	write(registry.CURRENT_USER, uninstallPath+`\CairnUser-`+suffix, 0, map[string]any{
		"DisplayName": "Cairn Test User " + suffix, "DisplayVersion": "7"})

	c := New(roles.New(nil), Options{})
	rows, err := c.Software(t.Context())
	require.NoError(t, err)
	var mine []proto.Software
	for _, r := range rows {
		if strings.HasSuffix(r.Name, suffix) {
			mine = append(mine, r)
		}
	}
	for i := range mine {
		mine[i].InstalledAt = nil
	}
	require.Equal(t, []proto.Software{
		{Name: "Cairn Test 32 " + suffix, Version: "4.5", Arch: "x86", Source: "registry"},
		{Name: "Cairn Test 64 " + suffix, Version: "1.2.3", Publisher: "Cairn", Arch: "x86_64", Source: "msi", SizeBytes: 2048 * 1024},
		{Name: "Cairn Test User " + suffix, Version: "7", Source: "registry"},
	}, mine)
}

func TestWindowsIdentity(t *testing.T) {
	t.Parallel()
	var inv proto.Inventory
	require.NoError(t, collectOS(t.Context(), nil, &inv))
	require.Equal(t, inv.OS.Name, OSName(), "enrollment reports the name the inventory does")
	require.NotEqual(t, "windows", OSName())
	require.Equal(t, bootID(), BootID())
}
