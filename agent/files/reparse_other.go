//go:build !linux && !windows

package files

import "io/fs"

func isReparsePoint(_ string, fi fs.FileInfo) bool {
	return fi.Mode()&(fs.ModeSymlink|fs.ModeIrregular) != 0
}
