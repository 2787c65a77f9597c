package shells

import (
	"io"
	"time"
)

// terminal is a started shell behind a PTY or pipes.
type terminal interface {
	// Read returns the shell's output; Write feeds its input.
	io.ReadWriter
	// Resize sets the terminal size (ignored where there is no PTY).
	Resize(cols, rows int) error
	Shell() string
	PID() int
	// Done is closed once the shell has exited and been reaped.
	Done() <-chan struct{}
	// ExitCode is valid after Done: the exit status, or 128 + the signal
	// number when a signal ended the shell (as shells report it).
	ExitCode() int
	// Kill ends the shell and everything it started (politely, then after
	// grace forcibly) and returns once the shell is reaped.
	Kill(grace time.Duration)
	// Close releases the terminal; a pending Read returns.
	Close() error
}

// basePath is PATH for a shell: the agent runs as a service whose own
// PATH may be minimal or odd, and the operator expects the usual tools.
const basePath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
