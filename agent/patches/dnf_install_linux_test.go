//go:build linux

package patches

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// fakeDnf is a private dnf, rpm and needs-restarting in one directory:
// hello is installed at 1.0-1 with an upgrade to 1.1-1 until an upgrade
// ran; "gone" is not installed; an upgrade fails like a dnf transaction
// check when fail is set; needs-restarting says a reboot is needed once an
// upgrade ran.
type fakeDnf struct {
	dir, args string
}

func newFakeDnf(t *testing.T, fail bool) fakeDnf {
	t.Helper()
	dir := t.TempDir()
	f := fakeDnf{dir: dir, args: filepath.Join(dir, "args")}
	marker := filepath.Join(dir, "upgraded")
	upgrade := `touch ` + marker + `
echo "Upgraded: hello-1.1-1.x86_64"
exit 0`
	if fail {
		upgrade = `echo "Running transaction check"
echo "Error: Transaction test error:" >&2
echo "  file /usr/bin/hello from install of hello-1.1-1.x86_64 conflicts with file from package hello-tools-1.0-1.x86_64" >&2
exit 1`
	}
	files := map[string]string{
		"dnf": `#!/bin/sh
case " $* " in
*" check-update "*)
  [ -e ` + marker + ` ] && exit 0
  echo "hello.x86_64   1.1-1   updates"
  exit 100 ;;
*" upgrade "*)
  printf '%s\n' "$@" > ` + f.args + `
  ` + upgrade + ` ;;
esac
echo "unexpected dnf $*" >&2
exit 2
`,
		"rpm": `#!/bin/sh
for last; do :; done
case "$last" in
hello) if [ -e ` + marker + ` ]; then echo "(none):1.1-1"; else echo "(none):1.0-1"; fi ;;
*) echo "package $last is not installed"; exit 1 ;;
esac
`,
		"needs-restarting": `#!/bin/sh
[ "$1" = "-r" ] || exit 2
if [ -e ` + marker + ` ]; then echo "Reboot is required to fully utilize these updates."; exit 1; fi
echo "No core libraries or services have been updated since boot-up."
exit 0
`,
	}
	for name, body := range files {
		writeExecutable(t, filepath.Join(dir, name), body)
	}
	return f
}

// writeExecutable writes a script the test then runs. Written in this
// process, it could be "text file busy" at exec: a parallel test's fork
// inherits the write descriptor until that child execs. install(1)
// writes it in a process of its own that forks nothing, so no descriptor
// is left open for writing once it exits.
func writeExecutable(t *testing.T, path, body string) {
	t.Helper()
	src := path + ".src"
	require.NoError(t, os.WriteFile(src, []byte(body), 0o600))
	out, err := exec.Command("install", "-m", "0700", src, path).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.NoError(t, os.Remove(src))
}

func (f fakeDnf) installer() *DnfInstaller {
	return &DnfInstaller{Dnf: filepath.Join(f.dir, "dnf"), Rpm: filepath.Join(f.dir, "rpm"),
		NeedsRestarting: filepath.Join(f.dir, "needs-restarting")}
}

func (f fakeDnf) upgradeRan(t *testing.T) bool {
	t.Helper()
	_, err := os.Stat(f.args)
	return err == nil
}

// dnf upgrade of the selected package: installed (with the versions
// before and after, and the reboot needs-restarting -r asks for), already
// installed without running an upgrade, not installed, and a failure with
// dnf's exit code, its first error line and the end of its output.
func TestDnfInstall(t *testing.T) {
	t.Parallel()
	t.Run("upgraded", func(t *testing.T) {
		t.Parallel()
		f := newFakeDnf(t, false)
		var got []string
		res, err := f.installer().Install(t.Context(), proto.PatchInstallRequest{InstallID: "i1", Package: "hello", Version: "1.1-1"},
			func(p Progress) { got = append(got, p.Phase+" "+p.Message) })
		require.NoError(t, err)
		require.Equal(t, proto.PatchInstallDone, res.Status, res.Message)
		require.Equal(t, 0, *res.ExitCode)
		require.Equal(t, "hello 1.0-1 -> 1.1-1", res.Message)
		require.True(t, res.RebootRequired, "needs-restarting -r exit 1")
		args, err := os.ReadFile(f.args)
		require.NoError(t, err)
		require.Equal(t, DnfInstallArgs("hello"), strings.Split(strings.TrimSpace(string(args)), "\n"))
		require.Equal(t, []string{"starting checking hello", "installing dnf upgrade hello", "finished hello 1.1-1"}, got)
	})
	t.Run("already installed", func(t *testing.T) {
		t.Parallel()
		f := newFakeDnf(t, false)
		require.NoError(t, os.WriteFile(filepath.Join(f.dir, "upgraded"), nil, 0o600))
		res, err := f.installer().Install(t.Context(), proto.PatchInstallRequest{InstallID: "i1", Package: "hello"}, func(Progress) {})
		require.NoError(t, err)
		require.Equal(t, proto.PatchInstallAlready, res.Status)
		require.True(t, res.AlreadyInstalled)
		require.True(t, res.RebootRequired)
		require.False(t, f.upgradeRan(t))
	})
	t.Run("not installed", func(t *testing.T) {
		t.Parallel()
		f := newFakeDnf(t, false)
		res, err := f.installer().Install(t.Context(), proto.PatchInstallRequest{InstallID: "i1", Package: "gone"}, func(Progress) {})
		require.NoError(t, err)
		require.Equal(t, proto.PatchInstallFailed, res.Status)
		require.Equal(t, "gone is not installed", res.Message)
		require.False(t, f.upgradeRan(t))
	})
	t.Run("failed", func(t *testing.T) {
		t.Parallel()
		f := newFakeDnf(t, true)
		res, err := f.installer().Install(t.Context(), proto.PatchInstallRequest{InstallID: "i1", Package: "hello"}, func(Progress) {})
		require.NoError(t, err)
		require.Equal(t, proto.PatchInstallFailed, res.Status)
		require.Equal(t, 1, *res.ExitCode)
		require.Equal(t, "dnf exited 1: Error: Transaction test error:", res.Message)
		require.Contains(t, res.LogExcerpt, "conflicts with file from package hello-tools")
		require.Contains(t, res.LogExcerpt, "Running transaction check")
		require.False(t, res.RebootRequired)
	})
}

// The installer DetectInstaller returns (zero fields) finds dnf, rpm and
// needs-restarting on PATH. Not parallel: it sets PATH.
func TestDnfInstallUsesTheToolsOnPath(t *testing.T) {
	f := newFakeDnf(t, false)
	t.Setenv("PATH", f.dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	res, err := (&DnfInstaller{}).Install(t.Context(), proto.PatchInstallRequest{InstallID: "i1", Package: "hello"}, func(Progress) {})
	require.NoError(t, err)
	require.Equal(t, proto.PatchInstallDone, res.Status, res.Message)
	require.Equal(t, "hello 1.0-1 -> 1.1-1", res.Message, "rpm on PATH gives the versions")
	require.True(t, res.RebootRequired)
	require.True(t, f.upgradeRan(t))
}
