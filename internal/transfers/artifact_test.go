package transfers

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func TestCleanContentName(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"files.zip", "files.zip"},
		{"report\u202Efdp.exe", "reportfdp.exe"}, // RIGHT-TO-LEFT OVERRIDE
		{"\u202Aa\u202Bb\u202Cc\u202Dd\u202E", "abcd"},
		{"\u2066a\u2067b\u2068c\u2069", "abc"},
		{"a\u200Eb\u200Fc\u061Cd", "abcd"},
		{"a\x00b\x1bc\x7fd\u0085e\tf\ng\r", "abcdef" + "g"},
		{"  name.txt \t", "name.txt"},
		{"\u202E", ""},
		{"ünïcødé 日本.txt", "ünïcødé 日本.txt"},
	} {
		require.Equal(t, c.want, CleanContentName(c.in), "%q", c.in)
	}
}

func zipOf(t *testing.T, names ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, n := range names {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: n, Method: zip.Store})
		require.NoError(t, err)
		if !strings.HasSuffix(n, "/") {
			_, err = w.Write([]byte("x"))
			require.NoError(t, err)
		}
	}
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

func TestCheckZip(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"dir/", true},
		{"dir/a.txt", true},
		{"a..b/c..", true},
		{".hidden/x", true},
		{"/etc/passwd", false},
		{"../evil", false},
		{"dir/../../evil", false},
		{"dir/..", false},
		{`dir\..\evil`, false},
		{`a\b`, false},
		{"C:/Windows/evil.dll", false},
		{"c:evil", false},
		{"a\x00b", false},
	} {
		b := zipOf(t, "ok.txt", c.name)
		err := CheckZip(bytes.NewReader(b), int64(len(b)))
		if c.ok {
			require.NoError(t, err, "%q", c.name)
		} else {
			require.Error(t, err, "%q", c.name)
		}
	}
	notZip := []byte("plain bytes, no central directory")
	require.ErrorContains(t, CheckZip(bytes.NewReader(notZip), int64(len(notZip))), "not a readable zip")
}

func TestIsZipArtifact(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		paths []string
		name  string
		zip   bool
	}{
		{[]string{"/home/a/report.zip"}, "report.zip", false}, // one file, sent as it is
		{[]string{`C:\Users\a\x.zip`}, "x.zip", false},
		{[]string{"/home/a/dir"}, "dir.zip", true},
		{[]string{"/home/a/dir/"}, "dir.zip", true},
		{[]string{"/a", "/b"}, "files.zip", true},
		{[]string{"/home/a/report.txt"}, "other.zip", true}, // not the file's name: checked as a zip
	} {
		require.Equal(t, c.zip, IsZipArtifact(c.paths, c.name), "%v %q", c.paths, c.name)
	}
}

// An artifact whose central directory names a path outside the folder
// is refused as validation_failed, the transfer fails and nothing stays
// stored; a clean zip is kept.
func TestReceiveContentRefusesUnsafeZip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := pgtest.NewDB(t)
	site, err := store.SiteInsert(ctx, db.SiteInsertParams{Name: "Files", Slug: "files"})
	require.NoError(t, err)
	_, err = store.DeviceInsert(ctx, db.DeviceInsertParams{Guid: "guid-1", Hostname: "host-1", SiteID: site.ID})
	require.NoError(t, err)
	target := devices.OperationTarget{GUID: "guid-1", Hostname: "host-1", SiteID: site.ID, SiteSlug: "files"}
	svc := New(store, Config{})
	for i, c := range []struct {
		entry string
		ok    bool
	}{
		{"dir/a.txt", true},
		{"../../etc/cron.d/evil", false},
		{"/etc/passwd", false},
		{`dir\..\..\evil`, false},
		{"C:/evil.dll", false},
	} {
		id := "tr-" + string(rune('a'+i))
		_, err := svc.NewDownload(ctx, cairn.TransferID(id), target, "op", []string{"/home/a/dir"})
		require.NoError(t, err)
		require.NoError(t, svc.Start(ctx, cairn.TransferID(id)))
		b := zipOf(t, c.entry)
		sum := sha256.Sum256(b)
		err = svc.ReceiveContent(ctx, "guid-1", cairn.TransferID(id), "dir.zip", func() string { return hex.EncodeToString(sum[:]) }, bytes.NewReader(b))
		snap, gerr := svc.Get(ctx, cairn.TransferID(id))
		require.NoError(t, gerr)
		if c.ok {
			require.NoError(t, err, c.entry)
			require.Equal(t, StateCompleted, snap.Transfer.State)
			continue
		}
		require.Equal(t, cairn.ECodeValidation, cairn.ErrorCode(err), "%q: %v", c.entry, err)
		require.Equal(t, StateFailed, snap.Transfer.State)
		require.Equal(t, cairn.ECodeValidation, snap.Transfer.ErrorCode)
		require.Contains(t, snap.Transfer.ErrorMessage, "refused")
		require.NotNil(t, snap.Transfer.PurgedAt)
		_, cerr := store.FileTransferChunkGet(ctx, db.FileTransferChunkGetParams{TransferID: cairn.TransferID(id), ItemID: 1, Seq: 0})
		require.True(t, db.IsNoRows(cerr), "nothing of %q is stored: %v", c.entry, cerr)
	}
}
