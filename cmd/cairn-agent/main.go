// Command cairn-agent is the Cairn endpoint agent: enroll with the Engine,
// run the agent loop (agent/runtime), simulate a fleet for load tests,
// and the local commands (status, the metadata queue, installing or
// removing the service).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/cairn-rmm/cairn/agent"
	"github.com/cairn-rmm/cairn/agent/service"
	agentversion "github.com/cairn-rmm/cairn/agent/version"
)

// version is the agent's release version (agent/version, set at build
// time with -ldflags "-X github.com/cairn-rmm/cairn/agent/version.Version=...").
var version = agentversion.Version

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // the command could not be carried out (unreadable config, ...)
	exitUsage = 2 // the command line is wrong
)

const usage = `usage:
  cairn-agent enroll --server URL --code CODE [--ca-file PEM [--trust-public-cas]] [--server-ip-fallback IP] [--hostname NAME] [--config PATH]
  cairn-agent run [--config PATH] [--hostname NAME] [--update-check-interval D] [--update-checkin-deadline D]
  cairn-agent simulate --server URL --code CODE --count N [--ca-file PEM] [--concurrency C] [--duration D] [--prefix NAME]
  cairn-agent [--config PATH] status
  cairn-agent [--config PATH] --metadata get <field>
  cairn-agent [--config PATH] --metadata set <field> <value>
  cairn-agent install [--config PATH] [--binary PATH] [--unit-dir DIR] [--no-start] [--hostname NAME]
                      [--server URL --code CODE [--ca-file PEM [--trust-public-cas]] [--server-ip-fallback IP]]
  cairn-agent uninstall [--config PATH] [--unit-dir DIR] [--purge]
  cairn-agent [--config PATH] generalize
  cairn-agent version

  <field> is a metadata field number from 1 to 500; <value> is at most 1024
  characters, and a blank value queues a clear. Writes are queued locally and
  sent to the server with the next heartbeat.

  install (Linux, as root) copies this binary to /usr/local/bin/cairn-agent
  unless --binary names where it already is, writes the systemd unit
  cairn-agent.service to --unit-dir (default /etc/systemd/system) and enables
  and starts it, unless --no-start. On Windows (as Administrator) it copies
  the binary to %ProgramFiles%\Cairn\cairn-agent.exe, registers the
  automatic service CairnAgent (LocalSystem) and starts it; --unit-dir is
  ignored there. With --server and --code it first
  enrolls as enroll does (waiting for approval), so a downloaded binary
  installs itself in one command. uninstall stops and removes the service;
  --purge also removes agent.json and the copied binary. version prints the
  release version, the build ID and the platform.

  enroll requests enrollment with the site's code, signed with this device's
  key, and waits until an administrator approves (or denies) it. run is the
  agent itself (the service runs it); pass the same --hostname as to enroll.
  generalize clears this agent's identity (key, GUID, tokens) and keeps the
  server URL and enrollment code: run it, with the service stopped, before
  capturing a disk image (sysprep, VM template), so every machine made from
  the image enrolls as a device of its own.
  simulate runs N agents with synthetic data in this process through the real
  enrollment, token, heartbeat and socket code, and prints a JSON summary.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// usageError marks a problem with the command line (exit code 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runWith(ctx, args, stdout, stderr, defaultHost())
}

// runWith runs a command line with the host's facts h (tests pass their
// own) until ctx ends.
func runWith(ctx context.Context, args []string, stdout, stderr io.Writer, h host) int {
	err := dispatch(ctx, args, stdout, stderr, h)
	if err == nil {
		return exitOK
	}
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "cairn-agent: %s\n\n%s", ue.msg, usage)
		return exitUsage
	}
	fmt.Fprintf(stderr, "cairn-agent: %s\n", err)
	return exitError
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer, h host) error {
	path := service.DefaultConfigPath()
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-h" || a == "--help" || a == "help":
			_, err := io.WriteString(stdout, usage)
			return err
		case a == "--config" || a == "-config":
			if i+1 >= len(args) || args[i+1] == "" {
				return usagef("--config needs a path")
			}
			path = args[i+1]
			i++
		case strings.HasPrefix(a, "--config="):
			path = strings.TrimPrefix(a, "--config=")
			if path == "" {
				return usagef("--config needs a path")
			}
		default:
			// The command and its arguments: a metadata value may itself start
			// with "-", so nothing after the command is read as a flag.
			rest = args[i:]
			i = len(args)
		}
	}
	if len(rest) == 0 {
		return usagef("no command given")
	}
	switch rest[0] {
	case "enroll":
		return enroll(ctx, path, rest[1:], stdout, stderr, h)
	case "run":
		return runAgent(ctx, path, rest[1:], stderr, h)
	case "simulate":
		return simulate(ctx, rest[1:], stdout, stderr, h)
	case "status":
		if len(rest) != 1 {
			return usagef("status takes no arguments")
		}
		return status(path, stdout)
	case "--metadata", "-metadata":
		return metadata(path, rest[1:], stdout)
	case "install":
		return install(ctx, path, rest[1:], stdout, stderr, h)
	case "uninstall":
		return uninstall(path, rest[1:], stdout)
	case "generalize":
		return generalize(path, rest[1:], stdout)
	case "version", "--version":
		if len(rest) != 1 {
			return usagef("version takes no arguments")
		}
		return printVersion(stdout)
	default:
		return usagef("unknown command %q", rest[0])
	}
}

// printVersion prints the release version, the build ID (what the
// Engine's artifact catalog and agent.installed_build_id name this build
// by) and the platform.
func printVersion(stdout io.Writer) error {
	_, err := fmt.Fprintf(stdout, "cairn-agent %s\nbuild_id: %s\nplatform: %s\n", version, agentversion.Build(), agentversion.Platform())
	return err
}

func metadata(path string, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return usagef("--metadata needs get or set")
	}
	switch args[0] {
	case "get":
		if len(args) != 2 {
			return usagef("--metadata get takes exactly one field number")
		}
		n, err := agent.ParseFieldNumber(args[1])
		if err != nil {
			return usagef("%s", err)
		}
		c, err := load(path)
		if err != nil {
			return err
		}
		value, at, src := c.GetMetadata(n)
		fmt.Fprintf(stdout, "field: %d\nvalue: %s\n", n, value)
		switch src {
		case agent.MetadataQueued:
			fmt.Fprintf(stdout, "source: queued locally at %s, not yet acknowledged by the server\n", at.Format(time.RFC3339Nano))
		case agent.MetadataAcknowledged:
			fmt.Fprintf(stdout, "source: last value acknowledged by the server (modified %s)\n", at.Format(time.RFC3339Nano))
		default:
			fmt.Fprintln(stdout, "source: none (no value known locally; the server may hold one)")
		}
		return nil
	case "set":
		if len(args) != 3 {
			return usagef("--metadata set takes a field number and one value (quote values with spaces)")
		}
		n, err := agent.ParseFieldNumber(args[1])
		if err != nil {
			return usagef("%s", err)
		}
		if p := agent.MetadataValueProblem(args[2]); p != "" {
			return usagef("%s", p)
		}
		var e agent.MetadataEntry
		_, err = agent.Update(path, "metadata", func(c *agent.Config) error {
			var err error
			e, err = c.SetMetadata(n, args[2], time.Now())
			return err
		})
		if err != nil {
			return configErr(path, err)
		}
		if e.Value == "" {
			fmt.Fprintf(stdout, "queued clear of field %d; it is sent with the next heartbeat\n", n)
		} else {
			fmt.Fprintf(stdout, "queued field %d; it is sent with the next heartbeat\n", n)
		}
		return nil
	default:
		return usagef("unknown --metadata action %q (want get or set)", args[0])
	}
}

func status(path string, stdout io.Writer) error {
	c, err := load(path)
	if err != nil {
		return err
	}
	present := func(s string) string {
		if s == "" {
			return "absent"
		}
		return "present"
	}
	server := c.ServerURL
	if server == "" {
		server = "(not set)"
	}
	if c.ServerIPFallback != "" {
		server += " (fallback IP " + c.ServerIPFallback + ")"
	}
	guid := c.Agent.GUID
	if guid == "" {
		guid = "(none)"
	}
	st := c.Agent.State
	fmt.Fprintf(stdout, "config: %s\n", path)
	fmt.Fprintf(stdout, "server: %s\n", server)
	fmt.Fprintf(stdout, "guid: %s\n", guid)
	fmt.Fprintf(stdout, "enrollment: %s\n", enrollmentState(c))
	fmt.Fprintf(stdout, "access token: %s\n", present(c.AccessToken))
	fmt.Fprintf(stdout, "refresh token: %s\n", present(c.RefreshToken))
	fmt.Fprintf(stdout, "queued metadata: %d\n", len(c.PendingMetadata()))
	fmt.Fprintf(stdout, "config revision: %d (last written by %q at %s)\n", st.Revision, st.Writer, st.LastWriteAt.Format(time.RFC3339))
	return nil
}

func enrollmentState(c *agent.Config) string {
	switch {
	case c.Agent.GUID != "" && c.HasTokens():
		return "enrolled"
	case c.Agent.GUID != "":
		return "enrolled, no tokens (must authenticate again)"
	case c.EnrollmentCode != "":
		return "not enrolled (enrollment code present)"
	default:
		return "not configured (no enrollment code)"
	}
}

func load(path string) (*agent.Config, error) {
	c, err := agent.Load(path)
	if err != nil {
		return nil, configErr(path, err)
	}
	return c, nil
}

// configErr adds the path and a hint to the failures people actually hit.
func configErr(path string, err error) error {
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("config %s does not exist (is the agent installed? use --config PATH)", path)
	case errors.Is(err, os.ErrPermission):
		return fmt.Errorf("config %s: permission denied (run as root/Administrator)", path)
	}
	return fmt.Errorf("config %s: %w", path, err)
}
