// Package testdir gives tests a private directory that is removed when the
// test ends, on Linux and on Windows under Wine alike.
package testdir

import (
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
)

// New is t.TempDir, except on Windows: there t.TempDir's cleanup
// (os.RemoveAll, which unlinks through FileDispositionInformationEx) fails
// under Wine 8 with "Invalid function" and fails the test. The directory is
// then made with os.MkdirTemp and removed entry by entry, deepest first,
// with os.Remove, which Wine and Windows both do.
func New(t testing.TB) string {
	t.Helper()
	if runtime.GOOS != "windows" {
		return t.TempDir()
	}
	dir, err := os.MkdirTemp("", "cairn-test-")
	if err != nil {
		t.Fatalf("testdir: %v", err)
	}
	t.Cleanup(func() {
		var paths []string
		_ = filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
			if err == nil {
				paths = append(paths, p)
			}
			return nil
		})
		slices.Reverse(paths)
		for _, p := range paths {
			_ = os.Remove(p)
		}
	})
	return dir
}
