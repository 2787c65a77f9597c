//go:build windows

package files

import (
	"golang.org/x/sys/windows"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// roots lists the drives Windows reports, typed from GetDriveType.
func roots() (proto.FileRoots, error) {
	mask, err := windows.GetLogicalDrives()
	if err != nil {
		return proto.FileRoots{}, refuse(proto.CodeOpFailed, "list drives: %v", err)
	}
	out := proto.FileRoots{Roots: []proto.FileRoot{}}
	for i := 0; i < 26; i++ {
		if mask&(1<<uint(i)) == 0 {
			continue
		}
		root := string(rune('A'+i)) + `:\`
		p, _ := windows.UTF16PtrFromString(root)
		typ := "fixed"
		switch windows.GetDriveType(p) {
		case windows.DRIVE_REMOVABLE:
			typ = "removable"
		case windows.DRIVE_REMOTE:
			typ = "network"
		case windows.DRIVE_CDROM:
			typ = "cdrom"
		case windows.DRIVE_NO_ROOT_DIR, windows.DRIVE_UNKNOWN:
			continue
		}
		out.Roots = append(out.Roots, proto.FileRoot{Path: root, Type: typ, Label: root})
	}
	return out, nil
}
