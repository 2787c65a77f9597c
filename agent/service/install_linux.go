package service

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// systemctlTimeout bounds one systemctl call; starting the agent is quick,
// and a hung systemd should not hang the installer forever.
const systemctlTimeout = 90 * time.Second

// InstallResult says what Install did.
type InstallResult struct {
	Binary   string // the binary ExecStart runs
	Copied   bool   // the running binary was copied to Binary
	UnitPath string
	Unit     string // the unit file's content
	// Systemd is true when systemd runs on the host; Started when it was
	// enabled and (re)started.
	Systemd bool
	Started bool
}

// Install puts the agent binary in place, writes the unit and, unless
// NoStart or systemd is not running, enables and (re)starts the service;
// a restart rather than "start" so a reinstall runs the new binary.
func Install(ctx context.Context, o InstallOptions) (InstallResult, error) {
	w := out(o.Out)
	var res InstallResult
	cfgPath, err := loadInstallConfig(o.ConfigPath)
	if err != nil {
		return res, err
	}

	if o.Binary != "" {
		res.Binary, err = existingBinary(o.Binary)
	} else {
		res.Binary, res.Copied, err = copyRunningBinary(orDefault(o.BinaryDest, DefaultBinaryPath))
	}
	if err != nil {
		return res, err
	}
	if res.Copied {
		fmt.Fprintf(w, "installed binary %s\n", res.Binary)
	} else {
		fmt.Fprintf(w, "using binary %s\n", res.Binary)
	}

	res.Unit, err = RenderUnit(UnitOptions{Binary: res.Binary, ConfigPath: cfgPath, Hostname: o.Hostname})
	if err != nil {
		return res, err
	}
	unitDir := orDefault(o.UnitDir, DefaultUnitDir)
	res.UnitPath = filepath.Join(unitDir, UnitName)
	if err := os.MkdirAll(unitDir, 0o755); err != nil {
		return res, hint(err)
	}
	if err := writeFileAtomic(res.UnitPath, bytes.NewReader([]byte(res.Unit)), 0o644); err != nil {
		return res, hint(err)
	}
	fmt.Fprintf(w, "wrote %s (mode 0644)\n", res.UnitPath)

	res.Systemd = systemdRunning(o.systemdDir)
	start := fmt.Sprintf("systemctl daemon-reload && systemctl enable %s && systemctl restart %s", UnitName, UnitName)
	switch {
	case o.NoStart:
		fmt.Fprintf(w, "not started (--no-start); to start it: %s\n", start)
		return res, nil
	case !res.Systemd:
		fmt.Fprintf(w, "systemd is not running on this host (%s is missing), so the service was not enabled or started.\n", orDefault(o.systemdDir, systemdRunDir))
		fmt.Fprintf(w, "Start the agent by hand (as root): %s run --config %s\n", res.Binary, cfgPath)
		fmt.Fprintf(w, "The unit written to %s is:\n%s", res.UnitPath, res.Unit)
		return res, nil
	}
	for _, args := range [][]string{{"daemon-reload"}, {"enable", UnitName}, {"restart", UnitName}} {
		if _, err := systemctl(ctx, o.systemctl, args...); err != nil {
			return res, err
		}
	}
	res.Started = true
	fmt.Fprintf(w, "enabled and started %s; check it with: systemctl status %s\n", UnitName, UnitName)
	return res, nil
}

// UninstallResult says what Uninstall did.
type UninstallResult struct {
	UnitPath string
	// UnitRemoved is false when there was no unit file to remove.
	UnitRemoved bool
	// Stopped is true when systemd had this unit file loaded and it was
	// stopped and disabled.
	Stopped bool
	// Purged lists the files Purge removed.
	Purged []string
}

// Uninstall stops and disables the service (when systemd runs and has this
// very unit file loaded), removes the unit and reloads systemd. agent.json
// stays unless Purge: the device identity in it survives a reinstall.
func Uninstall(ctx context.Context, o UninstallOptions) (UninstallResult, error) {
	w := out(o.Out)
	res := UninstallResult{UnitPath: filepath.Join(orDefault(o.UnitDir, DefaultUnitDir), UnitName)}
	_, err := os.Lstat(res.UnitPath)
	switch {
	case errors.Is(err, os.ErrNotExist):
		fmt.Fprintf(w, "no unit at %s; nothing to stop or remove\n", res.UnitPath)
	case err != nil:
		return res, hint(err)
	default:
		// Only a unit systemd loaded from this file is stopped: a unit dir
		// systemd does not read (a staging tree, a test) must not stop a
		// service installed elsewhere under the same name.
		loaded := false
		if systemdRunning(o.systemdDir) {
			frag, err := systemctl(ctx, o.systemctl, "show", "--property=FragmentPath", "--value", UnitName)
			if err != nil {
				return res, err
			}
			loaded = sameFile(strings.TrimSpace(frag), res.UnitPath)
		}
		if loaded {
			if _, err := systemctl(ctx, o.systemctl, "disable", "--now", UnitName); err != nil {
				return res, err
			}
			res.Stopped = true
			fmt.Fprintf(w, "stopped and disabled %s\n", UnitName)
		}
		if err := os.Remove(res.UnitPath); err != nil {
			return res, hint(err)
		}
		res.UnitRemoved = true
		fmt.Fprintf(w, "removed %s\n", res.UnitPath)
		if loaded {
			if _, err := systemctl(ctx, o.systemctl, "daemon-reload"); err != nil {
				return res, err
			}
		}
	}
	if !o.Purge {
		if o.ConfigPath != "" {
			fmt.Fprintf(w, "kept %s (use --purge to remove it)\n", o.ConfigPath)
		}
		return res, nil
	}
	purged, err := purge(o.ConfigPath, orDefault(o.BinaryDest, DefaultBinaryPath))
	res.Purged = purged
	for _, p := range purged {
		fmt.Fprintf(w, "removed %s\n", p)
	}
	return res, err
}

func systemdRunning(dir string) bool {
	info, err := os.Stat(orDefault(dir, systemdRunDir))
	return err == nil && info.IsDir()
}

// systemctl runs systemctl (or the test's stand-in) and returns stdout; a
// failure carries its stderr, which says why.
func systemctl(ctx context.Context, prog []string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, systemctlTimeout)
	defer cancel()
	if len(prog) == 0 {
		prog = []string{"systemctl"}
	}
	cmd := exec.CommandContext(ctx, prog[0], append(prog[1:len(prog):len(prog)], args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("systemctl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}
