package service

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/mgr"

	"github.com/cairn-rmm/cairn/agent"
)

// These tests run as a Windows binary (under Wine in make test-wine)
// against the real service control manager. The test binary is also the
// service they install: started by the SCM as "<exe> run --service
// --config <path>", TestMain hands it to RunUnderSCM with a stand-in for
// the agent that logs a line and waits to be stopped.

func TestMain(m *testing.M) {
	if len(os.Args) >= 5 && os.Args[1] == "run" && os.Args[2] == ServiceFlag && os.Args[3] == "--config" {
		err := RunUnderSCM(context.Background(), os.Args[4], func(ctx context.Context, logw io.Writer) error {
			fmt.Fprintf(logw, "stand-in agent running with %q\n", os.Args[1:])
			<-ctx.Done()
			fmt.Fprintln(logw, "stand-in agent stopped")
			return nil
		})
		if err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// tempDir is t.TempDir without its RemoveAll, which fails under Wine
// (Go's RemoveAll on Windows needs FileDispositionInformationEx, which
// Wine 8 lacks); files are removed one by one instead.
func tempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "cairn-service-test-")
	require.NoError(t, err)
	t.Cleanup(func() {
		var paths []string
		_ = filepath.WalkDir(dir, func(p string, _ os.DirEntry, _ error) error { paths = append(paths, p); return nil })
		slices.Reverse(paths)
		for _, p := range paths {
			_ = os.Remove(p)
		}
	})
	return dir
}

func enrolledConfig(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "Cairn", agent.FileName)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	c := agent.Default()
	c.ServerURL = "https://cairn.example.test"
	require.NoError(t, agent.Create(path, "enroll", c))
	return path
}

// scmTests serialises the tests that talk to the service control manager.
// Wine's SCM loses a process's handles when two of its threads call it at
// once ("Invalid handle" from CreateService, StartService or OpenService,
// then "Duplicate service name" in every later run from the service the
// failed one left behind): about half of the runs with these two tests in
// parallel under Wine 8, none of 27 in a row with them one after the
// other. The other tests in the package still run in parallel.
var scmTests sync.Mutex

