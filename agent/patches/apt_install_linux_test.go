//go:build linux

package patches

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// aptRoot is a private dpkg/apt root with a local repository: a package
// cairn-hello is installed at 1.0 and the repository offers 1.1. Nothing
// of the machine's own dpkg database, lists or locks is touched: apt's
// directories, dpkg's --root and the history log all point inside it.
type aptRoot struct {
	dir, root string
	opts      []string
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C", "DEBIAN_FRONTEND=noninteractive")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s %s: %s", name, strings.Join(args, " "), out)
	return string(out)
}

// buildDeb makes cairn-hello_<version>_all.deb in dir (no maintainer
// scripts).
func buildDeb(t *testing.T, dir, version string) string {
	t.Helper()
	src := filepath.Join(dir, "src-"+version)
	require.NoError(t, os.MkdirAll(filepath.Join(src, "DEBIAN"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(src, "usr/share/cairn-hello"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "usr/share/cairn-hello/version"), []byte(version+"\n"), 0o644))
	control := "Package: cairn-hello\nVersion: " + version + "\nArchitecture: all\nMaintainer: Cairn Tests <tests@example.invalid>\n" +
		"Description: a package the patch tests upgrade\n"
	require.NoError(t, os.WriteFile(filepath.Join(src, "DEBIAN/control"), []byte(control), 0o644))
	deb := filepath.Join(dir, "cairn-hello_"+version+"_all.deb")
	run(t, "dpkg-deb", "--root-owner-group", "-b", src, deb)
	return deb
}

func newAptRoot(t *testing.T) *aptRoot {
	t.Helper()
	for _, tool := range []string{"dpkg", "dpkg-deb", "apt-get", "dpkg-query"} {
		_, err := exec.LookPath(tool)
		require.NoError(t, err, "the real install test needs %s (a Debian machine)", tool)
	}
	dir := t.TempDir()
	r := &aptRoot{dir: dir, root: filepath.Join(dir, "root")}
	for _, d := range []string{"var/lib/dpkg/info", "var/lib/dpkg/updates", "var/lib/apt/lists/partial", "var/cache/apt/archives/partial",
		"etc/apt/sources.list.d", "etc/apt/preferences.d", "etc/apt/apt.conf.d", "etc/apt/trusted.gpg.d", "var/log/apt", "run"} {
		require.NoError(t, os.MkdirAll(filepath.Join(r.root, d), 0o755))
	}
	for _, f := range []string{"var/lib/dpkg/status", "var/lib/dpkg/available"} {
		require.NoError(t, os.WriteFile(filepath.Join(r.root, f), nil, 0o644))
	}
	old := buildDeb(t, dir, "1.0")
	run(t, "dpkg", "--root="+r.root, "--force-not-root", "--force-script-chrootless", "-i", old)

	// The repository: 1.1 and a Packages index written the way
	// dpkg-scanpackages writes it.
	repo := filepath.Join(dir, "repo")
	require.NoError(t, os.MkdirAll(repo, 0o755))
	deb := buildDeb(t, repo, "1.1")
	b, err := os.ReadFile(deb)
	require.NoError(t, err)
	sum := sha256.Sum256(b)
	fields := strings.TrimSpace(run(t, "dpkg-deb", "-f", deb))
	index := fmt.Sprintf("%s\nFilename: ./%s\nSize: %d\nSHA256: %s\n\n", fields, filepath.Base(deb), len(b), hex.EncodeToString(sum[:]))
	require.NoError(t, os.WriteFile(filepath.Join(repo, "Packages"), []byte(index), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(r.root, "etc/apt/sources.list"), []byte("deb [trusted=yes] file:"+repo+" ./\n"), 0o644))

	r.opts = []string{"Dir=" + r.root, "Dir::State::status=" + r.root + "/var/lib/dpkg/status",
		"Dir::Etc::trusted=" + r.root + "/etc/apt/trusted.gpg", "Dir::Etc::trustedparts=" + r.root + "/etc/apt/trusted.gpg.d",
		"Dir::Log=" + r.root + "/var/log/apt", "APT::Sandbox::User=root",
		"DPkg::Options::=--root=" + r.root, "DPkg::Options::=--force-not-root", "DPkg::Options::=--force-script-chrootless"}
	// apt update from the local file: repository (no network).
	args := []string{}
	for _, o := range r.opts {
		args = append(args, "-o", o)
	}
	run(t, "apt-get", append(args, "update")...)
	return r
}

func (r *aptRoot) provider() *Apt {
	return &Apt{Extra: r.opts, HistoryDir: filepath.Join(r.root, "var/log/apt"), RebootFile: filepath.Join(r.root, "run/reboot-required")}
}

func (r *aptRoot) installer() *AptInstaller {
	return &AptInstaller{Extra: r.opts, AdminDir: filepath.Join(r.root, "var/lib/dpkg"), RebootFile: filepath.Join(r.root, "run/reboot-required")}
}

func hello(rows []proto.PatchEntry) []proto.PatchEntry {
	var out []proto.PatchEntry
	for _, r := range rows {
		if r.Package == "cairn-hello" {
			out = append(out, r)
		}
	}
	return out
}

// TestAptInstallForRealInAPrivateRoot upgrades a package with the real
// apt-get and dpkg against a local repository the test builds, then
// re-scans: the pending row is gone and the history row that replaces it
// has its key; a reboot flag is seen; asking again is already_installed.
func TestAptInstallForRealInAPrivateRoot(t *testing.T) {
	t.Parallel()
	r := newAptRoot(t)

	before, err := r.provider().Scan(t.Context())
	require.NoError(t, err)
	pending := hello(before.Pending)
	require.Len(t, pending, 1)
	require.Equal(t, "1.0", pending[0].InstalledVersion)
	require.Equal(t, "1.1", pending[0].CandidateVersion)
	require.Empty(t, hello(before.History))
	require.False(t, before.Status.RebootRequired)

	var got []Progress
	res, err := r.installer().Install(t.Context(), proto.PatchInstallRequest{InstallID: "i1", Package: "cairn-hello", Version: "1.1"},
		func(p Progress) { got = append(got, p) })
	require.NoError(t, err)
	require.Equal(t, proto.PatchInstallDone, res.Status, "%s\n%s", res.Message, res.LogExcerpt)
	require.Equal(t, "cairn-hello 1.0 -> 1.1", res.Message)
	phases := map[string]bool{}
	for _, p := range got {
		phases[p.Phase] = true
	}
	require.Equal(t, map[string]bool{"starting": true, "downloading": true, "installing": true, "finished": true}, phases,
		"progress from APT::Status-Fd")
	b, err := os.ReadFile(filepath.Join(r.root, "usr/share/cairn-hello/version"))
	require.NoError(t, err)
	require.Equal(t, "1.1\n", string(b), "dpkg unpacked the new version inside the private root")

	// The re-scan: no longer pending, in the history under the same key.
	require.NoError(t, os.WriteFile(filepath.Join(r.root, "run/reboot-required"), []byte("*** System restart required ***\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(r.root, "run/reboot-required.pkgs"), []byte("cairn-hello\n"), 0o644))
	after, err := r.provider().Scan(t.Context())
	require.NoError(t, err)
	require.Empty(t, hello(after.Pending))
	hist := hello(after.History)
	require.Len(t, hist, 1)
	require.Equal(t, "1.1", hist[0].InstalledVersion)
	require.Equal(t, proto.PatchSourceAptHistory, hist[0].Source)
	require.Equal(t, rowKey(pending[0]), rowKey(hist[0]), "the history row has the pending row's key")
	require.True(t, after.Status.RebootRequired)
	require.Equal(t, []string{"cairn-hello"}, after.Status.RebootPackages)

	again, err := r.installer().Install(t.Context(), proto.PatchInstallRequest{InstallID: "i2", Package: "cairn-hello", Version: "1.1"},
		func(Progress) {})
	require.NoError(t, err)
	require.Equal(t, proto.PatchInstallAlready, again.Status)
	require.True(t, again.AlreadyInstalled)
}
