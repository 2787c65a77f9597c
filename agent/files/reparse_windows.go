//go:build windows

package files

import (
	"io/fs"

	"golang.org/x/sys/windows"
)

// isReparsePoint reports whether p itself (not what it points to) is a
// symbolic link, junction, mount point or any other reparse point: the
// attributes of the name, which GetFileAttributes never follows, and
// Lstat's mode as well.
func isReparsePoint(p string, fi fs.FileInfo) bool {
	if fi.Mode()&(fs.ModeSymlink|fs.ModeIrregular) != 0 {
		return true
	}
	u, err := windows.UTF16PtrFromString(p)
	if err != nil {
		return true
	}
	a, err := windows.GetFileAttributes(u)
	return err != nil || a&windows.FILE_ATTRIBUTE_REPARSE_POINT != 0
}
