package operations

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	"github.com/godbus/dbus/v5"

	"github.com/cairn-rmm/cairn/agent/inventory"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/toolexec"
)

// maxOutputTail bounds the script output quoted in a failure message.
const maxOutputTail = 2 << 10

// controlService runs action on the service through systemd, or through
// the SysV init script in initDir where those are the services
// (Collector.UsesInitScripts). It returns the name the service is listed under.
func controlService(ctx context.Context, initScripts bool, initDir, name, action string) (string, error) {
	if !initScripts {
		return systemdAction(ctx, name, action)
	}
	return name, sysvAction(ctx, initDir, name, action)
}

// connectSystemd reaches systemd's D-Bus API (a variable so that tests
// can make it unreachable on any host, systemd's own included, and reach
// the systemctl path without touching the host's units).
var connectSystemd = sddbus.NewWithContext

// systemdAction queues the job over D-Bus and waits for its result, as
// systemctl does. Where systemd's D-Bus cannot be reached (no system bus,
// as the inventory also allows for) it runs systemctl instead.
func systemdAction(ctx context.Context, name, action string) (string, error) {
	unit := name
	if !strings.HasSuffix(unit, ".service") {
		unit += ".service" // the console may send "ssh" for ssh.service
	}
	conn, err := connectSystemd(ctx)
	if err != nil {
		return unit, systemctlAction(ctx, unit, action, err)
	}
	defer conn.Close()
	load, err := conn.GetUnitPropertyContext(ctx, unit, "LoadState")
	if err != nil {
		return unit, dbusError(unit, err)
	}
	if v, _ := load.Value.Value().(string); v == "not-found" {
		return unit, opError(proto.CodeOpNotFound, "no service %s", unit)
	}
	done := make(chan string, 1)
	switch action {
	case proto.ServiceStart:
		_, err = conn.StartUnitContext(ctx, unit, "replace", done)
	case proto.ServiceStop:
		_, err = conn.StopUnitContext(ctx, unit, "replace", done)
	case proto.ServiceRestart:
		_, err = conn.RestartUnitContext(ctx, unit, "replace", done)
	}
	if err != nil {
		return unit, dbusError(unit, err)
	}
	select {
	case result := <-done:
		// "skipped": nothing to do (stopping a stopped unit can report it).
		if result != "done" && result != "skipped" {
			return unit, opError(proto.CodeOpFailed, "systemd's %s job for %s ended %q; see journalctl -u %s", action, unit, result, unit)
		}
		return unit, nil
	case <-ctx.Done():
		return unit, ctx.Err()
	}
}

// systemctlAction runs `systemctl <action> <unit>` (which waits for the
// job, as the D-Bus path does) and confirms the outcome with `systemctl
// is-active`: after a start or restart the unit must be active, after a
// stop it must not be. busErr is why D-Bus was not used, quoted when
// systemctl is missing too.
func systemctlAction(ctx context.Context, unit, action string, busErr error) error {
	load, _, err := toolexec.Run(ctx, nil, "systemctl", "show", "--property=LoadState", "--value", "--", unit)
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return opError(proto.CodeOpFailed, "connecting to systemd: %v; and no systemctl: %v", busErr, err)
		}
		return systemctlError(unit, err)
	}
	if strings.TrimSpace(load) == "not-found" {
		return opError(proto.CodeOpNotFound, "no service %s", unit)
	}
	if _, _, err := toolexec.Run(ctx, nil, "systemctl", action, "--", unit); err != nil {
		return systemctlError(unit, err)
	}
	// is-active exits 3 (4: no such unit) when the unit is not active;
	// its output is the state either way.
	out, _, err := toolexec.Run(ctx, []int{1, 2, 3, 4}, "systemctl", "is-active", "--", unit)
	if err != nil {
		return systemctlError(unit, err)
	}
	state := strings.TrimSpace(out)
	active := state == "active" || state == "reloading" || state == "refreshing"
	if action == proto.ServiceStop {
		if active || state == "deactivating" {
			return opError(proto.CodeOpFailed, "systemctl stop %s finished but the unit is %s; see journalctl -u %s", unit, state, unit)
		}
		return nil
	}
	if !active {
		return opError(proto.CodeOpFailed, "systemctl %s %s finished but the unit is %s; see journalctl -u %s", action, unit, state, unit)
	}
	return nil
}

// systemctlError maps systemctl's refusals to operation codes, as
// dbusError does for D-Bus's.
func systemctlError(unit string, err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "not found") || strings.Contains(msg, "not loaded"):
		return opError(proto.CodeOpNotFound, "no service %s", unit)
	case strings.Contains(msg, "Access denied") || strings.Contains(msg, "authentication required") ||
		strings.Contains(msg, "Permission denied"):
		return opError(proto.CodeOpPermission, "systemd refused %s: %v", unit, err)
	}
	return opError(proto.CodeOpFailed, "systemctl: %s: %v", unit, err)
}

// dbusError maps systemd's D-Bus refusals to operation codes.
func dbusError(unit string, err error) error {
	var de dbus.Error
	if errors.As(err, &de) {
		switch de.Name {
		case "org.freedesktop.systemd1.NoSuchUnit", "org.freedesktop.systemd1.LoadFailed":
			return opError(proto.CodeOpNotFound, "no service %s", unit)
		case "org.freedesktop.DBus.Error.AccessDenied", "org.freedesktop.DBus.Error.InteractiveAuthorizationRequired":
			return opError(proto.CodeOpPermission, "systemd refused %s: %v", unit, err)
		}
	}
	return opError(proto.CodeOpFailed, "systemd: %s: %v", unit, err)
}

// sysvAction runs "<initDir>/<name> <action>". Its output goes to a file,
// not a pipe: a daemon the script starts inherits the output and would
// hold a pipe open for as long as it runs. The script gets its own
// session so the daemon is not in the agent's process group.
func sysvAction(ctx context.Context, initDir, name, action string) error {
	if !inventory.IsInitScript(initDir, name) {
		return opError(proto.CodeOpNotFound, "no init script %q in %s", name, initDir)
	}
	out, err := os.CreateTemp("", "cairn-service-*.log")
	if err != nil {
		return opError(proto.CodeOpFailed, "%s %s: %v", action, name, err)
	}
	defer os.Remove(out.Name())
	defer out.Close()

	path := filepath.Join(initDir, name)
	cmd := exec.CommandContext(ctx, path, action)
	cmd.Env = append(os.Environ(), "LC_ALL=C", "LANG=C", "LANGUAGE=")
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.As(err, &exit):
		return opError(proto.CodeOpFailed, "%s %s exited with status %d: %s", path, action, exit.ExitCode(), tail(out))
	case errors.Is(err, os.ErrPermission):
		return opError(proto.CodeOpPermission, "%s %s: %v", path, action, err)
	default:
		return opError(proto.CodeOpFailed, "%s %s: %v", path, action, err)
	}
}

// tail is the end of f's content, at most maxOutputTail bytes starting at
// a line, for an error message.
func tail(f *os.File) string {
	fi, err := f.Stat()
	if err != nil {
		return "output unreadable"
	}
	off := max(fi.Size()-maxOutputTail, 0)
	b, err := io.ReadAll(io.NewSectionReader(f, off, fi.Size()-off))
	if err != nil {
		return "output unreadable"
	}
	if off > 0 {
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
		b = append([]byte("... "), b...)
	}
	if s := strings.TrimSpace(string(b)); s != "" {
		return s
	}
	return "no output"
}
