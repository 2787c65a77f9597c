package inventory

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/roles"
)

// These tests collect the inventory of the machine running them and check
// it against what other tools on the same machine say.

type machine struct {
	c   *Collector
	tr  *roles.Tracker
	inv proto.Inventory
}

func setup(t *testing.T) machine {
	t.Helper()
	tr := roles.New(nil)
	c := New(tr, Options{})
	return machine{c: c, tr: tr, inv: c.Collect(t.Context())}
}

// sh runs a shell command and returns its trimmed output.
func sh(t *testing.T, script string) string {
	t.Helper()
	out, err := exec.Command("sh", "-c", script).Output()
	require.NoError(t, err, script)
	return strings.TrimSpace(string(out))
}

func TestCollectThisMachine(t *testing.T) {
	t.Parallel()
	m := setup(t)
	inv := m.inv

	t.Run("os", func(t *testing.T) {
		require.NotNil(t, inv.OS)
		require.Equal(t, sh(t, `. /etc/os-release && printf %s "$PRETTY_NAME"`), inv.OS.Name)
		require.Equal(t, sh(t, "uname -r"), inv.OS.KernelVersion)
		require.Equal(t, sh(t, "uname -m"), inv.OS.Arch)
		require.Equal(t, "linux", inv.OS.Family)
	})

	t.Run("hardware", func(t *testing.T) {
		require.NotNil(t, inv.Hardware)
		require.NotZero(t, inv.Hardware.MemoryTotalBytes)
		require.Positive(t, inv.Hardware.CPUThreads)
		require.NotEmpty(t, inv.Hardware.Disks)
		sized := slices.ContainsFunc(inv.Hardware.Disks, func(d proto.Disk) bool { return d.SizeBytes > 0 })
		require.True(t, sized, "some disk has a size: %+v", inv.Hardware.Disks)
		for _, d := range inv.Hardware.Disks {
			if d.Mountpoint != "" {
				require.LessOrEqual(t, d.UsedBytes, d.SizeBytes, d.Name)
			}
		}
	})

	t.Run("network", func(t *testing.T) {
		i := slices.IndexFunc(inv.Network, func(n proto.NetIface) bool { return n.Name == "lo" })
		require.GreaterOrEqual(t, i, 0, "loopback listed: %+v", inv.Network)
		lo := inv.Network[i]
		require.True(t, lo.Loopback)
		require.True(t, lo.Up)
		require.Contains(t, lo.Addresses, "127.0.0.1/8")
	})

	t.Run("uptime", func(t *testing.T) {
		require.NotNil(t, inv.Uptime)
		require.Positive(t, inv.Uptime.UptimeSeconds)
		require.True(t, inv.Uptime.BootTime.Before(time.Now()))
		require.Equal(t, sh(t, "cat /proc/sys/kernel/random/boot_id"), inv.Uptime.BootID)
	})

	t.Run("sessions", func(t *testing.T) {
		require.NotNil(t, inv.Sessions, "collected, even when nobody is logged in")
	})

	t.Run("software", func(t *testing.T) {
		var want string
		if isDpkgSystem() {
			want = sh(t, "dpkg-query -W -f '${Version}' bash")
		} else {
			want = sh(t, "rpm -q --qf '%{VERSION}-%{RELEASE}' bash")
		}
		i := slices.IndexFunc(inv.Software, func(s proto.Software) bool { return s.Name == "bash" })
		require.GreaterOrEqual(t, i, 0, "bash is installed")
		require.Equal(t, want, inv.Software[i].Version)
	})

	t.Run("processes", func(t *testing.T) {
		i := slices.IndexFunc(inv.Processes, func(p proto.Process) bool { return p.PID == os.Getpid() })
		require.GreaterOrEqual(t, i, 0, "the test's own process is listed")
		self := inv.Processes[i]
		require.Equal(t, os.Getppid(), self.PPID)
		require.Equal(t, sh(t, "id -un"), self.User)
		require.Contains(t, self.Command, os.Args[0])
		require.NotZero(t, self.RSSBytes)
		require.True(t, self.StartedAt.Before(time.Now()))
	})

	t.Run("services", func(t *testing.T) {
		h := health(t, m.tr, roles.ServiceManagement)
		if systemdBooted() {
			require.Equal(t, proto.RoleHealthy, h.Observed, h.LastError)
			require.NotEmpty(t, inv.Services)
			return
		}
		// Without systemd the init scripts are the services.
		var scripts []string
		entries, _ := os.ReadDir(m.c.InitDir())
		for _, e := range entries {
			if IsInitScript(m.c.InitDir(), e.Name()) {
				scripts = append(scripts, e.Name())
			}
		}
		if len(scripts) > 0 {
			require.Equal(t, proto.RoleHealthy, h.Observed, h.LastError)
			var names []string
			for _, s := range inv.Services {
				names = append(names, s.Name)
			}
			require.Equal(t, scripts, names)
			return
		}
		require.Nil(t, inv.Services, "not collected, not empty")
		require.Equal(t, proto.RoleUnhealthy, h.Observed)
		require.Equal(t, "systemd is not running (PID 1 is "+sh(t, "cat /proc/1/comm")+") and "+m.c.InitDir()+
			" holds no init scripts; services not collected", h.LastError)
		require.Zero(t, h.RecoveryAttempts)
	})

	t.Run("patches", func(t *testing.T) {
		h := health(t, m.tr, roles.PatchManagement)
		require.Equal(t, proto.RoleHealthy, h.Observed, h.LastError)
		require.NotNil(t, inv.Patches)
		installed := map[string]string{}
		if isDpkgSystem() && len(inv.Patches) > 0 {
			// One dpkg-query for all. apt names a package of a foreign
			// architecture "name:arch" and any other by its name.
			native := sh(t, "dpkg --print-architecture")
			script := "dpkg-query -W -f '${Package}\\t${Architecture}\\t${Version}\\n'"
			for _, p := range inv.Patches {
				if p.State == proto.PatchPending {
					script += " '" + p.Package + "'"
				}
			}
			for line := range strings.Lines(sh(t, script)) {
				f := strings.Split(strings.TrimSpace(line), "\t")
				require.Len(t, f, 3, line)
				if f[1] != native && f[1] != "all" {
					f[0] += ":" + f[1]
				}
				installed[f[0]] = f[2]
			}
		}
		if isDpkgSystem() {
			require.NotNil(t, inv.PatchStatus)
			require.Equal(t, proto.PatchProviderApt, inv.PatchStatus.Provider)
		}
		for _, p := range inv.Patches {
			require.Empty(t, p.KB)
			if p.State == proto.PatchInstalled {
				// The package manager's history: an upgrade it logged.
				require.Equal(t, p.Package+" "+p.InstalledVersion, p.Title)
				require.Contains(t, []string{proto.PatchSourceAptHistory, proto.PatchSourceDnfHistory}, p.Source)
				continue
			}
			require.Equal(t, proto.PatchPending, p.State)
			require.Equal(t, p.Package+" "+p.CandidateVersion, p.Title)
			if isDpkgSystem() {
				require.Equal(t, SourceApt, p.Source)
				require.Equal(t, installed[p.Package], p.InstalledVersion, "%s: installed version as dpkg says", p.Package)
			}
		}
	})

	t.Run("hash", func(t *testing.T) {
		read := m.c.patches.at
		again := m.c.Collect(t.Context())
		require.Equal(t, read, m.c.patches.at, "an unchanged package database is not read again")
		// Other processes on a shared machine may log in, start services,
		// add interfaces or fill disks between the two collections: those
		// parts are set aside, so the check is that collecting itself adds
		// nothing volatile to the hash.
		settled := func(i proto.Inventory) proto.Inventory {
			i.Sessions, i.Services, i.Network = nil, nil, nil
			if i.Hardware != nil {
				hw := *i.Hardware
				hw.Disks = nil
				i.Hardware = &hw
			}
			return i
		}
		require.Equal(t, Hash(settled(inv)), Hash(settled(again)), "collecting twice gives the same hash")

		changed := again
		changed.Software = append(slices.Clone(again.Software), proto.Software{Name: "zz-new", Version: "1", Source: "dpkg"})
		require.NotEqual(t, Hash(again), Hash(changed), "installing software changes the hash")
	})

	t.Run("roles", func(t *testing.T) {
		snap := m.tr.Snapshot()
		keys := make([]string, len(snap))
		for i, h := range snap {
			keys[i] = h.Key
		}
		require.Equal(t, []string{"system:current_user", "system:device_audit", "system:patch_management",
			"system:process_management", "system:service_management", "system:software_management"}, keys)
		for _, r := range []string{roles.DeviceAudit, roles.CurrentUser, roles.SoftwareManagement, roles.ProcessManagement} {
			h := health(t, m.tr, r)
			require.Equal(t, proto.RoleHealthy, h.Observed, "%s: %s", r, h.LastError)
		}
	})
}

