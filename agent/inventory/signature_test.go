//go:build !windows

// The package database signature guards apt/rpm readings (Linux). Its
// test, like the sysfs readers' (sysfs_test.go), builds a file tree in
// t.TempDir, whose removal fails under Wine (Go's RemoveAll on Windows
// needs FileDispositionInformationEx, which Wine 8 lacks), so it is left
// out of the Windows build the Wine harness runs.

package inventory

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestStateSignature(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	status := filepath.Join(dir, "status")
	require.NoError(t, os.WriteFile(status, []byte("a"), 0o644))
	paths := []string{status, filepath.Join(dir, "lists"), filepath.Join(dir, "missing")}
	s1 := stateSignature(paths)
	require.Equal(t, s1, stateSignature(paths), "stable while nothing changes")

	require.NoError(t, os.Mkdir(filepath.Join(dir, "lists"), 0o755))
	s2 := stateSignature(paths)
	require.NotEqual(t, s1, s2, "a path appearing changes it")

	require.NoError(t, os.Chtimes(status, time.Now(), time.Now().Add(time.Hour)))
	s3 := stateSignature(paths)
	require.NotEqual(t, s2, s3, "a modified database changes it")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "lists", "new"), nil, 0o644))
	require.NoError(t, os.Chtimes(filepath.Join(dir, "lists"), time.Now(), time.Now().Add(2*time.Hour)))
	require.NotEqual(t, s3, stateSignature(paths), "refreshed lists change it")
}
