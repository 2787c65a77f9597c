//go:build windows

package agent

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/windows"
)

// whileHeld retries only a file held open without sharing, and stops at
// the first other answer.
func TestWhileHeld(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		answers []error // what op answers, call by call; nil after the list
		calls   int
		err     error
	}{
		{"at once", nil, 1, nil},
		{"sharing violation, then free", []error{windows.ERROR_SHARING_VIOLATION, windows.ERROR_SHARING_VIOLATION}, 3, nil},
		{"pending replacement, then free", []error{windows.ERROR_ACCESS_DENIED}, 2, nil},
		{"another failure is not retried", []error{windows.ERROR_FILE_NOT_FOUND}, 1, windows.ERROR_FILE_NOT_FOUND},
		{"held throughout", repeat(windows.ERROR_SHARING_VIOLATION, 50), 40, windows.ERROR_SHARING_VIOLATION},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			calls := 0
			err := whileHeld(func() error {
				calls++
				if calls <= len(tc.answers) {
					return tc.answers[calls-1]
				}
				return nil
			})
			require.Equal(t, tc.calls, calls)
			require.ErrorIs(t, err, tc.err)
		})
	}
}

func repeat(err error, n int) []error {
	out := make([]error, n)
	for i := range out {
		out[i] = err
	}
	return out
}

// A reader that opened the file the way Go does (no FILE_SHARE_DELETE)
// blocks a replace until it closes; the replace waits for it.
func TestReplaceFileWaitsForAReader(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path, tmp := filepath.Join(dir, "agent.json"), filepath.Join(dir, "agent.json.tmp")
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o600))
	require.NoError(t, os.WriteFile(tmp, []byte("new"), 0o600))
	reader, err := os.Open(path)
	require.NoError(t, err)
	require.Error(t, os.Rename(tmp, path), "the open reader holds the file")

	replaced := make(chan error, 1)
	first := true
	go func() {
		replaced <- whileHeld(func() error {
			err := os.Rename(tmp, path)
			if first {
				first = false
				_ = reader.Close() // the reader finishes while the replace waits
			}
			return err
		})
	}()
	require.NoError(t, <-replaced)
	got, err := readFile(path)
	require.NoError(t, err)
	require.Equal(t, "new", string(got))
	// Removed here: under Wine, t.TempDir's cleanup (Go's RemoveAll, which
	// deletes relative to the directory's handle) fails on this renamed-over
	// file with "Invalid function", while os.Remove works.
	require.NoError(t, os.Remove(path))
	require.NoError(t, os.Remove(dir))
}
