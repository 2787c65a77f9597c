package inventory

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
)

func TestParseDisplayIcon(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in    string
		path  string
		index int
		ok    bool
	}{
		{`C:\Program Files\App\app.exe,0`, `C:\Program Files\App\app.exe`, 0, true},
		{`"C:\Program Files\App\app.exe",2`, `C:\Program Files\App\app.exe`, 2, true},
		{`"C:\Program Files\App\app.exe", -101`, `C:\Program Files\App\app.exe`, -101, true},
		{`C:\Program Files\App\app.ico`, `C:\Program Files\App\app.ico`, 0, true},
		{` "C:\App, Inc\app.ico" `, `C:\App, Inc\app.ico`, 0, true},
		{`/usr/share/pixmaps/app.png`, `/usr/share/pixmaps/app.png`, 0, true},
		{``, ``, 0, false},
		{`""`, ``, 0, false},
		{`",3`, ``, 0, false},
	}
	for _, c := range cases {
		path, index, ok := parseDisplayIcon(c.in)
		require.Equal(t, c.ok, ok, c.in)
		if c.ok {
			require.Equal(t, c.path, path, c.in)
			require.Equal(t, c.index, index, c.in)
		}
	}
}

// Each entry's DisplayIcon is read once per value and given to its
// product; entries without one, or whose icon cannot be read, get none.
func TestDisplayIcons(t *testing.T) {
	t.Parallel()
	icon := proto.SoftwareIcon{Hash: "h1", ContentType: proto.IconICO, Data: []byte{0, 0, 1, 0, 1, 0}}
	reads := map[string]int{}
	load := func(s string) (proto.SoftwareIcon, error) {
		reads[s]++
		if s == `C:\good.exe,0` {
			return icon, nil
		}
		return proto.SoftwareIcon{}, errNotIcon
	}
	got := displayIcons([]uninstallEntry{
		{DisplayName: "Good App", DisplayIcon: `C:\good.exe,0`},
		{DisplayName: "Good App Helper", DisplayIcon: `C:\good.exe,0`},
		{DisplayName: "Broken", DisplayIcon: `C:\broken.ico`},
		{DisplayName: "Plain"},
	}, load)
	require.Equal(t, map[string]proto.SoftwareIcon{"good app": icon, "good app helper": icon}, got)
	require.Equal(t, map[string]int{`C:\good.exe,0`: 1, `C:\broken.ico`: 1}, reads)
}

func hashOf(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
