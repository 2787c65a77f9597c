//go:build linux

package patches

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// fakeApt is a private apt-get and dpkg-query: the installed version of
// "hello" is 1.0 until an install ran (then 1.1); an install writes the
// Status-Fd lines apt writes, or fails as apt does when dpkg's lock stays
// taken.
type fakeApt struct {
	dir, aptGet, dpkgQuery, args string
}

func newFakeApt(t *testing.T, fail bool) fakeApt {
	t.Helper()
	dir := t.TempDir()
	f := fakeApt{dir: dir, aptGet: filepath.Join(dir, "apt-get"), dpkgQuery: filepath.Join(dir, "dpkg-query"),
		args: filepath.Join(dir, "args")}
	marker := filepath.Join(dir, "upgraded")
	install := `printf 'dlstatus:1:0:Retrieving file 1 of 1\n' >&3
printf 'dlstatus:1:100:Retrieving file 1 of 1\n' >&3
printf 'pmstatus:hello:20:Preparing hello (amd64)\n' >&3
printf 'pmstatus:hello:60:Unpacking hello (amd64)\n' >&3
printf 'pmstatus:hello:100:Installed hello (amd64)\n' >&3
touch ` + marker + `
echo "Setting up hello (1.1) ..."
exit 0`
	if fail {
		install = `printf 'pmerror:hello:0:dpkg lock held\n' >&3
echo "Waiting for cache lock: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (apt)"
echo "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (apt)" >&2
exit 100`
	}
	script := `#!/bin/sh
for a in "$@"; do [ "$a" = "-s" ] && sim=1; done
if [ -n "$sim" ]; then
  [ -e ` + marker + ` ] || echo "Inst hello [1.0] (1.1 Local:1/stable [amd64])"
  exit 0
fi
printf '%s\n' "$@" > ` + f.args + `
` + install + "\n"
	require.NoError(t, os.WriteFile(f.aptGet, []byte(script), 0o700))
	query := `#!/bin/sh
if [ -e ` + marker + ` ]; then echo -n "installed 1.1"; else echo -n "installed 1.0"; fi
`
	require.NoError(t, os.WriteFile(f.dpkgQuery, []byte(query), 0o700))
	return f
}

func (f fakeApt) installer() *AptInstaller {
	return &AptInstaller{AptGet: f.aptGet, DpkgQuery: f.dpkgQuery, RebootFile: filepath.Join(f.dir, "reboot-required")}
}

func TestAptInstallUpgradesWithLockTimeoutAndStatusFd(t *testing.T) {
	t.Parallel()
	f := newFakeApt(t, false)
	var got []Progress
	res, err := f.installer().Install(t.Context(), proto.PatchInstallRequest{InstallID: "i1", Package: "hello", Version: "1.1"},
		func(p Progress) { got = append(got, p) })
	require.NoError(t, err)
	require.Equal(t, proto.PatchInstallDone, res.Status, res.Message)
	require.False(t, res.AlreadyInstalled)
	require.Equal(t, 0, *res.ExitCode)
	require.Equal(t, "hello 1.0 -> 1.1", res.Message)

	args, err := os.ReadFile(f.args)
	require.NoError(t, err)
	require.Equal(t, AptInstallArgs("hello"), strings.Split(strings.TrimSpace(string(args)), "\n"))
	require.Contains(t, string(args), "--only-upgrade\n")
	require.Contains(t, string(args), "DPkg::Lock::Timeout=300\n")
	require.Contains(t, string(args), "APT::Status-Fd=3\n")

	require.Equal(t, []Progress{
		{Phase: "starting", Message: "checking hello"},
		{Phase: "downloading", Percent: 0, Message: "Retrieving file 1 of 1"},
		{Phase: "downloading", Percent: 100, Message: "Retrieving file 1 of 1"},
		{Phase: "installing", Percent: 20, Message: "Preparing hello (amd64)"},
		{Phase: "installing", Percent: 60, Message: "Unpacking hello (amd64)"},
		{Phase: "installing", Percent: 100, Message: "Installed hello (amd64)"},
		{Phase: "finished", Percent: 100, Message: "hello 1.1"},
	}, got)
}

func TestAptInstallAlreadyInstalled(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		version string
		upgrade bool
	}{
		{"the requested version is installed", "1.0", false},
		{"no upgrade left", "1.1", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeApt(t, false)
			if tc.upgrade {
				// Upgraded by someone else before the lane came to it.
				require.NoError(t, os.WriteFile(filepath.Join(f.dir, "upgraded"), nil, 0o600))
			}
			res, err := f.installer().Install(t.Context(), proto.PatchInstallRequest{InstallID: "i1", Package: "hello",
				Version: tc.version}, func(Progress) {})
			require.NoError(t, err)
			require.Equal(t, proto.PatchInstallAlready, res.Status)
			require.True(t, res.AlreadyInstalled)
			_, err = os.Stat(f.args)
			require.ErrorIs(t, err, os.ErrNotExist, "apt-get install never ran")
		})
	}
}

func TestAptInstallFailureCarriesExitCodeAndLog(t *testing.T) {
	t.Parallel()
	f := newFakeApt(t, true)
	var got []Progress
	res, err := f.installer().Install(t.Context(), proto.PatchInstallRequest{InstallID: "i1", Package: "hello", Version: "1.1"},
		func(p Progress) { got = append(got, p) })
	require.NoError(t, err)
	require.Equal(t, proto.PatchInstallFailed, res.Status)
	require.Equal(t, 100, *res.ExitCode)
	require.Equal(t, "apt-get exited 100: E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (apt)", res.Message)
	require.Contains(t, res.LogExcerpt, "Waiting for cache lock")
	require.Equal(t, "installing", got[len(got)-1].Phase)
	require.Equal(t, "pmerror: dpkg lock held", got[len(got)-1].Message)
}

func TestParseAptStatus(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		line string
		want Progress
		ok   bool
	}{
		{"dlstatus:1:9.0909:Retrieving file 1 of 11", Progress{Phase: "downloading", Percent: 9, Message: "Retrieving file 1 of 11"}, true},
		{"pmstatus:bash:42.8571:Unpacking bash (amd64)", Progress{Phase: "installing", Percent: 42, Message: "Unpacking bash (amd64)"}, true},
		{"pmstatus:dpkg-exec:0:Running dpkg", Progress{Phase: "installing", Message: "Running dpkg"}, true},
		{"pmstatus:x:250:over", Progress{Phase: "installing", Percent: 100, Message: "over"}, true},
		{"pmconffile:/etc/x:50:'/etc/x' '/etc/x.dpkg-new' 1 1", Progress{Phase: "installing", Percent: 50,
			Message: "pmconffile: '/etc/x' '/etc/x.dpkg-new' 1 1"}, true},
		{"media-change:x:y:z", Progress{}, false},
		{"pmstatus:bash:NaNx:bad", Progress{}, false},
		{"garbage", Progress{}, false},
	} {
		got, ok := ParseAptStatus(tc.line)
		require.Equal(t, tc.ok, ok, tc.line)
		require.Equal(t, tc.want, got, tc.line)
	}
}

func TestExcerptKeepsTheEnd(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("line of output\n", 1000) + "E: the end\n"
	ex := Excerpt(long)
	require.LessOrEqual(t, len(ex), proto.MaxPatchLogExcerpt)
	require.True(t, strings.HasSuffix(ex, "E: the end\n"))
	require.True(t, strings.HasPrefix(ex, "line of output\n"), "cut at a line start")
	require.Equal(t, "short", Excerpt("short"))
}
