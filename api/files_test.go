package api_test

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// TestFileManagement runs every file route against the agent's real file
// handler (agent/files) behind a real socket, on a private directory.
func TestFileManagement(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "files")
	f.opsAgent(t, admin, site, "files-01")
	dir := t.TempDir()
	base := "/api/device/files/files-01"
	q := func(p string) string { return "?path=" + url.QueryEscape(p) }
	names := func(r response) []string {
		var out []string
		for _, e := range r.Body["entries"].([]any) {
			out = append(out, e.(map[string]any)["name"].(string))
		}
		return out
	}

	r := f.do(t, "GET", base+"/roots", admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, "/", r.Body["roots"].([]any)[0].(map[string]any)["path"])

	r = f.do(t, "POST", base+"/mkdir", admin, map[string]any{"path": dir + "/docs"})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, []string{"docs"}, names(r))
	require.DirExists(t, filepath.Join(dir, "docs"))

	r = f.do(t, "POST", base+"/text", admin, map[string]any{"path": dir + "/docs/note.txt", "content": "first line\n"})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, float64(11), r.Body["size"])
	b, err := os.ReadFile(filepath.Join(dir, "docs", "note.txt"))
	require.NoError(t, err)
	require.Equal(t, "first line\n", string(b))

	r = f.do(t, "GET", base+"/text"+q(dir+"/docs/note.txt"), admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, "first line\n", r.Body["content"])
	require.NotEmpty(t, r.Body["modified_at"])

	r = f.do(t, "GET", base+"/children"+q(dir), admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, dir, r.Body["path"])
	require.Equal(t, []string{"docs"}, names(r))
	require.Equal(t, "dir", r.Body["entries"].([]any)[0].(map[string]any)["type"])

	r = f.do(t, "POST", base+"/rename", admin, map[string]any{"path": dir + "/docs/note.txt", "new_name": "readme.txt"})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, []string{"readme.txt"}, names(r))

	r = f.do(t, "POST", base+"/upload/conflicts", admin, map[string]any{"destination": dir + "/docs", "names": []string{"readme.txt", "new.txt"}})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Len(t, r.Body["conflicts"], 1)

	require.Equal(t, 200, f.do(t, "POST", base+"/mkdir", admin, map[string]any{"path": dir + "/copy"}).Status)
	r = f.do(t, "POST", base+"/paste", admin, map[string]any{"paths": []string{dir + "/docs"}, "destination": dir + "/copy"})
	require.Equal(t, 200, r.Status, r.Raw)
	require.FileExists(t, filepath.Join(dir, "copy", "docs", "readme.txt"))

	r = f.do(t, "POST", base+"/move", admin, map[string]any{"paths": []string{dir + "/docs/readme.txt"}, "destination": dir})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, dir+"/readme.txt", r.Body["entries"].([]any)[0].(map[string]any)["path"])

	// A link is deleted as a link: its target stays.
	require.NoError(t, os.Symlink(filepath.Join(dir, "copy"), filepath.Join(dir, "link")))
	r = f.do(t, "POST", base+"/delete", admin, map[string]any{"paths": []string{dir + "/link", dir + "/readme.txt"}})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, "symlink", r.Body["entries"].([]any)[0].(map[string]any)["type"])
	require.FileExists(t, filepath.Join(dir, "copy", "docs", "readme.txt"))
	require.NoFileExists(t, filepath.Join(dir, "readme.txt"))

	// The agent's refusals, with their codes.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bin"), []byte{0, 1, 2}, 0o644))
	// Deleting is refused on a FIFO of our own, never tried on /dev/null: a
	// regressed guard running as root would remove the machine's /dev/null.
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "big"), []byte(strings.Repeat("a", proto.MaxTextBytes+1)), 0o644))
	for _, c := range []struct {
		method, path string
		body         any
		status       int
		code         string
	}{
		{"GET", base + "/children" + q(dir+"/../etc"), nil, 400, "path_invalid"},
		{"GET", base + "/text" + q("/dev/null"), nil, 400, "path_invalid"},
		{"GET", base + "/text" + q(dir+"/bin"), nil, 422, "file_binary"},
		{"GET", base + "/text" + q(dir+"/big"), nil, 413, "file_too_large"},
		{"GET", base + "/children" + q(dir+"/none"), nil, 404, "path_not_found"},
		{"GET", base + "/children" + q(dir+"/bin"), nil, 409, "not_a_directory"},
		{"POST", base + "/mkdir", map[string]any{"path": dir + "/copy"}, 409, "path_exists"},
		{"POST", base + "/delete", map[string]any{"paths": []string{fifo}}, 400, "path_invalid"},
	} {
		r := f.do(t, c.method, c.path, admin, c.body)
		require.Equal(t, c.status, r.Status, r.Raw)
		require.Equal(t, c.code, r.Body["error"], r.Raw)
	}
	require.FileExists(t, fifo)

	r = f.do(t, "GET", "/api/device/activity/files-01?limit=200", admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Contains(t, r.Raw, "file_delete")
}