func TestWindowsInstallUninstall(t *testing.T) {
	t.Parallel()
	scmTests.Lock()
	defer scmTests.Unlock()
	dir := tempDir(t)
	cfgPath := enrolledConfig(t, dir)
	exe, err := os.Executable()
	require.NoError(t, err)
	// Wine numbers processes the same way on every run: the PID alone
	// would meet a service a killed run left behind.
	name := fmt.Sprintf("CairnInstallTest%d-%d", os.Getpid(), time.Now().UnixNano())
	m, err := mgr.Connect()
	require.NoError(t, err)
	// Registered first, so it runs after the clean-up below.
	t.Cleanup(func() { _ = m.Disconnect() })
	removeLeftoverTestServices(t, m)
	t.Cleanup(func() {
		if s, err := m.OpenService(name); err == nil {
			_, _ = s.Control(svc.Stop)
			_ = s.Delete()
			_ = s.Close()
		}
	})

	var out bytes.Buffer
	res, err := Install(t.Context(), InstallOptions{ConfigPath: cfgPath, Binary: exe, Hostname: "pc-1", Out: &out, serviceName: name})
	require.NoError(t, err, out.String())
	require.True(t, res.Created)
	require.True(t, res.Started)
	require.False(t, res.Copied)
	require.Equal(t, exe, res.Binary)

	s, err := m.OpenService(name)
	require.NoError(t, err)
	cfg, err := s.Config()
	if err != nil {
		// Wine's QueryServiceConfig2 lacks some levels mgr asks for; the
		// basic configuration is read directly then.
		cfg = basicConfig(t, s)
	}
	require.Equal(t, res.Command, cfg.BinaryPathName)
	require.Equal(t, commandLine(exe, []string{"run", "--service", "--config", cfgPath, "--hostname", "pc-1"}), cfg.BinaryPathName)
	require.Equal(t, uint32(mgr.StartAutomatic), cfg.StartType)
	require.Equal(t, ServiceDisplayName, cfg.DisplayName)
	st, err := s.Query()
	require.NoError(t, err)
	require.Equal(t, svc.Running, st.State)
	// An open handle keeps a deleted service listed (marked for deletion).
	require.NoError(t, s.Close())

	// The stand-in runs under the SCM and logs to the log directory.
	logFile := filepath.Join(LogDir(cfgPath), "agent-"+time.Now().Format("2006-01-02")+".log")
	require.Contains(t, readFile(t, logFile), `stand-in agent running with ["run" "--service" "--config"`)

	// The ACL itself is checked by TestConfigDirACL: Wine accepts
	// SetNamedSecurityInfo but does not keep file security descriptors
	// on this machine's file system, so what is stored is only verified
	// on real Windows (docs/agent.md).

	// A reinstall stops the running service, reconfigures and restarts it.
	res, err = Install(t.Context(), InstallOptions{ConfigPath: cfgPath, Binary: exe, Out: &out, serviceName: name})
	require.NoError(t, err, out.String())
	require.False(t, res.Created)
	require.True(t, res.Started)
	require.Contains(t, readFile(t, logFile), "stand-in agent stopped", "the first run was stopped through the SCM")

	noBinary := filepath.Join(dir, "not-installed", "cairn-agent.exe")
	ures, err := Uninstall(t.Context(), UninstallOptions{ConfigPath: cfgPath, Purge: true, BinaryDest: noBinary, Out: &out, serviceName: name})
	require.NoError(t, err, out.String())
	require.True(t, ures.Removed)
	require.True(t, ures.Stopped)
	_, err = m.OpenService(name)
	require.ErrorIs(t, err, windows.ERROR_SERVICE_DOES_NOT_EXIST)
	require.NoFileExists(t, cfgPath)
	require.NoDirExists(t, filepath.Dir(cfgPath), "the emptied config directory goes too")
	require.FileExists(t, exe, "a --binary elsewhere is never removed")

	ures, err = Uninstall(t.Context(), UninstallOptions{ConfigPath: cfgPath, Out: &out, serviceName: name})
	require.NoError(t, err)
	require.False(t, ures.Removed, "nothing left to remove")
}

// removeLeftoverTestServices deletes the services an earlier, killed run
// left in a reused prefix: they hold the display name every install sets,
// so CreateService would refuse with "Duplicate service name" forever.
func removeLeftoverTestServices(t *testing.T, m *mgr.Mgr) {
	t.Helper()
	names, err := m.ListServices()
	require.NoError(t, err)
	for _, n := range names {
		if !strings.HasPrefix(n, "CairnInstallTest") {
			continue
		}
		if s, err := m.OpenService(n); err == nil {
			_, _ = s.Control(svc.Stop)
			_ = s.Delete()
			_ = s.Close()
		}
	}
}

func TestWindowsInstallRefusals(t *testing.T) {
	t.Parallel()
	scmTests.Lock()
	defer scmTests.Unlock()
	dir := tempDir(t)
	_, err := Install(t.Context(), InstallOptions{ConfigPath: filepath.Join(dir, "agent.json"), serviceName: "CairnNeverCreated"})
	require.ErrorContains(t, err, "enroll the agent first")

	cfgPath := enrolledConfig(t, dir)
	notExe := filepath.Join(dir, "agent.bin")
	require.NoError(t, os.WriteFile(notExe, []byte("x"), 0o644))
	_, err = Install(t.Context(), InstallOptions{ConfigPath: cfgPath, Binary: notExe, serviceName: "CairnNeverCreated"})
	require.ErrorContains(t, err, "is not an executable file")
	m, err := mgr.Connect()
	require.NoError(t, err)
	defer m.Disconnect()
	_, err = m.OpenService("CairnNeverCreated")
	require.ErrorIs(t, err, windows.ERROR_SERVICE_DOES_NOT_EXIST)
}

