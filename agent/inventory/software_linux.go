package inventory

import (
	"context"
	"errors"
	"os"
	"os/exec"

	"github.com/cairn-rmm/cairn/agent/patches"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/roles"
)

// dpkgStatus is dpkg's database; its presence, not that of dpkg-query
// (installable on rpm systems), makes a system a dpkg system.
const dpkgStatus = "/var/lib/dpkg/status"

func isDpkgSystem() bool {
	_, err := os.Stat(dpkgStatus)
	_, lerr := exec.LookPath("dpkg-query")
	return err == nil && lerr == nil
}

func collectSoftware(ctx context.Context, c *Collector, inv *proto.Inventory) error {
	var rows []proto.Software
	switch root := patches.AptRoot(); {
	case root != "":
		// The private root's packages are the machine's (a test or
		// air-gapped rig: $CAIRN_AGENT_APT_ROOT).
		out, _, err := command(ctx, nil, "dpkg-query", "--admindir="+patches.AptPaths(root).AdminDir, "-W", "-f", dpkgFormat)
		if err != nil {
			return err
		}
		rows = parseDpkg(out)
	case isDpkgSystem():
		out, _, err := command(ctx, nil, "dpkg-query", "-W", "-f", dpkgFormat)
		if err != nil {
			return err
		}
		rows = parseDpkg(out)
	case hasTool("rpm"):
		var err error
		if rows, err = rpmPackages(ctx); err != nil {
			return err
		}
	default:
		return roles.Unsupported("no supported package database found (dpkg, rpm)")
	}
	// Every Linux system has packages; none means the output was not what
	// the parser reads, and an empty list would wipe the Engine's rows.
	if len(rows) == 0 {
		return errors.New("the package database listed no installed packages")
	}
	inv.SoftwareIcons = c.softwareIcons(ctx, rows, systemIcons().find, readIconFile)
	inv.Software = rows
	return nil
}

func rpmPackages(ctx context.Context) ([]proto.Software, error) {
	out, _, err := command(ctx, nil, "rpm", "-qa", "--queryformat", rpmFormat)
	if err != nil {
		return nil, err
	}
	return parseRPM(out), nil
}

func hasTool(name string) bool {
	_, err := exec.LookPath(name)
	return err == nil
}