func TestFileManagementRefused(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "filesno")
	other := f.createSite(t, admin, "filesother")
	o := f.opsAgent(t, admin, site, "filesno-01")
	base := "/api/device/files/filesno-01"
	many := make([]string, 1001)
	for i := range many {
		many[i] = "/tmp/x"
	}

	for _, tc := range []struct {
		name, method, path string
		body               any
		field              string
	}{
		{"children path missing", "GET", base + "/children", nil, "path"},
		{"children path relative", "GET", base + "/children?path=etc", nil, "path"},
		{"text path relative", "GET", base + "/text?path=a.txt", nil, "path"},
		{"write path missing", "POST", base + "/text", map[string]any{"content": "x"}, "path"},
		{"write too large", "POST", base + "/text", map[string]any{"path": "/tmp/x", "content": strings.Repeat("a", proto.MaxTextBytes+1)}, "content"},
		{"mkdir relative", "POST", base + "/mkdir", map[string]any{"path": "tmp/x"}, "path"},
		{"rename separator", "POST", base + "/rename", map[string]any{"path": "/tmp/x", "new_name": "a/b"}, "new_name"},
		{"rename dots", "POST", base + "/rename", map[string]any{"path": "/tmp/x", "new_name": ".."}, "new_name"},
		{"move no paths", "POST", base + "/move", map[string]any{"paths": []string{}, "destination": "/tmp"}, "paths"},
		{"move no destination", "POST", base + "/move", map[string]any{"paths": []string{"/tmp/x"}}, "destination"},
		{"paste too many", "POST", base + "/paste", map[string]any{"paths": many, "destination": "/tmp"}, "paths"},
		{"delete relative", "POST", base + "/delete", map[string]any{"paths": []string{"x"}}, "paths[0]"},
		{"conflicts name path", "POST", base + "/upload/conflicts", map[string]any{"destination": "/tmp", "names": []string{"a/b"}}, "names[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := f.do(t, tc.method, tc.path, admin, tc.body)
			require.Equal(t, 400, r.Status, r.Raw)
			require.Equal(t, "validation_failed", r.Body["error"])
			require.NotEmpty(t, r.field(tc.field), r.Raw)
		})
	}
	require.Zero(t, o.count(proto.EventFileManagement), "bad input reaches no agent")

	t.Run("out of scope answers as missing", func(t *testing.T) {
		op := f.scopedOperatorOf(t, admin, "filesno-outsider", other)
		r := f.do(t, "GET", base+"/roots", op, nil)
		require.Equal(t, 404, r.Status, r.Raw)
		require.Equal(t, f.do(t, "GET", "/api/device/files/no-such-host/roots", op, nil).Body, r.Body)
		r = f.do(t, "POST", base+"/delete", op, map[string]any{"paths": []string{"/tmp/x"}})
		require.Equal(t, 404, r.Status, r.Raw)
	})

	t.Run("quarantined devices get nothing", func(t *testing.T) {
		q := f.do(t, "POST", "/api/devices/"+o.guid+"/quarantine", admin, nil)
		require.Equal(t, 200, q.Status, q.Raw)
		for _, c := range []struct {
			method, path string
			body         any
		}{
			{"GET", base + "/roots", nil},
			{"POST", base + "/mkdir", map[string]any{"path": "/tmp/cairn-quarantine-test"}},
		} {
			r := f.do(t, c.method, c.path, admin, c.body)
			require.Equal(t, 409, r.Status, r.Raw)
			require.Equal(t, "device_quarantined", r.Body["error"])
		}
		require.Zero(t, o.count(proto.EventFileManagement), "nothing was sent")
		require.NoDirExists(t, "/tmp/cairn-quarantine-test")
	})
}
