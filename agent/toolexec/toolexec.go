// Package toolexec runs the system tools the agent reads (package
// managers, systemctl, loginctl) the one way both the inventory and the
// patch providers need: the C locale, stdout kept, stderr reduced to the
// line that explains a failure.
package toolexec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// Run runs a tool with the C locale, so its output is the English,
// unlocalized text the parsers read, and returns stdout and the exit
// code. Exit codes in ok are successes (zero always is); any other exit
// is an error carrying the tool's own explanation from stderr.
func Run(ctx context.Context, ok []int, name string, args ...string) (string, int, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C", "LANG=C", "LANGUAGE=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A child that keeps the pipes open after being killed must not hold
	// the caller past its timeout.
	cmd.WaitDelay = 2 * time.Second
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return stdout.String(), 0, nil
	case ctx.Err() != nil:
		return "", -1, fmt.Errorf("%s: %w", name, ctx.Err())
	case errors.As(err, &exit) && slices.Contains(ok, exit.ExitCode()):
		return stdout.String(), exit.ExitCode(), nil
	case errors.As(err, &exit):
		return "", exit.ExitCode(), fmt.Errorf("%s: %w: %s", name, err, Explain(stderr.String()))
	default:
		return "", -1, fmt.Errorf("%s: %w", name, err)
	}
}

// Explain picks the line of a tool's output that says what went wrong:
// the first error line ("E: ..." from apt, "Error: ..." from dnf) ahead
// of warnings, else the first non-empty line.
func Explain(out string) string {
	first := ""
	for line := range strings.Lines(out) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "E: ") || strings.HasPrefix(line, "Error") {
			return line
		}
		if first == "" {
			first = line
		}
	}
	if first == "" {
		return "no error output"
	}
	return first
}
