package inventory

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

// command runs a tool with the C locale, so its output is the English,
// unlocalized text the parsers read, and returns stdout. Exit codes in ok
// are successes (zero always is); any other exit is an error carrying the
// tool's own explanation from stderr.
func command(ctx context.Context, ok []int, name string, args ...string) (string, int, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C", "LANG=C", "LANGUAGE=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A child that keeps the pipes open after being killed must not hold
	// the collector past its timeout.
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
		return "", exit.ExitCode(), fmt.Errorf("%s: %w: %s", name, err, explain(stderr.String()))
	default:
		return "", -1, fmt.Errorf("%s: %w", name, err)
	}
}

// explain picks the line of a tool's stderr that says what went wrong:
// the first error line ("E: ..." from apt, "Error: ..." from dnf) ahead of
// warnings, else the first non-empty line.
func explain(stderr string) string {
	first := ""
	for line := range strings.Lines(stderr) {
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

// orEmpty turns "none found" into an empty, non-nil collection: nil would
// tell the Engine the collection was not taken at all.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
