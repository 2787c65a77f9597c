// Package apttest builds, for tests, a private dpkg/apt root with a local
// repository: a package cairn-hello is installed at 1.0 and the
// repository offers 1.1. Nothing of the machine's own dpkg database,
// lists or locks is touched: apt's directories, dpkg's --root and the
// history log all point inside it. The agent's apt provider and installer
// run against it with Root.Opts (agent/patches tests and the Engine's
// policy-driven install test share it).
package apttest

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
)

// Package is the package the repository upgrades.
const Package = "cairn-hello"

// Root is a private dpkg/apt root.
type Root struct {
	// Dir holds the root and the repository; Root is the dpkg/apt root.
	Dir, Root string
	// Opts are apt-get's -o options that keep it inside Root.
	Opts []string
}

// Run runs a command with a C locale and no prompts; it fails the test
// with the command's output when the command fails.
func Run(t testing.TB, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C", "DEBIAN_FRONTEND=noninteractive")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s %s: %s", name, strings.Join(args, " "), out)
	return string(out)
}

// buildDeb makes cairn-hello_<version>_all.deb in dir (no maintainer
// scripts).
func buildDeb(t testing.TB, dir, version string) string {
	t.Helper()
	src := filepath.Join(dir, "src-"+version)
	require.NoError(t, os.MkdirAll(filepath.Join(src, "DEBIAN"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(src, "usr/share/cairn-hello"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "usr/share/cairn-hello/version"), []byte(version+"\n"), 0o644))
	control := "Package: " + Package + "\nVersion: " + version + "\nArchitecture: all\nMaintainer: Cairn Tests <tests@example.invalid>\n" +
		"Description: a package the patch tests upgrade\n"
	require.NoError(t, os.WriteFile(filepath.Join(src, "DEBIAN/control"), []byte(control), 0o644))
	deb := filepath.Join(dir, Package+"_"+version+"_all.deb")
	Run(t, "dpkg-deb", "--root-owner-group", "-b", src, deb)
	return deb
}

// New builds the root: cairn-hello 1.0 installed, 1.1 in a local file:
// repository, and apt's lists updated from it (no network). It fails the
// test when the machine lacks dpkg or apt (a Debian machine is needed).
func New(t testing.TB) *Root {
	t.Helper()
	for _, tool := range []string{"dpkg", "dpkg-deb", "apt-get", "dpkg-query"} {
		_, err := exec.LookPath(tool)
		require.NoError(t, err, "the real install test needs %s (a Debian machine)", tool)
	}
	dir := t.TempDir()
	r := &Root{Dir: dir, Root: filepath.Join(dir, "root")}
	for _, d := range []string{"var/lib/dpkg/info", "var/lib/dpkg/updates", "var/lib/apt/lists/partial", "var/cache/apt/archives/partial",
		"etc/apt/sources.list.d", "etc/apt/preferences.d", "etc/apt/apt.conf.d", "etc/apt/trusted.gpg.d", "var/log/apt", "run"} {
		require.NoError(t, os.MkdirAll(filepath.Join(r.Root, d), 0o755))
	}
	for _, f := range []string{"var/lib/dpkg/status", "var/lib/dpkg/available"} {
		require.NoError(t, os.WriteFile(filepath.Join(r.Root, f), nil, 0o644))
	}
	old := buildDeb(t, dir, "1.0")
	Run(t, "dpkg", "--root="+r.Root, "--force-not-root", "--force-script-chrootless", "-i", old)

	// The repository: 1.1 and a Packages index written the way
	// dpkg-scanpackages writes it.
	repo := filepath.Join(dir, "repo")
	require.NoError(t, os.MkdirAll(repo, 0o755))
	deb := buildDeb(t, repo, "1.1")
	b, err := os.ReadFile(deb)
	require.NoError(t, err)
	sum := sha256.Sum256(b)
	fields := strings.TrimSpace(Run(t, "dpkg-deb", "-f", deb))
	index := fmt.Sprintf("%s\nFilename: ./%s\nSize: %d\nSHA256: %s\n\n", fields, filepath.Base(deb), len(b), hex.EncodeToString(sum[:]))
	require.NoError(t, os.WriteFile(filepath.Join(repo, "Packages"), []byte(index), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(r.Root, "etc/apt/sources.list"), []byte("deb [trusted=yes] file:"+repo+" ./\n"), 0o644))

	r.Opts = []string{"Dir=" + r.Root, "Dir::State::status=" + r.Root + "/var/lib/dpkg/status",
		"Dir::Etc::trusted=" + r.Root + "/etc/apt/trusted.gpg", "Dir::Etc::trustedparts=" + r.Root + "/etc/apt/trusted.gpg.d",
		"Dir::Log=" + r.Root + "/var/log/apt", "APT::Sandbox::User=root",
		"DPkg::Options::=--root=" + r.Root, "DPkg::Options::=--force-not-root", "DPkg::Options::=--force-script-chrootless"}
	args := []string{}
	for _, o := range r.Opts {
		args = append(args, "-o", o)
	}
	Run(t, "apt-get", append(args, "update")...)
	return r
}

// Path is a path inside the root.
func (r *Root) Path(rel string) string { return filepath.Join(r.Root, rel) }
