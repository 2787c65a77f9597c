package inventory

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/roles"
)

// statusTimeout bounds one init script's status call: a script that hangs
// shows as unknown instead of costing the whole service list.
const statusTimeout = 5 * time.Second

// SysV service states, from the LSB exit codes of "<script> status".
const (
	SysVRunning = "running" // exit 0
	SysVStopped = "stopped" // exit 3
	SysVUnknown = "unknown" // anything else: no status action, dead with a pidfile, ...
)

// notServices are files in init.d that are not services.
var notServices = map[string]bool{"README": true, "skeleton": true, "rc": true, "rcS": true}

// IsInitScript reports whether the entry named name in an init script
// directory is a service script: an executable regular file (or a link
// to one) that is not a package manager's leftover or init's own helper.
func IsInitScript(dir, name string) bool {
	if name == "" || name[0] == '.' || notServices[name] || strings.HasSuffix(name, "~") ||
		strings.Contains(name, ".dpkg-") || strings.HasSuffix(name, ".rpmsave") || strings.HasSuffix(name, ".rpmnew") {
		return false
	}
	fi, err := os.Stat(filepath.Join(dir, name))
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// sysvServices lists the init scripts in dir as services, each with its
// state from "<script> status". Without systemd and without scripts there
// is no service manager this agent knows.
func sysvServices(ctx context.Context, dir string) ([]proto.Service, error) {
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	enabled := enabledScripts(filepath.Dir(dir))
	var out []proto.Service
	for _, e := range entries {
		if !IsInitScript(dir, e.Name()) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		s := proto.Service{Name: e.Name(), State: sysvStatus(ctx, path), Description: lsbDescription(path)}
		if enabled != nil {
			s.StartMode = "disabled"
			if enabled[e.Name()] {
				s.StartMode = "enabled"
			}
		}
		out = append(out, s)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, roles.Unsupported("systemd is not running (PID 1 is %s) and %s holds no init scripts; services not collected", pid1Name(), dir)
	}
	slices.SortFunc(out, func(a, b proto.Service) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// sysvStatus runs "<script> status" and folds its LSB exit code.
func sysvStatus(ctx context.Context, path string) string {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "status")
	cmd.Env = append(os.Environ(), "LC_ALL=C", "LANG=C", "LANGUAGE=")
	// No pipes: a status action that leaves a child behind holding them
	// must not keep this call waiting.
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, nil, nil
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return SysVRunning
	case errors.As(err, &exit) && exit.ExitCode() == 3:
		return SysVStopped
	default:
		return SysVUnknown
	}
}

// enabledScripts are the scripts with a start link ("S<nn><name>") in a
// multi-user runlevel directory beside the init script directory, or nil
// when there are no runlevel directories (then nothing is known about
// start modes).
func enabledScripts(etc string) map[string]bool {
	var out map[string]bool
	for _, level := range []string{"rc2.d", "rc3.d", "rc4.d", "rc5.d"} {
		entries, err := os.ReadDir(filepath.Join(etc, level))
		if err != nil {
			continue
		}
		if out == nil {
			out = map[string]bool{}
		}
		for _, e := range entries {
			if n, ok := strings.CutPrefix(e.Name(), "S"); ok && len(n) > 2 {
				out[n[2:]] = true
			}
		}
	}
	return out
}

// lsbDescription is the script's LSB "Short-Description:" header, read
// from the top of the file only (headers come first; scripts can be big).
func lsbDescription(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	s := bufio.NewScanner(io.LimitReader(f, 8<<10))
	for s.Scan() {
		if _, v, ok := strings.Cut(s.Text(), "# Short-Description:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