// TestConfigDirACL checks the descriptor SecureConfigDir applies, as the
// Windows security API parses it: a protected DACL (nothing inherited
// from %ProgramData%, where every user may read) of exactly two entries,
// full control for SYSTEM and for Administrators, inherited by files and
// directories created inside.
func TestConfigDirACL(t *testing.T) {
	t.Parallel()
	sd, err := windows.SecurityDescriptorFromString(configDirSDDL)
	require.NoError(t, err)
	control, _, err := sd.Control()
	require.NoError(t, err)
	require.NotZero(t, control&windows.SE_DACL_PROTECTED)
	dacl, _, err := sd.DACL()
	require.NoError(t, err)
	require.Equal(t, uint16(2), dacl.AceCount)
	system, err := windows.CreateWellKnownSid(windows.WinLocalSystemSid)
	require.NoError(t, err)
	admins, err := windows.CreateWellKnownSid(windows.WinBuiltinAdministratorsSid)
	require.NoError(t, err)
	for i, want := range []*windows.SID{system, admins} {
		var ace *windows.ACCESS_ALLOWED_ACE
		require.NoError(t, windows.GetAce(dacl, uint32(i), &ace))
		require.Equal(t, uint8(windows.ACCESS_ALLOWED_ACE_TYPE), ace.Header.AceType)
		require.Equal(t, uint8(windows.OBJECT_INHERIT_ACE|windows.CONTAINER_INHERIT_ACE), ace.Header.AceFlags)
		require.Equal(t, windows.ACCESS_MASK(0x1f01ff), ace.Mask, "FILE_ALL_ACCESS")
		require.True(t, want.Equals((*windows.SID)(unsafe.Pointer(&ace.SidStart))), "entry %d", i)
	}
	// And it applies to a directory without error.
	require.NoError(t, SecureConfigDir(tempDir(t)))
}

// TestWindowsPaths: agent.json under ProgramData and the binary under
// Program Files, as the shell names them (C:\ProgramData and
// C:\Program Files on a default installation, Wine's included).
func TestWindowsPaths(t *testing.T) {
	t.Parallel()
	pd, err := windows.KnownFolderPath(windows.FOLDERID_ProgramData, 0)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(pd, "Cairn", "agent.json"), DefaultConfigPath())
	require.Equal(t, `C:\ProgramData\Cairn\agent.json`, DefaultConfigPath())
	require.Equal(t, `C:\Program Files\Cairn\cairn-agent.exe`, DefaultWindowsBinary())
	require.Equal(t, `C:\ProgramData\Cairn\logs`, LogDir(DefaultConfigPath()))
	require.Equal(t, `C:\Somewhere Else\env`, knownFolder(&windows.KNOWNFOLDERID{Data1: 1}, "CAIRN_TEST_UNSET_FOLDER", `C:\Somewhere Else\env`),
		"an unknown folder and no variable fall back to the default")
}

func TestPruneLogs(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	now := time.Now()
	for name, age := range map[string]time.Duration{"agent-old.log": 20 * 24 * time.Hour, "agent-new.log": time.Hour, "other.log": 30 * 24 * time.Hour} {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, nil, 0o600))
		require.NoError(t, os.Chtimes(p, now.Add(-age), now.Add(-age)))
	}
	pruneLogs(dir, 0, now)
	require.FileExists(t, filepath.Join(dir, "agent-old.log"), "0 keeps everything")
	pruneLogs(dir, 14, now)
	require.NoFileExists(t, filepath.Join(dir, "agent-old.log"))
	require.FileExists(t, filepath.Join(dir, "agent-new.log"))
	require.FileExists(t, filepath.Join(dir, "other.log"), "only the agent's own files")
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}

// basicConfig reads QUERY_SERVICE_CONFIG alone.
func basicConfig(t *testing.T, s *mgr.Service) mgr.Config {
	t.Helper()
	n := uint32(8 << 10)
	buf := make([]byte, n)
	c := (*windows.QUERY_SERVICE_CONFIG)(unsafe.Pointer(&buf[0]))
	require.NoError(t, windows.QueryServiceConfig(s.Handle, c, n, &n))
	return mgr.Config{StartType: c.StartType, BinaryPathName: windows.UTF16PtrToString(c.BinaryPathName), DisplayName: windows.UTF16PtrToString(c.DisplayName)}
}
