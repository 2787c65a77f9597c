package patches

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// Apt reads a dpkg system's patch state from what is on disk: the
// package lists apt already has (never `apt update`), dpkg's database,
// /var/log/apt/history.log* and /var/run/reboot-required. Zero fields
// take the system's paths.
type Apt struct {
	// HistoryDir holds history.log and its rotations (/var/log/apt).
	HistoryDir string
	// RebootFile is /var/run/reboot-required; RebootFile+".pkgs" lists
	// the packages that asked for the reboot.
	RebootFile string
	// Arch is dpkg's native architecture, left off package names in the
	// history (read from dpkg --print-architecture when empty).
	Arch string
	// Location is the time zone of the history's timestamps (local time).
	Location *time.Location
	// Extra are further apt -o options (a private root in tests).
	Extra []string
}

// Name is "apt".
func (a *Apt) Name() string { return proto.PatchProviderApt }

// Scan simulates a dist-upgrade against the package lists on disk, reads
// the history and the reboot flag.
func (a *Apt) Scan(ctx context.Context) (Scan, error) {
	// -s changes nothing, and Debug::NoLocking keeps it from taking
	// dpkg's lock, so it neither waits for nor blocks a running apt.
	args := []string{"-s", "-o", "Debug::NoLocking=1"}
	for _, e := range a.Extra {
		args = append(args, "-o", e)
	}
	out, _, err := command(ctx, nil, "apt-get", append(args, "dist-upgrade")...)
	if err != nil {
		return Scan{}, err
	}
	arch := a.Arch
	if arch == "" {
		if o, _, err := command(ctx, nil, "dpkg", "--print-architecture"); err == nil {
			arch = strings.TrimSpace(o)
		}
	}
	hist, err := a.history(arch)
	if err != nil {
		return Scan{}, err
	}
	reboot, pkgs := RebootRequiredFile(cmpOr(a.RebootFile, "/var/run/reboot-required"))
	return Scan{Pending: orEmpty(ParseAptSimulate(out)), History: orEmpty(hist),
		Status: proto.PatchStatus{Provider: proto.PatchProviderApt, RebootRequired: reboot, RebootPackages: pkgs}}, nil
}

// history reads history.log and its rotations (history.log.1.gz, ...).
func (a *Apt) history(arch string) ([]proto.PatchEntry, error) {
	dir := cmpOr(a.HistoryDir, "/var/log/apt")
	files, err := filepath.Glob(filepath.Join(dir, "history.log*"))
	if err != nil {
		return nil, err
	}
	loc := a.Location
	if loc == nil {
		loc = time.Local
	}
	var rows []proto.PatchEntry
	for _, f := range files {
		r, err := openLog(f)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			continue
		}
		if err != nil {
			return nil, err
		}
		rows = append(rows, ParseAptHistory(r, arch, loc)...)
		r.Close()
	}
	return newestHistory(rows, HistoryLimit), nil
}

// openLog opens a log file, decompressing a .gz rotation.
func openLog(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(path, ".gz") {
		return f, nil
	}
	z, err := gzip.NewReader(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{z, f}, nil
}

// RebootRequiredFile reads Debian's reboot flag: the file exists when a
// package asked for a reboot, and path+".pkgs" names those packages.
func RebootRequiredFile(path string) (bool, []string) {
	if _, err := os.Stat(path); err != nil {
		return false, nil
	}
	b, err := os.ReadFile(path + ".pkgs")
	if err != nil {
		return true, nil
	}
	var pkgs []string
	for _, l := range strings.Fields(string(b)) {
		if !slices.Contains(pkgs, l) {
			pkgs = append(pkgs, l)
		}
	}
	return true, pkgs
}

// aptInst matches the upgrade lines of `apt-get -s dist-upgrade`:
//
//	Inst bash [5.2.15-2+b8] (5.2.15-2+b13 Debian:12.15/oldstable [amd64])
//	Inst libgcrypt20 [1.10.1-3] (1.10.1-3+deb12u1 Debian:12.15/oldstable, Debian-Security:12/oldstable-security [amd64])
//
// The bracketed installed version is what makes it an upgrade: packages
// that would be newly installed have none. Between the candidate version
// and the architecture are the archives it comes from.
var aptInst = regexp.MustCompile(`^Inst (\S+) \[([^\]]+)\] \((\S+) (.*?) ?\[[^\]]*\]\)`)

// ParseAptSimulate turns `apt-get -s dist-upgrade` output into pending
// rows sorted by package: security when one of the candidate's archives
// is a security suite.
func ParseAptSimulate(out string) []proto.PatchEntry {
	var rows []proto.PatchEntry
	for line := range strings.Lines(out) {
		m := aptInst.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		origin := strings.TrimSpace(m[4])
		row := pendingPatch(proto.PatchProviderApt, m[1], m[2], m[3])
		row.Origin = origin
		for a := range strings.SplitSeq(origin, ",") {
			if strings.Contains(strings.ToLower(a), "security") {
				row.Security = true
			}
		}
		rows = append(rows, row)
	}
	return sortPending(rows)
}

// aptHistoryEntry is one "name:arch (old, new)" of an Upgrade: line.
var aptHistoryEntry = regexp.MustCompile(`([^\s,()]+) \(([^()]*)\)`)

// ParseAptHistory reads apt's history.log: each transaction's Upgrade:
// line gives installed rows (source apt_history) dated by its
// Start-Date, in the machine's local time loc. Installs of new packages
// are not updates and are left out.
func ParseAptHistory(r io.Reader, arch string, loc *time.Location) []proto.PatchEntry {
	var rows []proto.PatchEntry
	var start *time.Time
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			start = nil
		case strings.HasPrefix(line, "Start-Date:"):
			v := strings.Join(strings.Fields(strings.TrimPrefix(line, "Start-Date:")), " ")
			if t, err := time.ParseInLocation("2006-01-02 15:04:05", v, loc); err == nil {
				u := t.UTC()
				start = &u
			}
		case strings.HasPrefix(line, "Upgrade:"):
			for _, m := range aptHistoryEntry.FindAllStringSubmatch(line, -1) {
				vers := strings.Split(m[2], ",")
				if len(vers) < 2 {
					continue
				}
				name := m[1]
				if arch != "" {
					name = strings.TrimSuffix(name, ":"+arch)
				}
				name = strings.TrimSuffix(name, ":all")
				to := strings.TrimSpace(vers[1])
				rows = append(rows, proto.PatchEntry{Title: name + " " + to, State: proto.PatchInstalled,
					Source: proto.PatchSourceAptHistory, Package: name, InstalledVersion: to, InstalledAt: start})
			}
		}
	}
	return rows
}

// pendingPatch is the row of one pending package update.
func pendingPatch(source, pkg, installed, candidate string) proto.PatchEntry {
	return proto.PatchEntry{Title: pkg + " " + candidate, State: proto.PatchPending, Source: source,
		Package: pkg, InstalledVersion: installed, CandidateVersion: candidate}
}

// sortPending orders rows by package and candidate and drops repeats (one
// update built for two architectures is one patch).
func sortPending(rows []proto.PatchEntry) []proto.PatchEntry {
	slices.SortFunc(rows, func(a, b proto.PatchEntry) int {
		if c := strings.Compare(a.Package, b.Package); c != 0 {
			return c
		}
		return strings.Compare(a.CandidateVersion, b.CandidateVersion)
	})
	return slices.CompactFunc(rows, func(a, b proto.PatchEntry) bool {
		return a.Package == b.Package && a.CandidateVersion == b.CandidateVersion
	})
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
