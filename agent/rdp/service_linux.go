package rdp

import (
	"context"
	"os"
	"os/exec"
	"strings"
)

// xrdp is Debian's xrdp, managed through systemd where it runs the host
// (systemctl), or started directly (it daemonizes) where there is none.
type xrdp struct{}

func newService() Service { return xrdp{} }

func (xrdp) Name() string {
	if _, err := exec.LookPath("xrdp"); err == nil {
		return "xrdp"
	}
	if _, err := os.Stat("/usr/sbin/xrdp"); err == nil {
		return "xrdp"
	}
	return ""
}

func systemd() bool {
	_, err := os.Stat("/run/systemd/system")
	_, lerr := exec.LookPath("systemctl")
	return err == nil && lerr == nil
}

func (x xrdp) State(ctx context.Context) string {
	if x.Name() == "" {
		return "not_installed"
	}
	if systemd() {
		out, _ := exec.CommandContext(ctx, "systemctl", "is-active", "xrdp").Output()
		switch strings.TrimSpace(string(out)) {
		case "active":
			return "running"
		case "inactive", "failed":
			return "stopped"
		}
		return "unknown"
	}
	if running("xrdp") {
		return "running"
	}
	return "stopped"
}

func (x xrdp) Start(ctx context.Context, force bool) error {
	if systemd() {
		verb := "start"
		if force {
			verb = "restart"
		}
		if out, err := exec.CommandContext(ctx, "systemctl", verb, "xrdp").CombinedOutput(); err != nil {
			return &cmdError{err: err, out: string(out)}
		}
		return nil
	}
	if force && running("xrdp") {
		_ = exec.CommandContext(ctx, "xrdp", "--kill").Run()
	}
	if out, err := exec.CommandContext(ctx, "xrdp").CombinedOutput(); err != nil {
		return &cmdError{err: err, out: string(out)}
	}
	return nil
}

func (xrdp) Firewall() string { return "not_managed" }

// running reports whether a process named comm runs.
func running(comm string) bool {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/comm")
		if err == nil && strings.TrimSpace(string(b)) == comm {
			return true
		}
	}
	return false
}

type cmdError struct {
	err error
	out string
}

func (e *cmdError) Error() string {
	out := strings.TrimSpace(e.out)
	if len(out) > 300 {
		out = out[:300]
	}
	if out == "" {
		return e.err.Error()
	}
	return e.err.Error() + ": " + out
}
