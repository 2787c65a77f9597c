package inventory

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/windows/registry"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/roles"
	"github.com/cairn-rmm/cairn/internal/testdir"
)

// pngICO is a real .ico file holding one PNG image (the Vista format).
func pngICO(t *testing.T) []byte {
	t.Helper()
	var img bytes.Buffer
	require.NoError(t, png.Encode(&img, image.NewRGBA(image.Rect(0, 0, 16, 16))))
	var ico bytes.Buffer
	ico.Write([]byte{0, 0, 1, 0, 1, 0})
	ico.Write([]byte{16, 16, 0, 0, 1, 0, 32, 0})
	_ = binary.Write(&ico, binary.LittleEndian, uint32(img.Len()))
	_ = binary.Write(&ico, binary.LittleEndian, uint32(22))
	ico.Write(img.Bytes())
	return ico.Bytes()
}

// The uninstall entries' DisplayIcon, as installers write it (an
// REG_EXPAND_SZ naming an .exe's icon, a plain .ico path), is read from
// the registry and the icons go with the software rows: the .exe's icon
// group is made an .ico file (Wine's notepad.exe has one), the .ico sent
// as it is.
func TestWindowsDisplayIcons(t *testing.T) {
	t.Parallel()
	suffix := strings.ToUpper(t.Name()) + "-" + strconv.Itoa(os.Getpid())
	ico := pngICO(t)
	icoPath := filepath.Join(testdir.New(t), "app.ico")
	require.NoError(t, os.WriteFile(icoPath, ico, 0o600))
	write := func(name string, set func(k registry.Key)) {
		t.Helper()
		path := uninstallPath + `\` + name + "-" + suffix
		k, _, err := registry.CreateKey(registry.CURRENT_USER, path, registry.ALL_ACCESS)
		require.NoError(t, err)
		defer k.Close()
		require.NoError(t, k.SetStringValue("DisplayName", name+" "+suffix))
		set(k)
		t.Cleanup(func() { _ = registry.DeleteKey(registry.CURRENT_USER, path) })
	}
	write("CairnExeIcon", func(k registry.Key) {
		require.NoError(t, k.SetExpandStringValue("DisplayIcon", `%SystemRoot%\system32\notepad.exe,0`))
	})
	write("CairnIcoIcon", func(k registry.Key) { require.NoError(t, k.SetStringValue("DisplayIcon", `"`+icoPath+`"`)) })
	write("CairnNoIcon", func(k registry.Key) { require.NoError(t, k.SetStringValue("DisplayIcon", `C:\no\such.exe,0`)) })

	c := New(roles.New(nil), Options{})
	inv, err := c.refresh(t.Context(), roles.SoftwareManagement)
	require.NoError(t, err)
	icons := map[string]proto.SoftwareIcon{}
	for _, ic := range inv.SoftwareIcons {
		icons[ic.Hash] = ic
	}
	got := map[string]string{}
	for _, r := range inv.Software {
		if strings.HasSuffix(r.Name, suffix) {
			got[strings.TrimSuffix(r.Name, " "+suffix)] = r.IconHash
		}
	}
	require.Len(t, got, 3)
	require.Empty(t, got["CairnNoIcon"])
	exe := icons[got["CairnExeIcon"]]
	require.Equal(t, proto.IconICO, exe.ContentType, "notepad's icon group, as an .ico file")
	require.True(t, bytes.HasPrefix(exe.Data, []byte{0, 0, 1, 0}))
	require.Equal(t, proto.SoftwareIcon{Hash: hashOf(ico), ContentType: proto.IconICO, Data: ico}, icons[got["CairnIcoIcon"]])
}
