package inventory

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/roles"
)

func testPNG(t *testing.T, size int, c color.Color) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, size, size))
	for x := range size {
		for y := range size {
			img.Set(x, y, c)
		}
	}
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	return buf.Bytes()
}

func write(t *testing.T, path string, data []byte) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return path
}

// iconTree is a machine's desktop entries and icon theme, written by the
// test: real .desktop files and real PNG and SVG icons.
type iconTree struct {
	d                   desktopIcons
	gimp, editor, pixel []byte
}

func newIconTree(t *testing.T) iconTree {
	t.Helper()
	root := t.TempDir()
	apps, themes, pixmaps := filepath.Join(root, "applications"), filepath.Join(root, "icons"), filepath.Join(root, "pixmaps")
	tr := iconTree{gimp: testPNG(t, 48, color.RGBA{B: 255, A: 255}), pixel: testPNG(t, 32, color.RGBA{R: 9, A: 255}),
		editor: []byte(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16"/></svg>`)}
	// By theme name: a 48x48 PNG beats a larger one.
	write(t, filepath.Join(themes, "hicolor", "48x48", "apps", "gimp.png"), tr.gimp)
	write(t, filepath.Join(themes, "hicolor", "256x256", "apps", "gimp.png"), testPNG(t, 256, color.White))
	write(t, filepath.Join(apps, "gimp.desktop"), []byte("[Desktop Entry]\nType=Application\nName=GIMP\nName[de]=GIMP\nIcon=gimp\nExec=gimp %U\n"))
	// Only scalable: the SVG.
	write(t, filepath.Join(themes, "hicolor", "scalable", "apps", "org.example.Editor.svg"), tr.editor)
	write(t, filepath.Join(apps, "org.example.Editor.desktop"), []byte("[Desktop Entry]\nType=Application\nIcon=org.example.Editor\n"))
	// By absolute path.
	pix := write(t, filepath.Join(pixmaps, "pixel.png"), tr.pixel)
	write(t, filepath.Join(apps, "pixel.desktop"), []byte("[Desktop Entry]\nType=Application\nIcon="+pix+"\n"))
	// Hidden, not an application, no icon file, not owned by a package.
	write(t, filepath.Join(apps, "hidden.desktop"), []byte("[Desktop Entry]\nType=Application\nHidden=true\nIcon=gimp\n"))
	write(t, filepath.Join(apps, "link.desktop"), []byte("[Desktop Entry]\nType=Link\nIcon=gimp\n"))
	write(t, filepath.Join(apps, "missing.desktop"), []byte("[Desktop Entry]\nType=Application\nIcon=no-such-icon\n"))
	write(t, filepath.Join(apps, "stray.desktop"), []byte("[Desktop Entry]\nType=Application\nIcon=gimp\n"))
	// An icon that is not an image is no icon.
	write(t, filepath.Join(pixmaps, "notes.png"), []byte("not a png"))
	write(t, filepath.Join(apps, "notes.desktop"), []byte("[Desktop Entry]\nType=Application\nIcon=notes\n"))
	owners := map[string]string{"gimp.desktop": "gimp", "org.example.Editor.desktop": "example-editor", "pixel.desktop": "pixel",
		"hidden.desktop": "hidden-pkg", "link.desktop": "link-pkg", "missing.desktop": "missing-pkg", "notes.desktop": "notes"}
	tr.d = desktopIcons{Apps: []string{apps, filepath.Join(root, "no-such-dir")}, Themes: themes, Pixmaps: pixmaps,
		Owners: func(_ context.Context, paths []string) (map[string]string, error) {
			out := map[string]string{}
			for _, p := range paths {
				if pkg, ok := owners[filepath.Base(p)]; ok {
					out[p] = pkg
				}
			}
			return out, nil
		}}
	return tr
}

func TestDesktopEntryIcons(t *testing.T) {
	t.Parallel()
	tr := newIconTree(t)
	found, err := tr.d.find(t.Context())
	require.NoError(t, err)
	require.Len(t, found, 3, "gimp, the editor and pixel; nothing else has an icon")
	require.Equal(t, proto.SoftwareIcon{Hash: hashOf(tr.gimp), ContentType: proto.IconPNG, Data: tr.gimp}, found["gimp"])
	require.Equal(t, proto.SoftwareIcon{Hash: hashOf(tr.editor), ContentType: proto.IconSVG, Data: tr.editor}, found["example-editor"])
	require.Equal(t, hashOf(tr.pixel), found["pixel"].Hash)

	// No entries (a headless server): no icons, and the package database
	// is not asked.
	none := desktopIcons{Apps: []string{t.TempDir()}, Owners: func(context.Context, []string) (map[string]string, error) {
		return nil, errors.New("must not be asked")
	}}
	found, err = none.find(t.Context())
	require.NoError(t, err)
	require.Empty(t, found)
}

func TestParseDpkgOwners(t *testing.T) {
	t.Parallel()
	out := "gimp: /usr/share/applications/gimp.desktop\n" +
		"libreoffice-core:amd64, libreoffice-common: /usr/share/applications/libreoffice-startcenter.desktop\n" +
		"diversion by foo from: /usr/share/applications/x.desktop\n" +
		"dpkg-query: no path found matching pattern /usr/share/applications/local.desktop\n"
	require.Equal(t, map[string]string{"/usr/share/applications/gimp.desktop": "gimp",
		"/usr/share/applications/libreoffice-startcenter.desktop": "libreoffice-core"}, parseDpkgOwners(out))
}

// Overrides beat what was found: an uploaded icon (hash only), none, or a
// file on this machine; rows without either keep the found icon.
func TestApplyIcons(t *testing.T) {
	t.Parallel()
	tr := newIconTree(t)
	found, err := tr.d.find(t.Context())
	require.NoError(t, err)
	uploaded := strings.Repeat("ab", 32)
	ov := proto.SoftwareOverrides{IconOverrides: []proto.SoftwareIconOverride{
		{NameKey: "gimp", IconHash: &uploaded},
		{NameKey: "example-editor", ClearIcon: true},
		{NameKey: "coreutils", DisplayIcon: filepath.Join(tr.d.Pixmaps, "pixel.png")},
	}}
	rows := []proto.Software{{Name: "GIMP"}, {Name: "example-editor"}, {Name: "pixel", IconHash: "stale"}, {Name: "coreutils"}, {Name: "bash"}}
	icons := ApplyIcons(rows, found, ov, readIconFile)
	require.Equal(t, []string{uploaded, "", hashOf(tr.pixel), hashOf(tr.pixel), ""},
		[]string{rows[0].IconHash, rows[1].IconHash, rows[2].IconHash, rows[3].IconHash, rows[4].IconHash})
	require.Len(t, icons, 1, "the pixel icon once; the uploaded one is the Engine's")
	require.Equal(t, tr.pixel, icons[0].Data)
}

type overridesCaller struct {
	calls atomic.Int32
	fail  atomic.Bool
	rev   atomic.Value
}

func (c *overridesCaller) Call(_ context.Context, method, path string, _, out any) error {
	c.calls.Add(1)
	if method != http.MethodGet || path != proto.PathSoftwareOverrides {
		return errors.New("unexpected call " + method + " " + path)
	}
	if c.fail.Load() {
		return errors.New("503")
	}
	*out.(*proto.SoftwareOverrides) = proto.SoftwareOverrides{Revision: c.rev.Load().(string)}
	return nil
}

// Overrides are fetched once per TTL, again after Invalidate, and a
// failed fetch keeps the last good set.
func TestOverridesCache(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	o := &Overrides{TTL: time.Minute, Now: func() time.Time { return now }}
	_, err := o.Get(t.Context())
	require.Error(t, err, "no connection yet")
	c := &overridesCaller{}
	c.rev.Store("r1")
	o.Session(c)
	got, err := o.Get(t.Context())
	require.NoError(t, err)
	require.Equal(t, "r1", got.Revision)
	c.rev.Store("r2")
	got, _ = o.Get(t.Context())
	require.Equal(t, "r1", got.Revision, "cached")
	require.EqualValues(t, 1, c.calls.Load())
	o.Invalidate()
	got, _ = o.Get(t.Context())
	require.Equal(t, "r2", got.Revision)
	now = now.Add(2 * time.Minute)
	c.fail.Store(true)
	got, err = o.Get(t.Context())
	require.Error(t, err)
	require.Equal(t, "r2", got.Revision, "the last good set")
	require.EqualValues(t, 3, c.calls.Load())
}

// The software refresh an operator asks for fetches the overrides afresh,
// so an icon override shows at once.
func TestSoftwareRefreshFetchesOverrides(t *testing.T) {
	t.Parallel()
	c := &overridesCaller{}
	c.rev.Store("r1")
	o := &Overrides{}
	o.Session(c)
	var seen []string
	sw := part{role: roles.SoftwareManagement, name: "software", timeout: time.Minute,
		run: func(ctx context.Context, col *Collector, inv *proto.Inventory) error {
			ov, err := col.opts.Overrides.Get(ctx)
			seen = append(seen, ov.Revision)
			inv.Software = []proto.Software{{Name: "x"}}
			return err
		}}
	col := newCollector(roles.New(nil), Options{Overrides: o}, []part{sw})
	_, err := col.Software(t.Context())
	require.NoError(t, err)
	c.rev.Store("r2")
	_, err = col.Software(t.Context())
	require.NoError(t, err)
	require.Equal(t, []string{"r1", "r2"}, seen)
}
