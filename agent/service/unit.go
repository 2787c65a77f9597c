// Package service installs the agent as an operating-system service: a
// systemd unit on Linux (install_linux.go), a service of the service
// control manager on Windows (install_windows.go). Other platforms
// answer ErrNotSupported.
package service

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
)

// Defaults for a Linux install (Windows: install_windows.go).
const (
	UnitName       = "cairn-agent.service"
	DefaultUnitDir = "/etc/systemd/system"
	// DefaultBinaryPath is where install copies the running binary.
	DefaultBinaryPath = "/usr/local/bin/cairn-agent"
	// systemdRunDir exists only while systemd is the running init
	// (sd_booted(3) checks the same directory).
	systemdRunDir = "/run/systemd/system"
)

// DefaultConfigPath is where the installer puts agent.json:
// /etc/cairn-agent/agent.json, on Windows %ProgramData%\Cairn\agent.json
// (config_windows.go).
func DefaultConfigPath() string { return defaultConfigPath() }

// ServiceFlag is the run flag that makes the agent attach to the Windows
// service control manager; the installed service's command line carries
// it (svc.IsWindowsService cannot tell under Wine, and an explicit flag
// never guesses wrong).
const ServiceFlag = "--service"

// ErrNotSupported is returned on platforms without service support yet.
var ErrNotSupported = errors.New("installing the agent as a service is not supported on " + runtime.GOOS + " yet")

// InstallOptions configure Install.
type InstallOptions struct {
	// ConfigPath is agent.json; it must exist (enroll first).
	ConfigPath string
	// Binary names where the agent binary already is; empty copies the
	// running binary to BinaryDest.
	Binary string
	// BinaryDest is where the running binary is copied (DefaultBinaryPath,
	// on Windows DefaultWindowsBinary, when empty).
	BinaryDest string
	// UnitDir receives the unit file (DefaultUnitDir when empty; unused
	// on Windows).
	UnitDir string
	// NoStart writes the files (registers the service) but does not
	// start it.
	NoStart bool
	// Hostname is passed to run (see UnitOptions.Hostname).
	Hostname string
	// Out receives what was done, for the person running the command.
	Out io.Writer

	// Test hooks: the directory whose presence means systemd runs, and the
	// command systemctl's arguments are appended to ({"systemctl"}).
	systemdDir string
	systemctl  []string
	// serviceName replaces ServiceName (Windows), so a test never
	// touches a real agent's service.
	serviceName string
}

// UninstallOptions configure Uninstall.
type UninstallOptions struct {
	// ConfigPath is agent.json; only Purge touches it.
	ConfigPath string
	// UnitDir holds the unit file (DefaultUnitDir when empty).
	UnitDir string
	// Purge also removes agent.json (with its lock and temp files) and the
	// binary at BinaryDest.
	Purge bool
	// BinaryDest is the copied binary Purge removes (DefaultBinaryPath
	// when empty).
	BinaryDest string
	Out        io.Writer

	systemdDir  string
	systemctl   []string
	serviceName string
}

// UnitOptions are the values the unit file carries.
type UnitOptions struct {
	Binary     string // absolute path of the agent binary
	ConfigPath string // absolute path of agent.json
	// Hostname, when set, is passed to run as --hostname: the name the
	// device enrolled under with `enroll --hostname`.
	Hostname string
}

// unitTemplate is the systemd unit. Type=simple because the run loop does
// not report readiness (sd_notify); systemd counts it started once it
// runs, and the Engine, not systemd, judges whether it is connected.
const unitTemplate = `# Written by "cairn-agent install"; "cairn-agent uninstall" removes it.
[Unit]
Description=Cairn endpoint agent
Documentation=https://github.com/cairn-rmm/cairn/blob/main/docs/agent.md
Wants=network-online.target
After=network-online.target
# Never stop restarting: the agent is how the host is reached remotely.
StartLimitIntervalSec=0

[Service]
Type=simple
ExecStart={{exec}}
Restart=always
RestartSec=5
TimeoutStopSec=30
# The agent manages the whole host as root: it reads /proc, runs package
# managers, controls services, brings up the VPN tunnel and opens remote
# shells, and everything it starts inherits these settings. So the usual
# sandboxing (ProtectSystem, ProtectHome, PrivateTmp, NoNewPrivileges,
# capability or system-call filters) is deliberately absent; only what no
# management task needs is restricted.
LockPersonality=yes
RestrictRealtime=yes

[Install]
WantedBy=multi-user.target
`

// RenderUnit returns the unit file for o.
func RenderUnit(o UnitOptions) (string, error) {
	bin, err := execArg(o.Binary)
	if err != nil {
		return "", fmt.Errorf("binary: %w", err)
	}
	cfg, err := execArg(o.ConfigPath)
	if err != nil {
		return "", fmt.Errorf("config: %w", err)
	}
	cmd := bin + " run --config " + cfg
	if o.Hostname != "" {
		if !safeHostname(o.Hostname) {
			return "", fmt.Errorf("hostname %q: only letters, digits, '.', '-' and '_' can go in the unit", o.Hostname)
		}
		cmd += " --hostname " + o.Hostname
	}
	return strings.Replace(unitTemplate, "{{exec}}", cmd, 1), nil
}

// safeHostname accepts names that need no quoting on a systemd command line.
func safeHostname(h string) bool {
	if len(h) > 253 {
		return false
	}
	for _, r := range h {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// execArg quotes an absolute path for ExecStart (systemd.service(5)
// "Command lines", systemd.unit(5) "Specifiers"): % and $ are doubled so
// systemd does not expand them, and a path with spaces, quotes or
// backslashes is double-quoted with C-style escapes.
func execArg(p string) (string, error) {
	if !strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("%q is not an absolute path", p)
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return "", fmt.Errorf("%q contains a control character", p)
		}
	}
	s := strings.NewReplacer("%", "%%", "$", "$$").Replace(p)
	if !strings.ContainsAny(s, " \t\"'\\;") {
		return s, nil
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`, nil
}
