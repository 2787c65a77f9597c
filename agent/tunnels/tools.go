package tunnels

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// packageManagers are tried in this order (SPEC agent behaviour 9): the
// first one found installs the WireGuard tools.
var packageManagers = []struct {
	name string
	args []string
}{
	{"dnf", []string{"-y", "install", "wireguard-tools"}},
	{"apt-get", []string{"install", "-y", "wireguard-tools"}},
	{"yum", []string{"-y", "install", "wireguard-tools"}},
	{"zypper", []string{"--non-interactive", "install", "wireguard-tools"}},
	{"apk", []string{"add", "wireguard-tools"}},
	{"pacman", []string{"-S", "--noconfirm", "wireguard-tools"}},
}

// Tools finds wg and wg-quick and installs them when missing, at most
// once per proto.InstallThrottle; a manual install is found at the next
// check whatever the throttle.
type Tools struct {
	// Path is the search path for the tools and package managers, also
	// given to what they run ("" : $PATH).
	Path string
	Now  func() time.Time

	mu          sync.Mutex
	lastAttempt time.Time
	lastErr     string
}

func (t *Tools) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}

// look finds an executable on the search path.
func (t *Tools) look(name string) (string, error) {
	if t.Path == "" {
		return exec.LookPath(name)
	}
	for _, dir := range filepath.SplitList(t.Path) {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: not found on %s", name, t.Path)
}

// command is name found on the search path, with it as PATH.
func (t *Tools) command(ctx context.Context, name string, args ...string) (*exec.Cmd, error) {
	p, err := t.look(name)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, p, args...)
	if t.Path != "" {
		env := []string{"PATH=" + t.Path}
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "PATH=") {
				env = append(env, kv)
			}
		}
		cmd.Env = env
	}
	return cmd, nil
}

// run runs name and returns its combined output.
func (t *Tools) run(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd, err := t.command(ctx, name, args...)
	if err != nil {
		return nil, err
	}
	return cmd.CombinedOutput()
}

func (t *Tools) present() bool {
	_, errWG := t.look("wg")
	_, errQuick := t.look("wg-quick")
	return errWG == nil && errQuick == nil
}

// Ensure has wg and wg-quick on the search path, installing them if it
// may; otherwise a tunnel_tools_missing error carries the package
// manager's complaint.
func (t *Tools) Ensure(ctx context.Context, log *slog.Logger) error {
	if t.present() {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	if !t.lastAttempt.IsZero() && now.Sub(t.lastAttempt) < proto.InstallThrottle {
		return &proto.Error{Code: proto.CodeTunnelToolsMissing, Message: fmt.Sprintf(
			"wg and wg-quick are missing; the automatic install at %s failed (%s); the next attempt is after %s",
			t.lastAttempt.UTC().Format(time.RFC3339), t.lastErr, t.lastAttempt.Add(proto.InstallThrottle).UTC().Format(time.RFC3339))}
	}
	t.lastAttempt = now
	for _, pm := range packageManagers {
		if _, err := t.look(pm.name); err != nil {
			continue
		}
		log.Info("installing the WireGuard tools", "package_manager", pm.name)
		out, err := t.run(ctx, pm.name, pm.args...)
		switch {
		case err != nil:
			t.lastErr = fmt.Sprintf("%s %s: %v: %s", pm.name, strings.Join(pm.args, " "), err, shortErr(out))
		case !t.present():
			t.lastErr = fmt.Sprintf("%s installed wireguard-tools but wg or wg-quick is still missing", pm.name)
		default:
			t.lastErr = ""
			return nil
		}
		return &proto.Error{Code: proto.CodeTunnelToolsMissing, Message: "wg and wg-quick are missing and could not be installed: " + t.lastErr}
	}
	t.lastErr = "no supported package manager (dnf, apt-get, yum, zypper, apk, pacman)"
	return &proto.Error{Code: proto.CodeTunnelToolsMissing, Message: "wg and wg-quick are missing: " + t.lastErr}
}
