package service

// Helpers both platforms' install and uninstall use.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/cairn-rmm/cairn/agent"
)

// loadInstallConfig checks that agent.json exists and names a server,
// and returns its absolute path.
func loadInstallConfig(path string) (string, error) {
	cfgPath, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	c, err := agent.Load(cfgPath)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("config %s does not exist: enroll the agent first (cairn-agent --config %s enroll ...), then install", cfgPath, cfgPath)
	case err != nil:
		return "", fmt.Errorf("config %s: %w", cfgPath, hint(err))
	case c.ServerURL == "":
		return "", fmt.Errorf("config %s has no server_url: enroll the agent first, then install", cfgPath)
	}
	return cfgPath, nil
}

// purge removes agent.json, its lock and temp files, the config directory
// when that leaves it empty, and the copied binary.
func purge(configPath, binary string) ([]string, error) {
	var removed []string
	var errs []error
	rm := func(p string) {
		if err := os.Remove(p); err == nil {
			removed = append(removed, p)
		} else if !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, hint(err))
		}
	}
	if configPath != "" {
		temps, _ := filepath.Glob(configPath + ".tmp-*")
		for _, p := range append([]string{configPath, configPath + ".lock"}, temps...) {
			rm(p)
		}
		// Remove fails on a directory that still holds other files, which
		// is what should happen: they are not ours.
		if dir := filepath.Dir(configPath); len(removed) > 0 {
			if err := os.Remove(dir); err == nil {
				removed = append(removed, dir)
			}
		}
	}
	rm(binary)
	return removed, errors.Join(errs...)
}

func existingBinary(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	info, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("--binary: %w", err)
	}
	if !info.Mode().IsRegular() || !executable(abs, info) {
		return "", fmt.Errorf("--binary %s is not an executable file", abs)
	}
	return abs, nil
}

// copyRunningBinary copies this executable to dest, unless it already is
// dest. The copy goes to a temp file renamed over dest, so a running
// agent's binary is replaced, never rewritten in place.
func copyRunningBinary(dest string) (string, bool, error) {
	self, err := os.Executable()
	if err != nil {
		return "", false, fmt.Errorf("find the running binary: %w", err)
	}
	if self, err = filepath.EvalSymlinks(self); err != nil {
		return "", false, fmt.Errorf("find the running binary: %w", err)
	}
	if sameFile(self, dest) {
		return dest, false, nil
	}
	src, err := os.Open(self)
	if err != nil {
		return "", false, err
	}
	defer src.Close()
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return "", false, hint(err)
	}
	if err := writeFileAtomic(dest, src, 0o755); err != nil {
		return "", false, hint(err)
	}
	return dest, true, nil
}

// writeFileAtomic writes r to a temp file next to path with mode, syncs
// it and renames it over path.
func writeFileAtomic(path string, r io.Reader, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	done := false
	defer func() {
		if !done {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err := io.Copy(tmp, r); err != nil {
		return err
	}
	// CreateTemp makes the file 0600 whatever the umask.
	if err := tmp.Chmod(mode); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	done = true
	return nil
}

func sameFile(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	ia, err := os.Stat(a)
	if err != nil {
		return false
	}
	ib, err := os.Stat(b)
	return err == nil && os.SameFile(ia, ib)
}

// hint adds what to do to the failure people hit most: not being root
// (Administrator on Windows).
func hint(err error) error {
	if errors.Is(err, os.ErrPermission) {
		return fmt.Errorf("%w (run as %s)", err, adminName)
	}
	return err
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func out(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// LogDir is where the service writes its logs: "logs" next to agent.json
// (%ProgramData%\Cairn\logs for the default config).
func LogDir(configPath string) string { return filepath.Join(filepath.Dir(configPath), "logs") }
