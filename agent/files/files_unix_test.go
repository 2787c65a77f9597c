//go:build !windows

package files

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	agentruntime "github.com/cairn-rmm/cairn/agent/runtime"
)

// ask runs one request through the registered handler, as the runtime does.
func ask[T any](t *testing.T, q proto.FileRequest) (T, string) {
	t.Helper()
	h := agentruntime.NewHandlers()
	require.NoError(t, Register(h, Options{}))
	raw, err := json.Marshal(q)
	require.NoError(t, err)
	res, err := h.Lookup(proto.EventFileManagement)(context.Background(), nil, raw)
	var out T
	if err != nil {
		return out, code(err)
	}
	b, err := json.Marshal(res)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &out))
	return out, ""
}

func TestFileActions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello\n"), 0o640))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	require.NoError(t, os.Symlink("/etc", filepath.Join(dir, "link")))

	roots, c := ask[proto.FileRoots](t, proto.FileRequest{Action: proto.FileActionRoots})
	require.Empty(t, c)
	require.Equal(t, "/", roots.Roots[0].Path)

	list, c := ask[proto.FileList](t, proto.FileRequest{Action: proto.FileActionList, Path: dir + "/"})
	require.Empty(t, c)
	require.Equal(t, dir, list.Path)
	var names, types []string
	for _, e := range list.Entries {
		names, types = append(names, e.Name), append(types, e.Type)
	}
	require.Equal(t, []string{"sub", "a.txt", "link"}, names)
	require.Equal(t, []string{"dir", "file", "symlink"}, types)

	text, c := ask[proto.FileText](t, proto.FileRequest{Action: proto.FileActionReadText, Path: dir + "/a.txt"})
	require.Empty(t, c)
	require.Equal(t, "hello\n", text.Content)

	// Writing keeps the file's mode and leaves no temporary file behind.
	w, c := ask[proto.FileWritten](t, proto.FileRequest{Action: proto.FileActionWriteText, Path: dir + "/a.txt", Content: "new"})
	require.Empty(t, c)
	require.Equal(t, int64(3), w.Size)
	fi, err := os.Stat(filepath.Join(dir, "a.txt"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o640), fi.Mode().Perm())
	b, _ := os.ReadFile(filepath.Join(dir, "a.txt"))
	require.Equal(t, "new", string(b))

	made, c := ask[proto.FileEntries](t, proto.FileRequest{Action: proto.FileActionMkdir, Path: dir + "/made"})
	require.Empty(t, c)
	require.Equal(t, "made", made.Entries[0].Name)
	_, c = ask[proto.FileEntries](t, proto.FileRequest{Action: proto.FileActionMkdir, Path: dir + "/made"})
	require.Equal(t, proto.CodeFilePathExists, c)

	ren, c := ask[proto.FileEntries](t, proto.FileRequest{Action: proto.FileActionRename, Path: dir + "/a.txt", NewName: "b.txt"})
	require.Empty(t, c)
	require.Equal(t, dir+"/b.txt", ren.Entries[0].Path)
	_, c = ask[proto.FileEntries](t, proto.FileRequest{Action: proto.FileActionRename, Path: dir + "/b.txt", NewName: "sub"})
	require.Equal(t, proto.CodeFilePathExists, c)
	_, c = ask[proto.FileEntries](t, proto.FileRequest{Action: proto.FileActionRename, Path: dir + "/b.txt", NewName: "x/y"})
	require.Equal(t, proto.CodeFilePathInvalid, c)

	// Copy a tree (with a link, copied as a link), then move it.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sub", "in.txt"), []byte("x"), 0o600))
	require.NoError(t, os.Symlink("in.txt", filepath.Join(dir, "sub", "l")))
	cp, c := ask[proto.FileEntries](t, proto.FileRequest{Action: proto.FileActionPaste, Paths: []string{dir + "/sub", dir + "/b.txt"}, Destination: dir + "/made"})
	require.Empty(t, c)
	require.Len(t, cp.Entries, 2)
	b, _ = os.ReadFile(filepath.Join(dir, "made", "sub", "in.txt"))
	require.Equal(t, "x", string(b))
	target, err := os.Readlink(filepath.Join(dir, "made", "sub", "l"))
	require.NoError(t, err)
	require.Equal(t, "in.txt", target)
	_, c = ask[proto.FileEntries](t, proto.FileRequest{Action: proto.FileActionPaste, Paths: []string{dir + "/made"}, Destination: dir + "/made/sub"})
	require.Equal(t, proto.CodeFilePathInvalid, c)
	_, c = ask[proto.FileEntries](t, proto.FileRequest{Action: proto.FileActionPaste, Paths: []string{dir + "/b.txt"}, Destination: dir + "/made"})
	require.Equal(t, proto.CodeFilePathExists, c)

	mv, c := ask[proto.FileEntries](t, proto.FileRequest{Action: proto.FileActionMove, Paths: []string{dir + "/b.txt"}, Destination: dir + "/sub"})
	require.Empty(t, c)
	require.Equal(t, dir+"/sub/b.txt", mv.Entries[0].Path)
	require.NoFileExists(t, filepath.Join(dir, "b.txt"))

	conf, c := ask[proto.FileConflicts](t, proto.FileRequest{Action: proto.FileActionConflicts, Destination: dir + "/sub", Names: []string{"b.txt", "none", "IN.TXT"}})
	require.Empty(t, c)
	require.Len(t, conf.Conflicts, 1, "case matters on Linux")
	require.Equal(t, "b.txt", conf.Conflicts[0].Name)

	// Deleting a link removes the link only.
	del, c := ask[proto.FileEntries](t, proto.FileRequest{Action: proto.FileActionDelete, Paths: []string{dir + "/link", dir + "/made"}})
	require.Empty(t, c)
	require.Equal(t, "symlink", del.Entries[0].Type)
	require.DirExists(t, "/etc")
	require.NoDirExists(t, filepath.Join(dir, "made"))
	_, c = ask[proto.FileEntries](t, proto.FileRequest{Action: proto.FileActionDelete, Paths: []string{"/"}})
	require.Equal(t, proto.CodeFilePathInvalid, c)
}

func TestFileRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bin"), []byte{'a', 0, 'b'}, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "big"), []byte(strings.Repeat("a", proto.MaxTextBytes+1)), 0o644))
	// Mutations are refused on a FIFO of our own, never on /dev/null: a
	// regressed guard running as root would replace or remove the
	// machine's /dev/null.
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	for _, c := range []struct {
		q    proto.FileRequest
		code string
	}{
		{proto.FileRequest{Action: proto.FileActionList, Path: "relative"}, proto.CodeFilePathNotAbsolute},
		{proto.FileRequest{Action: proto.FileActionList, Path: dir + "/../x"}, proto.CodeFilePathInvalid},
		{proto.FileRequest{Action: proto.FileActionList, Path: dir + "/a\x00"}, proto.CodeFilePathInvalid},
		{proto.FileRequest{Action: proto.FileActionList, Path: dir + "/none"}, proto.CodeFilePathNotFound},
		{proto.FileRequest{Action: proto.FileActionList, Path: dir + "/bin"}, proto.CodeFileNotDirectory},
		{proto.FileRequest{Action: proto.FileActionReadText, Path: "/dev/null"}, proto.CodeFilePathInvalid},
		{proto.FileRequest{Action: proto.FileActionReadText, Path: dir}, proto.CodeFileNotFile},
		{proto.FileRequest{Action: proto.FileActionReadText, Path: dir + "/bin"}, proto.CodeFileBinary},
		{proto.FileRequest{Action: proto.FileActionReadText, Path: dir + "/big"}, proto.CodeFileTooLarge},
		{proto.FileRequest{Action: proto.FileActionWriteText, Path: dir + "/w", Content: "a\x00"}, proto.CodeFileBinary},
		{proto.FileRequest{Action: proto.FileActionWriteText, Path: dir + "/w", Content: strings.Repeat("a", proto.MaxTextBytes+1)}, proto.CodeFileTooLarge},
		{proto.FileRequest{Action: proto.FileActionWriteText, Path: fifo, Content: "x"}, proto.CodeFilePathInvalid},
		{proto.FileRequest{Action: proto.FileActionReadText, Path: fifo}, proto.CodeFilePathInvalid},
		{proto.FileRequest{Action: proto.FileActionWriteText, Path: dir + "/none/w", Content: "x"}, proto.CodeFilePathNotFound},
		{proto.FileRequest{Action: proto.FileActionDelete, Paths: []string{fifo}}, proto.CodeFilePathInvalid},
		{proto.FileRequest{Action: proto.FileActionRename, Path: fifo, NewName: "x"}, proto.CodeFilePathInvalid},
		{proto.FileRequest{Action: "chmod"}, proto.CodeOpUnsupported},
	} {
		_, got := ask[json.RawMessage](t, c.q)
		require.Equal(t, c.code, got, "%+v", c.q.Action+" "+c.q.Path)
	}
	require.FileExists(t, fifo)
}
