package inventory

import (
	"context"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/roles"
)

// The methods below collect one collection now, for an operation that
// asks for it (a process list, a service list after an action, a
// software or patch refresh). They run the same parts as Collect, with the
// same timeouts, and report the role's health as Collect does: the check
// just happened. They do not wait for a running Collect, which can take
// minutes; the parts keep their state under c.mu, so running beside one
// is safe. An error matching roles.ErrUnsupported means this platform or
// host cannot collect it.

// Processes lists the running processes.
func (c *Collector) Processes(ctx context.Context) ([]proto.Process, error) {
	inv, err := c.refresh(ctx, roles.ProcessManagement)
	return inv.Processes, err
}

// Services lists the services (systemd units, or SysV init scripts in
// InitDir when systemd is not running).
func (c *Collector) Services(ctx context.Context) ([]proto.Service, error) {
	inv, err := c.refresh(ctx, roles.ServiceManagement)
	return inv.Services, err
}

// Software lists the installed packages.
// An operator's refresh fetches the icon overrides afresh: an icon
// override asks for one, so it shows at once.
func (c *Collector) Software(ctx context.Context) ([]proto.Software, error) {
	c.opts.Overrides.Invalidate()
	inv, err := c.refresh(ctx, roles.SoftwareManagement)
	return inv.Software, err
}

// Patches lists the pending updates, read afresh: whoever asks for a
// refresh wants the package manager asked now, not the cached reading
// Collect reuses while the package state looks unchanged.
func (c *Collector) Patches(ctx context.Context) ([]proto.PatchEntry, *proto.PatchStatus, error) {
	c.mu.Lock()
	c.patches = patchCache{}
	c.mu.Unlock()
	inv, err := c.refresh(ctx, roles.PatchManagement)
	return inv.Patches, inv.PatchStatus, err
}

// InitDir is the directory of SysV init scripts this collector lists.
func (c *Collector) InitDir() string { return c.opts.InitDir }

// UsesInitScripts reports whether services are SysV init scripts here
// rather than systemd units.
func (c *Collector) UsesInitScripts() bool { return c.opts.InitScripts || !systemdBooted() }

// refresh runs the parts of one role and reports its health, unless ctx
// ended (the caller gave up; that says nothing about the role).
func (c *Collector) refresh(ctx context.Context, role string) (proto.Inventory, error) {
	var inv proto.Inventory
	var errs []error
	for _, p := range c.parts {
		if p.role != role {
			continue
		}
		out, err := c.runPart(ctx, p)
		if err != nil {
			if ctx.Err() != nil {
				return proto.Inventory{}, ctx.Err()
			}
			errs = append(errs, err)
			continue
		}
		merge(&inv, out)
	}
	err := roleError(errs)
	if r := c.roles[role]; r != nil {
		r.Report(err)
	}
	if err != nil {
		return proto.Inventory{}, err
	}
	return inv, nil
}
