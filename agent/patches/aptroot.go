package patches

import (
	"os"
	"path/filepath"
)

// AptRootEnv names a private dpkg/apt root the agent uses instead of the
// machine's own: apt's directories, dpkg's database (--root, --admindir),
// apt's history log and the reboot flag all inside it. It exists for
// end-to-end tests and air-gapped rigs that install from a local
// repository without touching the host's packages; production leaves it
// unset. docs/agent.md "Patches" describes it.
const AptRootEnv = "CAIRN_AGENT_APT_ROOT"

// AptRoot is $CAIRN_AGENT_APT_ROOT, cleaned ("" when unset: the system's
// apt and dpkg).
func AptRoot() string {
	r := os.Getenv(AptRootEnv)
	if r == "" {
		return ""
	}
	return filepath.Clean(r)
}

// AptRootOptions are apt-get's -o options that keep apt, and the dpkg it
// runs, inside root: apt's configuration, lists, cache and log under
// Dir, dpkg's status file, --root (the files it unpacks and its admin
// directory) and no chroot for maintainer scripts.
func AptRootOptions(root string) []string {
	return []string{"Dir=" + root, "Dir::State::status=" + filepath.Join(root, "var/lib/dpkg/status"),
		"Dir::Etc::trusted=" + filepath.Join(root, "etc/apt/trusted.gpg"), "Dir::Etc::trustedparts=" + filepath.Join(root, "etc/apt/trusted.gpg.d"),
		"Dir::Log=" + filepath.Join(root, "var/log/apt"), "APT::Sandbox::User=root",
		"DPkg::Options::=--root=" + root, "DPkg::Options::=--force-not-root", "DPkg::Options::=--force-script-chrootless"}
}

// AptRootPaths are the files of a dpkg/apt root ("" is the system's).
type AptRootPaths struct {
	// AdminDir is dpkg's database (/var/lib/dpkg); Status its status file.
	AdminDir, Status string
	// Lists and PkgCache are apt's package lists and cache.
	Lists, PkgCache string
	// HistoryDir holds apt's history.log; RebootFile is the reboot flag.
	HistoryDir, RebootFile string
}

// AptPaths are root's paths; root "" gives the system's.
func AptPaths(root string) AptRootPaths {
	if root == "" {
		return AptRootPaths{AdminDir: "/var/lib/dpkg", Status: "/var/lib/dpkg/status", Lists: "/var/lib/apt/lists",
			PkgCache: "/var/cache/apt/pkgcache.bin", HistoryDir: "/var/log/apt", RebootFile: "/var/run/reboot-required"}
	}
	j := func(p string) string { return filepath.Join(root, p) }
	return AptRootPaths{AdminDir: j("var/lib/dpkg"), Status: j("var/lib/dpkg/status"), Lists: j("var/lib/apt/lists"),
		PkgCache: j("var/cache/apt/pkgcache.bin"), HistoryDir: j("var/log/apt"), RebootFile: j("run/reboot-required")}
}

// AptAt is the apt provider over root ("" is the system's).
func AptAt(root string) *Apt {
	if root == "" {
		return &Apt{}
	}
	p := AptPaths(root)
	return &Apt{Extra: AptRootOptions(root), HistoryDir: p.HistoryDir, RebootFile: p.RebootFile}
}

// AptInstallerAt is the apt installer over root ("" is the system's).
func AptInstallerAt(root string) *AptInstaller {
	if root == "" {
		return &AptInstaller{}
	}
	p := AptPaths(root)
	return &AptInstaller{Extra: AptRootOptions(root), AdminDir: p.AdminDir, RebootFile: p.RebootFile}
}
