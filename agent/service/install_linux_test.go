package service

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent"
)

// host is a throw-away Linux host layout: an enrolled config, a unit
// directory, a bin directory, and a systemctl stand-in that records its
// calls (run through /bin/sh, so no freshly written file is executed).
type host struct {
	dir        string
	configPath string
	unitDir    string
	binaryDest string
	systemdDir string // exists only when the test says systemd runs
	calls      string // systemctl's call log
	fragment   string // what "systemctl show -p FragmentPath" prints
	fail       string // present: systemctl fails
	out        *bytes.Buffer
}

func setup(t *testing.T, systemd bool) *host {
	t.Helper()
	dir := t.TempDir()
	h := &host{
		dir:        dir,
		configPath: filepath.Join(dir, "etc", "cairn-agent", agent.FileName),
		unitDir:    filepath.Join(dir, "units"),
		binaryDest: filepath.Join(dir, "bin", "cairn-agent"),
		systemdDir: filepath.Join(dir, "run-systemd"),
		calls:      filepath.Join(dir, "calls"),
		fragment:   filepath.Join(dir, "fragment"),
		fail:       filepath.Join(dir, "fail"),
		out:        &bytes.Buffer{},
	}
	require.NoError(t, os.MkdirAll(filepath.Dir(h.configPath), 0o700))
	c := agent.Default()
	c.ServerURL = "https://engine.example.test"
	require.NoError(t, agent.Create(h.configPath, "enroll", c))
	if systemd {
		require.NoError(t, os.Mkdir(h.systemdDir, 0o755))
	}
	script := `echo "$*" >> "` + h.calls + `"
if [ "$1" = show ]; then cat "` + h.fragment + `" 2>/dev/null; fi
if [ -e "` + h.fail + `" ]; then echo "Job for cairn-agent.service failed" >&2; exit 1; fi
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "systemctl.sh"), []byte(script), 0o644))
	return h
}

func (h *host) install(o InstallOptions) (InstallResult, error) {
	o.ConfigPath, o.UnitDir, o.BinaryDest, o.Out = h.configPath, h.unitDir, h.binaryDest, h.out
	o.systemdDir, o.systemctl = h.systemdDir, []string{"/bin/sh", filepath.Join(h.dir, "systemctl.sh")}
	return Install(context.Background(), o)
}

func (h *host) uninstall(purge bool) (UninstallResult, error) {
	return Uninstall(context.Background(), UninstallOptions{
		ConfigPath: h.configPath, UnitDir: h.unitDir, BinaryDest: h.binaryDest, Purge: purge, Out: h.out,
		systemdDir: h.systemdDir, systemctl: []string{"/bin/sh", filepath.Join(h.dir, "systemctl.sh")},
	})
}

func (h *host) systemctlCalls(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(h.calls)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func requireMode(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, mode, info.Mode().Perm(), path)
}

// Without systemd the files are written, nothing is started, and the
// output says exactly what was written and how to start the agent.
func TestInstallWithoutSystemd(t *testing.T) {
	t.Parallel()
	h := setup(t, false)
	res, err := h.install(InstallOptions{})
	require.NoError(t, err)

	require.True(t, res.Copied)
	require.Equal(t, h.binaryDest, res.Binary)
	requireMode(t, h.binaryDest, 0o755)
	self, err := os.Executable()
	require.NoError(t, err)
	want, err := os.ReadFile(self)
	require.NoError(t, err)
	got, err := os.ReadFile(h.binaryDest)
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, got), "the running binary was copied")

	unitPath := filepath.Join(h.unitDir, UnitName)
	require.Equal(t, unitPath, res.UnitPath)
	requireMode(t, unitPath, 0o644)
	unit, err := os.ReadFile(unitPath)
	require.NoError(t, err)
	require.Equal(t, res.Unit, string(unit))
	require.Contains(t, string(unit), "ExecStart="+h.binaryDest+" run --config "+h.configPath+"\n")

	require.False(t, res.Systemd)
	require.False(t, res.Started)
	require.Empty(t, h.systemctlCalls(t))
	out := h.out.String()
	require.Contains(t, out, "installed binary "+h.binaryDest+"\n")
	require.Contains(t, out, "wrote "+unitPath+" (mode 0644)\n")
	require.Contains(t, out, "systemd is not running on this host")
	require.Contains(t, out, "Start the agent by hand (as root): "+h.binaryDest+" run --config "+h.configPath+"\n")
	require.Contains(t, out, string(unit), "the unit is printed")
	entries, err := os.ReadDir(h.unitDir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temp file is left behind")
}

func TestInstallWithSystemd(t *testing.T) {
	t.Parallel()
	h := setup(t, true)
	res, err := h.install(InstallOptions{})
	require.NoError(t, err)
	require.True(t, res.Systemd)
	require.True(t, res.Started)
	require.Equal(t, []string{"daemon-reload", "enable cairn-agent.service", "restart cairn-agent.service"}, h.systemctlCalls(t))
	require.Contains(t, h.out.String(), "enabled and started cairn-agent.service")
}

func TestInstallNoStart(t *testing.T) {
	t.Parallel()
	h := setup(t, true)
	bin := filepath.Join(h.dir, "opt", "cairn-agent")
	require.NoError(t, os.MkdirAll(filepath.Dir(bin), 0o755))
	require.NoError(t, os.WriteFile(bin, []byte("binary"), 0o755))
	res, err := h.install(InstallOptions{Binary: bin, NoStart: true})
	require.NoError(t, err)
	require.False(t, res.Copied)
	require.Equal(t, bin, res.Binary)
	require.NoFileExists(t, h.binaryDest, "--binary is used where it is")
	require.Contains(t, res.Unit, "ExecStart="+bin+" run --config ")
	require.False(t, res.Started)
	require.Empty(t, h.systemctlCalls(t), "--no-start leaves systemd alone")
	require.Contains(t, h.out.String(), "using binary "+bin+"\n")
	require.Contains(t, h.out.String(), "not started (--no-start)")
}

// Installing from the installed binary does not copy it onto itself.
func TestInstallFromInstalledBinary(t *testing.T) {
	t.Parallel()
	h := setup(t, false)
	self, err := os.Executable()
	require.NoError(t, err)
	h.binaryDest = self
	res, err := h.install(InstallOptions{NoStart: true})
	require.NoError(t, err)
	require.False(t, res.Copied)
	require.Equal(t, self, res.Binary)
}

func TestInstallRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, h *host) InstallOptions
		want    string
	}{
		{"no config", func(t *testing.T, h *host) InstallOptions {
			require.NoError(t, os.Remove(h.configPath))
			return InstallOptions{}
		}, "does not exist: enroll the agent first"},
		{"config without server_url", func(t *testing.T, h *host) InstallOptions {
			_, err := agent.Update(h.configPath, "test", func(c *agent.Config) error { c.ServerURL = ""; return nil })
			require.NoError(t, err)
			return InstallOptions{}
		}, "has no server_url"},
		{"unreadable config", func(t *testing.T, h *host) InstallOptions {
			require.NoError(t, os.WriteFile(h.configPath, []byte("{"), 0o600))
			return InstallOptions{}
		}, "not valid JSON"},
		{"missing --binary", func(t *testing.T, h *host) InstallOptions {
			return InstallOptions{Binary: filepath.Join(h.dir, "nope")}
		}, "--binary: stat"},
		{"--binary not executable", func(t *testing.T, h *host) InstallOptions {
			p := filepath.Join(h.dir, "plain")
			require.NoError(t, os.WriteFile(p, nil, 0o644))
			return InstallOptions{Binary: p}
		}, "is not an executable file"},
		{"systemctl fails", func(t *testing.T, h *host) InstallOptions {
			require.NoError(t, os.WriteFile(h.fail, nil, 0o644))
			return InstallOptions{}
		}, "systemctl daemon-reload: exit status 1: Job for cairn-agent.service failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := setup(t, true)
			_, err := h.install(tc.prepare(t, h))
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestUninstall(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		systemd     bool
		loadedHere  bool // systemd loaded the unit from this unit dir
		purge       bool
		wantCalls   []string
		wantStopped bool
	}{
		{name: "no systemd", wantCalls: nil},
		{name: "systemd loaded this unit", systemd: true, loadedHere: true, wantStopped: true,
			wantCalls: []string{"show --property=FragmentPath --value cairn-agent.service", "disable --now cairn-agent.service", "daemon-reload"}},
		{name: "systemd loaded another file", systemd: true,
			wantCalls: []string{"show --property=FragmentPath --value cairn-agent.service"}},
		{name: "purge", purge: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := setup(t, tc.systemd)
			res, err := h.install(InstallOptions{NoStart: true})
			require.NoError(t, err)
			if tc.loadedHere {
				require.NoError(t, os.WriteFile(h.fragment, []byte(res.UnitPath+"\n"), 0o644))
			} else {
				require.NoError(t, os.WriteFile(h.fragment, []byte("/usr/lib/systemd/system/cairn-agent.service\n"), 0o644))
			}
			h.out.Reset()

			ures, err := h.uninstall(tc.purge)
			require.NoError(t, err)
			require.Equal(t, tc.wantCalls, h.systemctlCalls(t))
			require.Equal(t, tc.wantStopped, ures.Stopped)
			require.True(t, ures.UnitRemoved)
			require.NoFileExists(t, res.UnitPath)
			require.Contains(t, h.out.String(), "removed "+res.UnitPath+"\n")
			if !tc.purge {
				require.FileExists(t, h.configPath)
				require.FileExists(t, h.binaryDest)
				require.Contains(t, h.out.String(), "kept "+h.configPath+" (use --purge to remove it)")
				return
			}
			require.NoFileExists(t, h.configPath)
			require.NoFileExists(t, h.configPath+".lock")
			require.NoDirExists(t, filepath.Dir(h.configPath), "the emptied config directory goes too")
			require.NoFileExists(t, h.binaryDest)
			require.ElementsMatch(t, []string{h.configPath, h.configPath + ".lock", filepath.Dir(h.configPath), h.binaryDest}, ures.Purged)

			// A second uninstall has nothing left to do and says so.
			h.out.Reset()
			ures, err = h.uninstall(true)
			require.NoError(t, err)
			require.False(t, ures.UnitRemoved)
			require.Empty(t, ures.Purged)
			require.Contains(t, h.out.String(), "no unit at "+res.UnitPath)
		})
	}
}

// Purge removes only what is the agent's: a config directory holding
// other files stays.
func TestPurgeKeepsForeignFiles(t *testing.T) {
	t.Parallel()
	h := setup(t, false)
	other := filepath.Join(filepath.Dir(h.configPath), "notes.txt")
	require.NoError(t, os.WriteFile(other, []byte("mine"), 0o644))
	_, err := h.uninstall(true)
	require.NoError(t, err)
	require.NoFileExists(t, h.configPath)
	require.FileExists(t, other)
}
