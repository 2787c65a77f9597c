package inventory

import (
	"context"
	"path/filepath"
	"time"

	"github.com/cairn-rmm/cairn/agent/patches"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/roles"
)

// updateSource is a package manager that can list pending updates without
// changing anything: no metadata refresh, no lock, no root-only effect.
type updateSource struct {
	name string
	// state is what stateSignature watches: the installed database and
	// the cached repository metadata the listing is computed from.
	state []string
	read  func(ctx context.Context) ([]proto.PatchEntry, *proto.PatchStatus, error)
}

// fromProvider reads through an agent/patches provider: pending rows,
// the installed history and the reboot flag.
func fromProvider(p patches.Provider) func(ctx context.Context) ([]proto.PatchEntry, *proto.PatchStatus, error) {
	return func(ctx context.Context) ([]proto.PatchEntry, *proto.PatchStatus, error) {
		s, err := p.Scan(ctx)
		if err != nil {
			return nil, nil, err
		}
		st := s.Status
		return s.Rows(), &st, nil
	}
}

// plain reads a pending listing of a package manager without a provider.
func plain(read func(ctx context.Context) ([]proto.PatchEntry, error)) func(ctx context.Context) ([]proto.PatchEntry, *proto.PatchStatus, error) {
	return func(ctx context.Context) ([]proto.PatchEntry, *proto.PatchStatus, error) {
		rows, err := read(ctx)
		return rows, nil, err
	}
}

var rpmState = []string{"/var/lib/rpm", "/var/lib/rpm/rpmdb.sqlite", "/var/lib/rpm/Packages",
	"/usr/lib/sysimage/rpm", "/usr/lib/sysimage/rpm/rpmdb.sqlite"}

// detectUpdateSource picks the system's package manager: apt over
// $CAIRN_AGENT_APT_ROOT when it is set, apt on dpkg systems and dnf
// through their agent/patches providers (pending rows with their source,
// the installed history, the reboot flag), else yum or zypper's pending
// listing.
func detectUpdateSource() *updateSource {
	switch root := patches.AptRoot(); {
	case root != "":
		return aptSource(root)
	case isDpkgSystem() && hasTool("apt-get"):
		return aptSource("")
	case hasTool("dnf"):
		return &updateSource{name: SourceDnf,
			state: append([]string{"/var/cache/dnf", "/var/cache/libdnf5", "/var/log/dnf.rpm.log"}, rpmState...),
			read:  fromProvider(&patches.Dnf{})}
	case hasTool("yum"):
		return &updateSource{name: SourceYum, state: append([]string{"/var/cache/yum"}, rpmState...),
			read: plain(func(ctx context.Context) ([]proto.PatchEntry, error) { return readCheckUpdate(ctx, "yum") })}
	case hasTool("zypper"):
		return &updateSource{name: SourceZypper, state: append([]string{"/var/cache/zypp/solv"}, rpmState...), read: plain(readZypper)}
	}
	return nil
}

// aptSource is apt's listing over root ("" is the system's). The history
// log and the reboot flag change without the package database when an
// upgrade is only logged or a reboot is only asked for.
func aptSource(root string) *updateSource {
	p := patches.AptPaths(root)
	return &updateSource{name: SourceApt,
		state: []string{p.Status, p.Lists, p.PkgCache, filepath.Join(p.HistoryDir, "history.log"), p.RebootFile},
		read:  fromProvider(patches.AptAt(root))}
}

// readCheckUpdate runs dnf or yum check-update from the metadata cache
// only (-C): no download, no cache refresh. Exit 100 means updates are
// available, 0 none; a system without cached metadata fails, with dnf's
// own message.
func readCheckUpdate(ctx context.Context, tool string) ([]proto.PatchEntry, error) {
	out, _, err := command(ctx, []int{100}, tool, "-q", "-C", "check-update")
	if err != nil {
		return nil, err
	}
	installed, err := rpmPackages(ctx)
	if err != nil {
		return nil, err
	}
	versions := map[string]string{}
	for _, s := range installed {
		versions[s.Name+"."+s.Arch] = s.Version
		versions[s.Name] = s.Version
	}
	return patches.ParseCheckUpdate(out, tool, versions), nil
}

// readZypper lists updates from the repositories' cached metadata
// (--no-refresh). zypper holds its lock while it runs, which is brief.
func readZypper(ctx context.Context) ([]proto.PatchEntry, error) {
	out, _, err := command(ctx, nil, "zypper", "--non-interactive", "--no-refresh", "list-updates")
	if err != nil {
		return nil, err
	}
	return parseZypperUpdates(out), nil
}

// collectPatches reports pending package updates as patch rows. The
// listing is reused while the package database and lists are unchanged
// and younger than Options.PatchMaxAge; a reused reading is still a
// successful check, since the state it describes was verified unchanged.
func collectPatches(ctx context.Context, c *Collector, inv *proto.Inventory) error {
	src := detectUpdateSource()
	if src == nil {
		return roles.Unsupported("no supported package manager found (apt-get, dnf, yum, zypper)")
	}
	sig := stateSignature(src.state)
	now := time.Now()
	c.mu.Lock()
	cached := c.patches
	c.mu.Unlock()
	if cached.fresh(src.name, sig, now, c.opts.PatchMaxAge) {
		inv.Patches, inv.PatchStatus = patchRows(cached.rows), cloneStatus(cached.status)
		return nil
	}
	rows, status, err := src.read(ctx)
	if err != nil {
		return err
	}
	rows = orEmpty(rows)
	c.mu.Lock()
	c.patches = patchCache{source: src.name, signature: sig, at: now, rows: rows, status: status}
	c.mu.Unlock()
	inv.Patches, inv.PatchStatus = patchRows(rows), cloneStatus(status)
	return nil
}
