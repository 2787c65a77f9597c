//go:build windows

package files

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	agentruntime "github.com/cairn-rmm/cairn/agent/runtime"
)

func askWindows(t *testing.T, q proto.FileRequest) (json.RawMessage, string) {
	t.Helper()
	h := agentruntime.NewHandlers()
	require.NoError(t, Register(h, Options{}))
	raw, err := json.Marshal(q)
	require.NoError(t, err)
	res, err := h.Lookup(proto.EventFileManagement)(context.Background(), nil, raw)
	if err != nil {
		return nil, code(err)
	}
	b, err := json.Marshal(res)
	require.NoError(t, err)
	return b, ""
}

// TestWindowsFiles runs the handler on Windows (under Wine in make
// test-wine): drive roots, backslash paths, case-insensitive conflicts
// and the namespaces refused.
func TestWindowsFiles(t *testing.T) {
	// Not t.TempDir: its cleanup (os.RemoveAll) fails under Wine with
	// "Invalid function"; one file and its directory go with os.Remove.
	dir, err := os.MkdirTemp("", "cairn-files-")
	require.NoError(t, err)
	file := filepath.Join(dir, "Readme.TXT")
	t.Cleanup(func() { _ = os.Remove(file); _ = os.Remove(dir) })
	require.NoError(t, os.WriteFile(file, []byte("hi"), 0o644))

	b, c := askWindows(t, proto.FileRequest{Action: proto.FileActionRoots})
	require.Empty(t, c)
	var roots proto.FileRoots
	require.NoError(t, json.Unmarshal(b, &roots))
	require.NotEmpty(t, roots.Roots)
	require.Regexp(t, `^[A-Z]:\\$`, roots.Roots[0].Path)

	b, c = askWindows(t, proto.FileRequest{Action: proto.FileActionConflicts, Destination: dir, Names: []string{"readme.txt"}})
	require.Empty(t, c)
	var conf proto.FileConflicts
	require.NoError(t, json.Unmarshal(b, &conf))
	require.Len(t, conf.Conflicts, 1)

	b, c = askWindows(t, proto.FileRequest{Action: proto.FileActionReadText, Path: filepath.Join(dir, "Readme.TXT")})
	require.Empty(t, c)
	var text proto.FileText
	require.NoError(t, json.Unmarshal(b, &text))
	require.Equal(t, "hi", text.Content)

	for _, p := range []string{`\\?\` + dir, `\\.\PhysicalDrive0`, dir + `\..\x`, dir + `\NUL`} {
		_, c = askWindows(t, proto.FileRequest{Action: proto.FileActionList, Path: p})
		require.Equal(t, proto.CodeFilePathInvalid, c, p)
	}
	_, c = askWindows(t, proto.FileRequest{Action: proto.FileActionList, Path: `Windows`})
	require.Equal(t, proto.CodeFilePathNotAbsolute, c)
}

// Below an upload destination only real directories are entered: a file
// in the way is refused (path_invalid), real directories are made.
// Reparse points are refused by the same check (isReparsePoint), which
// Wine cannot exercise: its os.Symlink answers success and makes no
// link, so only real Windows tests that part.
func TestWindowsUploadDirectories(t *testing.T) {
	dest, err := os.MkdirTemp("", "cairn-dest-")
	require.NoError(t, err)
	file := filepath.Join(dest, "file")
	made := []string{filepath.Join(dest, "real", "x"), filepath.Join(dest, "real")}
	t.Cleanup(func() {
		for _, p := range append(made, file, dest) {
			_ = os.Remove(p)
		}
	})
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	d, err := openDest(dest)
	require.NoError(t, err)
	defer d.Close()
	_, err = d.mkdirAll("file/x")
	require.Equal(t, proto.CodeFilePathInvalid, code(err), "%v", err)
	sub, err := d.mkdirAll("real/x")
	require.NoError(t, err)
	require.Equal(t, made[0], sub.Name())
	require.DirExists(t, made[0])
}
