package files

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
)

func code(err error) string {
	var pe *proto.Error
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

func TestCleanPath(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		goos, in, want, code string
	}{
		{"linux", "/", "/", ""},
		{"linux", "/etc/", "/etc", ""},
		{"linux", "//etc//./hosts", "/etc/hosts", ""},
		{"linux", "", "", proto.CodeFilePathNotAbsolute},
		{"linux", "etc/hosts", "", proto.CodeFilePathNotAbsolute},
		{"linux", `C:\Windows`, "", proto.CodeFilePathNotAbsolute},
		{"linux", "/etc/../root", "", proto.CodeFilePathInvalid},
		{"linux", "/tmp/a\x00b", "", proto.CodeFilePathInvalid},
		{"linux", "/tmp/..hidden", "/tmp/..hidden", ""},
		{"windows", `C:\`, `C:\`, ""},
		{"windows", `c:\Windows\System32\`, `C:\Windows\System32`, ""},
		{"windows", `C:/Users/me`, `C:\Users\me`, ""},
		{"windows", `\\server\share`, `\\server\share`, ""},
		{"windows", `\\server\share\dir\f.txt`, `\\server\share\dir\f.txt`, ""},
		{"windows", `\\server`, "", proto.CodeFilePathNotAbsolute},
		{"windows", `\\?\C:\Windows`, "", proto.CodeFilePathInvalid},
		{"windows", `\\.\PhysicalDrive0`, "", proto.CodeFilePathInvalid},
		{"windows", `//./pipe/x`, "", proto.CodeFilePathInvalid},
		{"windows", `C:\a\..\b`, "", proto.CodeFilePathInvalid},
		{"windows", `C:\temp\NUL`, "", proto.CodeFilePathInvalid},
		{"windows", `C:\temp\com1.txt`, "", proto.CodeFilePathInvalid},
		{"windows", `C:\temp\a:b`, "", proto.CodeFilePathInvalid},
		{"windows", `C:\temp\console`, `C:\temp\console`, ""},
		{"windows", `C:relative`, "", proto.CodeFilePathNotAbsolute},
		{"windows", `\Windows`, "", proto.CodeFilePathNotAbsolute},
		{"windows", `Windows\System32`, "", proto.CodeFilePathNotAbsolute},
		{"windows", "C:\\a\x00", "", proto.CodeFilePathInvalid},
	} {
		got, err := CleanPath(c.goos, c.in)
		require.Equal(t, c.code, code(err), "%s %q: %v", c.goos, c.in, err)
		require.Equal(t, c.want, got, "%s %q", c.goos, c.in)
	}
}

func TestPathHelpers(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		goos, p, dir, name string
		ok, root           bool
	}{
		{"linux", "/", "", "", false, true},
		{"linux", "/etc", "/", "etc", true, false},
		{"linux", "/etc/hosts", "/etc", "hosts", true, false},
		{"windows", `C:\`, "", "", false, true},
		{"windows", `C:\Temp`, `C:\`, "Temp", true, false},
		{"windows", `C:\Temp\a.txt`, `C:\Temp`, "a.txt", true, false},
		{"windows", `\\srv\share`, "", "", false, true},
		{"windows", `\\srv\share\a`, `\\srv\share`, "a", true, false},
	} {
		dir, name, ok := Parent(c.goos, c.p)
		require.Equal(t, []any{c.dir, c.name, c.ok}, []any{dir, name, ok}, "%s %q", c.goos, c.p)
		require.Equal(t, c.root, IsRoot(c.goos, c.p), "%s %q", c.goos, c.p)
	}
	require.Equal(t, "/a", JoinPath("linux", "/", "a"))
	require.Equal(t, "/a/b", JoinPath("linux", "/a", "b"))
	require.Equal(t, `C:\b`, JoinPath("windows", `C:\`, "b"))
	require.Equal(t, `C:\a\b`, JoinPath("windows", `C:\a`, "b"))

	require.True(t, Within("linux", "/a", "/a/b"))
	require.True(t, Within("linux", "/a", "/a"))
	require.False(t, Within("linux", "/a", "/ab"))
	require.False(t, Within("linux", "/A", "/a/b"))
	require.True(t, Within("windows", `C:\A`, `c:\a\b`))
	require.True(t, Within("linux", "/", "/x"))

	require.True(t, SameName("windows", "Readme.TXT", "README.txt"))
	require.False(t, SameName("linux", "Readme.TXT", "README.txt"))

	for _, c := range []struct {
		goos, name string
		ok         bool
	}{
		{"linux", "a.txt", true}, {"linux", `a\b`, true}, {"linux", "a/b", false}, {"linux", "..", false},
		{"linux", "", false}, {"linux", "a\x00", false}, {"windows", `a\b`, false}, {"windows", "aux", false},
		{"windows", "a?", false}, {"windows", "report.txt", true},
	} {
		require.Equal(t, c.ok, CheckName(c.goos, c.name) == nil, "%s %q", c.goos, c.name)
	}
}

func TestIsText(t *testing.T) {
	t.Parallel()
	require.True(t, IsText([]byte("héllo\tworld\r\n\x1b[0m")))
	require.False(t, IsText([]byte("a\x00b")))
	require.False(t, IsText([]byte{0xff, 0xfe}))
	require.False(t, IsText([]byte("a\x01b")))
}
