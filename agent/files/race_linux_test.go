//go:build linux

package files

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// The race tests run a goroutine that flips a symbolic link inside the
// managed directory between a harmless target and a sentinel outside it
// while the file manager works, for a bounded number of rounds, and
// check the sentinel never changes. The tests run as root, so an
// operation that followed a swapped link really would touch it.

const raceRounds = 2000

type sentinel struct {
	path    string
	content string
	mode    os.FileMode
}

func newSentinel(t *testing.T) sentinel {
	t.Helper()
	s := sentinel{path: filepath.Join(t.TempDir(), "shadow"), content: "root:secret\n", mode: 0o600}
	require.NoError(t, os.WriteFile(s.path, []byte(s.content), s.mode))
	require.NoError(t, os.Chmod(s.path, s.mode))
	return s
}

func (s sentinel) check(t *testing.T) {
	t.Helper()
	fi, err := os.Lstat(s.path)
	require.NoError(t, err)
	require.Equal(t, s.mode, fi.Mode(), "the sentinel's mode changed")
	st := fi.Sys().(*syscall.Stat_t)
	require.Equal(t, uint32(0), st.Uid)
	b, err := os.ReadFile(s.path)
	require.NoError(t, err)
	require.Equal(t, s.content, string(b), "the sentinel's content changed")
}

// flipper runs fn in a loop until stop is called.
func flipper(fn func()) (stop func()) {
	var done atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !done.Load() {
			fn()
		}
	}()
	return func() { done.Store(true); wg.Wait() }
}

// writeText's temporary file is swapped for a link to the sentinel
// between its creation and its chmod and rename.
func TestRaceWriteTextTempSwap(t *testing.T) {
	t.Parallel()
	sen := newSentinel(t)
	dir := t.TempDir()
	target := filepath.Join(dir, "a.txt")
	s := &server{goos: "linux"}
	stop := flipper(func() {
		des, _ := os.ReadDir(dir)
		for _, de := range des {
			if strings.HasPrefix(de.Name(), ".a.txt.cairn-") && de.Type().IsRegular() {
				p := filepath.Join(dir, de.Name())
				if os.Rename(p, p+".moved") == nil {
					_ = os.Symlink(sen.path, p)
				}
			}
		}
	})
	defer stop()
	for i := 0; i < raceRounds; i++ {
		// Each round starts from a world-writable regular file, the mode
		// a followed chmod would give the sentinel.
		_ = os.Remove(target)
		require.NoError(t, os.WriteFile(target, []byte("x"), 0o777))
		require.NoError(t, os.Chmod(target, 0o777))
		_, _ = s.writeText(target, "content")
	}
	stop()
	sen.check(t)
}

// A copied tree whose file or directory is flipped to a link to the
// sentinel never carries the sentinel's content.
func TestRaceCopyTreeSwap(t *testing.T) {
	t.Parallel()
	sen := newSentinel(t)
	outside := filepath.Dir(sen.path)
	src := t.TempDir()
	dst := t.TempDir()
	tree := filepath.Join(src, "tree")
	require.NoError(t, os.MkdirAll(filepath.Join(tree, "d"), 0o755))
	file := filepath.Join(tree, "f")
	sub := filepath.Join(tree, "d")
	harmless := filepath.Join(src, "harmless")
	require.NoError(t, os.WriteFile(harmless, []byte("harmless"), 0o644))
	stop := flipper(func() {
		// file: a regular file, then a link to the sentinel.
		_ = os.Remove(file)
		_ = os.WriteFile(file, []byte("plain"), 0o644)
		_ = os.Remove(file)
		_ = os.Symlink(sen.path, file)
		// d: a directory, then a link to the sentinel's directory.
		_ = os.Remove(sub)
		_ = os.Mkdir(sub, 0o755)
		_ = os.Remove(sub)
		_ = os.Symlink(outside, sub)
	})
	defer stop()
	for i := 0; i < raceRounds; i++ {
		out := filepath.Join(dst, "c")
		_ = os.RemoveAll(out)
		_ = copyTree(context.Background(), tree, out)
		_ = filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				b, _ := os.ReadFile(p)
				require.NotEqual(t, sen.content, string(b), "%s holds the sentinel's content", p)
			}
			return nil
		})
	}
	stop()
	sen.check(t)
}

// raceCaller serves one staged item and answers status and progress.
type raceCaller struct{ body []byte }

func (c *raceCaller) Call(_ context.Context, _, _ string, _, out any) error {
	if st, ok := out.(*proto.TransferStatus); ok {
		*st = proto.TransferStatus{State: "running"}
	}
	return nil
}

func (c *raceCaller) Open(context.Context, string) (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(c.body)), nil
}

func (c *raceCaller) Send(context.Context, string, string, io.Reader, func(*http.Request), any) error {
	return nil
}

