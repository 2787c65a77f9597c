// Package inventory collects what the agent reports about its machine: the
// heavy inventory for POST /api/agent/details, the light heartbeat metrics,
// the device fingerprint, and a synthetic inventory for simulated agents.
//
// Collection is split into parts, each belonging to a role (device_audit,
// current_user, software_management, service_management,
// process_management, patch_management). Parts run one after the other,
// each with its own timeout; a failing part leaves its collection nil ("not
// collected this time": the Engine keeps what it has) and its failure is
// reported on the role's health, so one broken source never costs the rest
// of the inventory. docs/agent.md "Inventory" lists what each part reads.
package inventory

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/roles"
)

// Options tune a Collector. The zero value is the production setting.
type Options struct {
	// Timeout, when positive, bounds every part instead of its own default.
	Timeout time.Duration
	// PatchMaxAge is how long a reading of pending updates is reused while
	// the package database is unchanged (0: one hour). Reading them costs
	// seconds of CPU (apt resolves a whole dist-upgrade), too much for
	// every collection.
	PatchMaxAge time.Duration
	// InitDir holds the SysV init scripts listed as services (and
	// controlled by service operations) when systemd is not running.
	// Empty: $CAIRN_AGENT_INIT_DIR, else /etc/init.d.
	InitDir string
	// InitScripts makes the scripts in InitDir the services (listed and
	// controlled) even where systemd is the running init: a host whose
	// services systemd does not manage, and the tests, which must not
	// depend on the machine they run on.
	InitScripts bool
	// Overrides are the Engine's software icon overrides, applied over
	// the icons found on the machine (nil: none).
	Overrides *Overrides
}

// InitDirEnv overrides the default init script directory. It exists for
// tests that run the real agent on a machine without systemd and need
// services they own; production leaves it unset.
const InitDirEnv = "CAIRN_AGENT_INIT_DIR"

// DefaultInitDir is where SysV init scripts live.
const DefaultInitDir = "/etc/init.d"

// Collector collects the inventory of this machine. It is safe for
// concurrent use; Collect calls are serialized.
type Collector struct {
	opts  Options
	parts []part
	roles map[string]*roles.Role

	collectMu sync.Mutex // one Collect at a time: parts keep state between runs

	mu      sync.Mutex // guards what Metrics and the parts remember below
	cpuPrev *cpuSample
	procs   procSamples
	patches patchCache
}

// part is one piece of the inventory. run fills only its own collections
// of inv and returns nil, or returns an error and its output is dropped.
type part struct {
	role    string
	name    string
	timeout time.Duration
	run     func(ctx context.Context, c *Collector, inv *proto.Inventory) error
}

// New returns a collector for this machine and registers its roles on
// tracker. On platforms without collectors yet, every role reports itself
// unsupported rather than sending empty data.
func New(tracker *roles.Tracker, opts Options) *Collector {
	if opts.PatchMaxAge <= 0 {
		opts.PatchMaxAge = time.Hour
	}
	if opts.InitDir == "" {
		// A directory named in the environment is where this host's
		// services are, whatever its init.
		if dir := os.Getenv(InitDirEnv); dir != "" {
			opts.InitDir, opts.InitScripts = dir, true
		} else {
			opts.InitDir = DefaultInitDir
		}
	}
	return newCollector(tracker, opts, platformParts())
}

func newCollector(tracker *roles.Tracker, opts Options, parts []part) *Collector {
	c := &Collector{opts: opts, parts: parts, roles: map[string]*roles.Role{}}
	for _, p := range parts {
		c.roles[p.role] = tracker.Register(p.role)
	}
	return c
}

// unsupportedParts is the part list of a platform without collectors:
// every role fails with the same honest message.
func unsupportedParts() []part {
	err := roles.Unsupported("not supported on %s yet", runtime.GOOS)
	var parts []part
	for _, r := range []string{roles.DeviceAudit, roles.CurrentUser, roles.SoftwareManagement,
		roles.ServiceManagement, roles.ProcessManagement, roles.PatchManagement} {
		parts = append(parts, part{role: r, name: r, timeout: time.Second,
			run: func(context.Context, *Collector, *proto.Inventory) error { return err }})
	}
	return parts
}

// Collect runs every part and returns what succeeded. Each role gets one
// health report per call. If ctx ends, collection stops and the roles not
// yet finished are not reported: an agent shutting down is not a failure.
func (c *Collector) Collect(ctx context.Context) proto.Inventory {
	c.collectMu.Lock()
	defer c.collectMu.Unlock()

	var inv proto.Inventory
	var order []string
	failures := map[string][]error{}
	parts := map[string]int{}
	for _, p := range c.parts {
		if parts[p.role] == 0 {
			order = append(order, p.role)
		}
		parts[p.role]++
	}
	for _, p := range c.parts {
		if ctx.Err() != nil {
			return inv
		}
		out, err := c.runPart(ctx, p)
		if err != nil {
			if ctx.Err() != nil {
				return inv
			}
			if parts[p.role] > 1 {
				err = prefixed{p.name, err}
			}
			failures[p.role] = append(failures[p.role], err)
			continue
		}
		merge(&inv, out)
	}
	for _, r := range order {
		c.roles[r].Report(roleError(failures[r]))
	}
	return inv
}

// prefixed names the part of a role that failed, keeping the error's
// identity (errors.Is) intact.
type prefixed struct {
	name string
	err  error
}

func (p prefixed) Error() string { return p.name + ": " + p.err.Error() }
func (p prefixed) Unwrap() error { return p.err }

// roleError folds a role's part failures into one report: unsupported only
// when every failure is, so a fixable failure is never hidden behind one
// that is not.
func roleError(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	all := true
	for i, e := range errs {
		msgs[i] = e.Error()
		all = all && errors.Is(e, roles.ErrUnsupported)
	}
	msg := strings.Join(msgs, "; ")
	if all {
		return roles.Unsupported("%s", msg)
	}
	return errors.New(msg)
}

// runPart runs one part with its timeout. A part that ignores its context
// is abandoned when the timeout passes: it writes only to its own scratch
// inventory, which is then dropped.
func (c *Collector) runPart(ctx context.Context, p part) (*proto.Inventory, error) {
	timeout := p.timeout
	if c.opts.Timeout > 0 {
		timeout = c.opts.Timeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out := &proto.Inventory{}
	done := make(chan error, 1)
	go func() {
		defer func() {
			if v := recover(); v != nil {
				done <- fmt.Errorf("panic: %v", v)
			}
		}()
		done <- p.run(ctx, c, out)
	}()
	select {
	case err := <-done:
		if err != nil {
			return nil, err
		}
		return out, nil
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("timed out after %s", timeout)
		}
		return nil, ctx.Err()
	}
}

// merge copies the collections a part filled.
func merge(dst, src *proto.Inventory) {
	if src.Hardware != nil {
		dst.Hardware = src.Hardware
	}
	if src.OS != nil {
		dst.OS = src.OS
	}
	if src.Network != nil {
		dst.Network = src.Network
	}
	if src.Sessions != nil {
		dst.Sessions = src.Sessions
	}
	if src.Uptime != nil {
		dst.Uptime = src.Uptime
	}
	if src.Software != nil {
		dst.Software, dst.SoftwareIcons = src.Software, src.SoftwareIcons
	}
	if src.Services != nil {
		dst.Services = src.Services
	}
	if src.Processes != nil {
		dst.Processes = src.Processes
	}
	if src.Patches != nil {
		dst.Patches = src.Patches
	}
	if src.PatchStatus != nil {
		dst.PatchStatus = src.PatchStatus
	}
}
