//go:build !windows

package service

import "os"

// adminName is who may install services.
const adminName = "root"

// executable: some execute bit is set.
func executable(_ string, info os.FileInfo) bool { return info.Mode().Perm()&0o111 != 0 }