func TestMetricsOfThisMachine(t *testing.T) {
	t.Parallel()
	c := New(roles.New(nil), Options{})
	for range 2 {
		m, err := c.Metrics(t.Context())
		require.NoError(t, err)
		require.GreaterOrEqual(t, m.CPUPercent, 0.0)
		require.LessOrEqual(t, m.CPUPercent, 100.0)
		require.NotZero(t, m.MemoryTotalBytes)
		require.NotZero(t, m.MemoryUsedBytes)
		require.LessOrEqual(t, m.MemoryUsedBytes, m.MemoryTotalBytes)
		require.Positive(t, m.UptimeSeconds)
		require.NotNil(t, m.LoggedInUsers)
		require.True(t, slices.IsSorted(m.LoggedInUsers))
	}
}

func TestFingerprintOfThisMachine(t *testing.T) {
	t.Parallel()
	a, err := Fingerprint()
	require.NoError(t, err)
	b, err := Fingerprint()
	require.NoError(t, err)
	require.Equal(t, a, b, "stable across calls")
	require.Len(t, a, 64)
	want, err := fingerprintOf([][2]string{
		{"machine-id", sh(t, "cat /etc/machine-id")},
		{"product-uuid", strings.ToLower(readTrim("/sys/class/dmi/id/product_uuid"))},
	})
	require.NoError(t, err)
	require.Equal(t, want, a)
}
