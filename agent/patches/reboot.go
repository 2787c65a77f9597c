package patches

import (
	"context"
	"fmt"
	"os/exec"
	"runtime"
)

// Rebooter schedules the machine's reboot after patch installs; tests
// use a fake.
type Rebooter interface {
	ScheduleReboot(ctx context.Context, message string) error
}

// RebootDelay is how long after a patch reboot is scheduled the machine
// goes down, so the agent's answer reaches the Engine first and signed-in
// users (a forced reboot) see the warning.
const RebootDelay = "1 minute"

// SystemRebooter schedules the reboot with the OS's own tool: Linux
// `shutdown -r +1 <message>` (systemd's shutdown, or sysvinit's),
// Windows `shutdown /r /t 60 /c <message>`.
type SystemRebooter struct{}

// ScheduleReboot runs the OS's shutdown command; it returns once the
// reboot is scheduled.
func (SystemRebooter) ScheduleReboot(ctx context.Context, message string) error {
	name, args := rebootCommand(runtime.GOOS, message)
	if name == "" {
		return fmt.Errorf("reboots are not supported on %s", runtime.GOOS)
	}
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", name, err, tail(out))
	}
	return nil
}

// rebootCommand is the command that schedules a reboot a minute from now.
func rebootCommand(goos, message string) (string, []string) {
	switch goos {
	case "linux":
		return "shutdown", []string{"-r", "+1", message}
	case "windows":
		return "shutdown", []string{"/r", "/t", "60", "/c", message}
	}
	return "", nil
}

func tail(out []byte) string {
	const limit = 512
	if len(out) > limit {
		out = out[len(out)-limit:]
	}
	return string(out)
}
