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
