package service

import (
	"os"
	"path/filepath"
	"strings"
)

// adminName is who may install services.
const adminName = "Administrator"

// executable: Windows has no execute bit; the SCM runs .exe files.
func executable(path string, _ os.FileInfo) bool {
	return strings.EqualFold(filepath.Ext(path), ".exe")
}
