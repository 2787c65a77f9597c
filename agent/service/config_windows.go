package service

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/windows"

	"github.com/cairn-rmm/cairn/agent"
)

// defaultConfigPath is %ProgramData%\Cairn\agent.json, the ProgramData
// known folder asked of the shell (the variable can be missing from a
// service's or a scheduled task's environment).
func defaultConfigPath() string {
	return filepath.Join(knownFolder(windows.FOLDERID_ProgramData, "ProgramData", `C:\ProgramData`), "Cairn", agent.FileName)
}

// knownFolder is a known folder's path, else the environment variable
// that normally names it, else Windows' default.
func knownFolder(id *windows.KNOWNFOLDERID, env, def string) string {
	if p, err := windows.KnownFolderPath(id, 0); err == nil && p != "" {
		return p
	}
	if p := os.Getenv(env); p != "" {
		return p
	}
	return def
}
