package agentartifacts

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
)

// writeArtifact puts a binary (random bytes: the catalog never runs it)
// and, unless buildID is "", its sidecar under dir/platform.
func writeArtifact(t *testing.T, dir, platform, buildID string, size int) []byte {
	t.Helper()
	body := make([]byte, size)
	_, err := rand.Read(body)
	require.NoError(t, err)
	path := filepath.Join(dir, platform, BinaryName(platform))
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, body, 0o755))
	if buildID != "" {
		require.NoError(t, os.WriteFile(path+BuildIDSuffix, []byte(buildID+"\n"), 0o644))
	} else {
		_ = os.Remove(path + BuildIDSuffix)
	}
	return body
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func TestCatalogLoadsArtifactsWithIDsAndBuildIDs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	linux := writeArtifact(t, dir, "linux-amd64", "v1.2.3-4-gabc", 4096)
	win := writeArtifact(t, dir, "windows-amd64", "", 2048)
	// Not artifacts: a stray file, a directory without a binary, a bad name.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README"), []byte("x"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "linux-arm64"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "Not A Platform"), 0o755))

	c := New(dir, Options{})
	list := c.List()
	require.Len(t, list, 2)

	l, err := c.Current("linux-amd64")
	require.NoError(t, err)
	require.Equal(t, "linux-amd64", l.Platform)
	require.Equal(t, sha(linux), l.SHA256)
	require.Equal(t, "linux-amd64-"+sha(linux)[:16], l.ID)
	require.Equal(t, "v1.2.3-4-gabc", l.BuildID, "from the sidecar")
	require.EqualValues(t, 4096, l.Size)
	require.Equal(t, "cairn-agent", l.FileName)

	w, err := c.Current("windows-amd64")
	require.NoError(t, err)
	require.Equal(t, "windows-amd64-"+sha(win)[:16], w.ID)
	require.Equal(t, "dev-"+sha(win)[:12], w.BuildID, "no sidecar: the ID the binary derives for itself")
	require.Equal(t, "cairn-agent.exe", w.FileName)
	require.Equal(t, []Artifact{l, w}, list, "in platform order")

	f, a, err := c.Open(l.ID)
	require.NoError(t, err)
	got, err := io.ReadAll(f)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.Equal(t, linux, got)
	require.Equal(t, l, a)

	_, err = c.Current("linux-arm64")
	require.Equal(t, ECodeUnavailable, cairn.ErrorCode(err))
	_, _, err = c.Open("linux-amd64-0000000000000000")
	require.Equal(t, ECodeUnavailable, cairn.ErrorCode(err))
}

// A rebuild under a running Engine is picked up: the new binary gets a new
// ID and the old ID stops opening; a sidecar-only change updates the build.
func TestCatalogFollowsRebuilds(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeArtifact(t, dir, "linux-amd64", "build-1", 1000)
	c := New(dir, Options{})
	old, err := c.Current("linux-amd64")
	require.NoError(t, err)

	next := writeArtifact(t, dir, "linux-amd64", "build-2", 1200)
	// Some file systems keep coarse times; a different size is enough,
	// and the time is moved as well for a same-size rebuild.
	require.NoError(t, os.Chtimes(filepath.Join(dir, "linux-amd64", "cairn-agent"), time.Now(), time.Now().Add(time.Minute)))
	cur, err := c.Current("linux-amd64")
	require.NoError(t, err)
	require.Equal(t, "linux-amd64-"+sha(next)[:16], cur.ID)
	require.Equal(t, "build-2", cur.BuildID)
	_, _, err = c.Open(old.ID)
	require.Equal(t, ECodeUnavailable, cairn.ErrorCode(err), "an artifact from before the rebuild")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "linux-amd64", "cairn-agent"+BuildIDSuffix), []byte("build-3"), 0o644))
	cur, err = c.Current("linux-amd64")
	require.NoError(t, err)
	require.Equal(t, "build-3", cur.BuildID)

	require.NoError(t, os.Remove(filepath.Join(dir, "linux-amd64", "cairn-agent")))
	_, err = c.Current("linux-amd64")
	require.Equal(t, ECodeUnavailable, cairn.ErrorCode(err), "a removed binary")
}

func TestCatalogWithoutDirectory(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{"", filepath.Join(t.TempDir(), "missing")} {
		c := New(dir, Options{})
		require.Empty(t, c.List())
		_, err := c.Current("linux-amd64")
		require.Equal(t, ECodeUnavailable, cairn.ErrorCode(err))
	}
}

func TestCatalogRefusesOddSidecars(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	body := writeArtifact(t, dir, "linux-amd64", "", 100)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "linux-amd64", "cairn-agent"+BuildIDSuffix), []byte("two words\n"), 0o644))
	a, err := New(dir, Options{}).Current("linux-amd64")
	require.NoError(t, err)
	require.Equal(t, "dev-"+sha(body)[:12], a.BuildID)
}

func TestPlatformOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ family, arch, osName, want string }{
		{"linux", "x86_64", "", "linux-amd64"},
		{"linux", "aarch64", "", "linux-arm64"},
		{"windows", "AMD64", "", "windows-amd64"},
		{"windows", "", "", "windows-amd64"},
		{"", "", "Microsoft Windows 11 Pro", "windows-amd64"},
		{"", "", "Debian GNU/Linux 12", "linux-amd64"},
		{"", "", "", ""},
		{"darwin", "arm64", "", ""},
		{"linux", "riscv64", "", ""},
	} {
		require.Equal(t, tc.want, PlatformOf(tc.family, tc.arch, tc.osName), "%+v", tc)
	}
}