// An upload into sub/ while sub flips between a directory and a link to
// a directory outside the destination writes nothing outside.
func TestRaceUploadSymlinkedComponent(t *testing.T) {
	t.Parallel()
	sen := newSentinel(t)
	outside := filepath.Dir(sen.path)
	dest := t.TempDir()
	sub := filepath.Join(dest, "sub")
	body := []byte("uploaded")
	sum := sha256.Sum256(body)
	s := &server{goos: "linux", opts: Options{ProgressInterval: 1 << 40, RetryWindow: 1}, log: slog.New(slog.DiscardHandler), running: map[string]bool{}}
	stop := flipper(func() {
		_ = os.Remove(sub)
		_ = os.Mkdir(sub, 0o755)
		_ = os.RemoveAll(sub)
		_ = os.Symlink(outside, sub)
	})
	defer stop()
	for i := 0; i < raceRounds/4; i++ {
		req := proto.TransferRequest{TransferID: "t", Destination: dest, Conflict: proto.ConflictOverwrite,
			Directories: []string{"sub/made"},
			Items:       []proto.TransferItem{{ItemID: 1, Name: "sub/shadow", Size: int64(len(body)), SHA256: hex.EncodeToString(sum[:])}}}
		raw, err := json.Marshal(req)
		require.NoError(t, err)
		_, _ = s.upload(context.Background(), &raceCaller{body: body}, raw)
		s.wg.Wait()
	}
	stop()
	sen.check(t)
	des, err := os.ReadDir(outside)
	require.NoError(t, err)
	require.Len(t, des, 1, "only the sentinel is outside: %v", des)
}

// Both lookups below an upload destination refuse a link as any
// component: openat2 and the per-component O_NOFOLLOW walk used where
// the kernel has no openat2.
func TestOpenBeneathRefusesLinks(t *testing.T) {
	dest := t.TempDir()
	outside := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dest, "real"), 0o755))
	require.NoError(t, os.Symlink(outside, filepath.Join(dest, "link")))
	d, err := openDest(dest)
	require.NoError(t, err)
	defer d.Close()
	for _, openat2 := range []bool{true, false} {
		useOpenat2.Store(openat2)
		_, err := d.mkdirAll("link/x")
		require.Equal(t, proto.CodeFilePathInvalid, code(err), "openat2=%v", openat2)
		sub, err := d.mkdirAll("real/x/y")
		require.NoError(t, err, "openat2=%v", openat2)
		require.Equal(t, filepath.Join(dest, "real", "x", "y"), sub.Name())
		sub.Close()
		_, err = openBeneath(d.f, "link", syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
		require.True(t, errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.ENOTDIR), "openat2=%v: %v", openat2, err)
	}
	useOpenat2.Store(true)
	des, err := os.ReadDir(outside)
	require.NoError(t, err)
	require.Empty(t, des)
}

// A download's zip, built while a file and a directory of the tree flip
// to links to the sentinel and its directory, never carries the
// sentinel's content.
func TestRaceDownloadZipSwap(t *testing.T) {
	t.Parallel()
	sen := newSentinel(t)
	outside := filepath.Dir(sen.path)
	src := t.TempDir()
	tree := filepath.Join(src, "tree")
	require.NoError(t, os.MkdirAll(filepath.Join(tree, "d"), 0o755))
	file, sub := filepath.Join(tree, "f"), filepath.Join(tree, "d")
	stop := flipper(func() {
		_ = os.Remove(file)
		_ = os.WriteFile(file, []byte("plain"), 0o644)
		_ = os.Remove(file)
		_ = os.Symlink(sen.path, file)
		_ = os.Remove(sub)
		_ = os.Mkdir(sub, 0o755)
		_ = os.Remove(sub)
		_ = os.Symlink(outside, sub)
	})
	defer stop()
	for i := 0; i < raceRounds; i++ {
		art, err := plan([]string{tree})
		require.NoError(t, err)
		var buf bytes.Buffer
		if art.write(&buf, io.Discard) != nil {
			continue
		}
		zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		require.NoError(t, err)
		for _, f := range zr.File {
			rc, err := f.Open()
			require.NoError(t, err)
			b, err := io.ReadAll(rc)
			require.NoError(t, err)
			rc.Close()
			require.NotEqual(t, sen.content, string(b), "round %d: %s in the zip holds the sentinel", i, f.Name)
		}
	}
	stop()
	sen.check(t)
}

// Moving or pasting into a destination that flips between a directory
// and a link to a directory outside never puts anything outside.
func TestRaceMoveDestinationSwap(t *testing.T) {
	t.Parallel()
	sen := newSentinel(t)
	outside := filepath.Dir(sen.path)
	dir := t.TempDir()
	dest := filepath.Join(dir, "dest")
	s := &server{goos: "linux"}
	stop := flipper(func() {
		_ = os.RemoveAll(dest)
		_ = os.Mkdir(dest, 0o755)
		_ = os.RemoveAll(dest)
		_ = os.Symlink(outside, dest)
	})
	defer stop()
	for i := 0; i < raceRounds; i++ {
		src := filepath.Join(dir, "moved")
		_ = os.WriteFile(src, []byte("moved"), 0o644)
		_, _ = s.transfer(context.Background(), []string{src}, dest, i%2 == 0)
	}
	stop()
	sen.check(t)
	des, err := os.ReadDir(outside)
	require.NoError(t, err)
	require.Len(t, des, 1, "only the sentinel is outside: %v", des)
}
