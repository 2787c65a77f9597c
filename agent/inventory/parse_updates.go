package inventory

import (
	"cmp"
	"regexp"
	"slices"
	"strings"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// Patch sources of Linux package updates: the package manager's name.
const (
	SourceApt    = "apt"
	SourceDnf    = "dnf"
	SourceYum    = "yum"
	SourceZypper = "zypper"
)

// pendingPatch is the patch row of one pending package update.
func pendingPatch(source, pkg, installed, candidate string) proto.PatchEntry {
	return proto.PatchEntry{
		Title:            pkg + " " + candidate,
		State:            proto.PatchPending,
		Source:           source,
		Package:          pkg,
		InstalledVersion: installed,
		CandidateVersion: candidate,
	}
}

// aptInst matches the upgrade lines of `apt-get -s dist-upgrade`:
//
//	Inst bash [5.2.15-2+b8] (5.2.15-2+b13 Debian:12.15/oldstable [amd64])
//
// The bracketed installed version is what makes it an upgrade: packages
// that would be newly installed (new kernel images pulled in by a
// metapackage, new dependencies) have none and are not updates of anything
// installed; the metapackage's own upgrade row stands for them.
var aptInst = regexp.MustCompile(`^Inst (\S+) \[([^\]]+)\] \((\S+) `)

// parseAptSimulate turns `apt-get -s dist-upgrade` output into pending
// patch rows sorted by package.
func parseAptSimulate(out string) []proto.PatchEntry {
	var rows []proto.PatchEntry
	for line := range strings.Lines(out) {
		m := aptInst.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		rows = append(rows, pendingPatch(SourceApt, m[1], m[2], m[3]))
	}
	return sortPatches(rows)
}

// parseCheckUpdate turns `dnf check-update` or `yum check-update` output
// (exit code 100: updates available) into pending patch rows sorted by
// package. It prints "name.arch  version  repository" and wraps a long
// name.arch onto a line of its own; the "Obsoleting Packages" section
// that follows lists installed packages, so reading stops there.
// installed maps "name.arch" (or "name") to the installed version, which
// check-update does not print.
func parseCheckUpdate(out, source string, installed map[string]string) []proto.PatchEntry {
	var rows []proto.PatchEntry
	var carry string
	for line := range strings.Lines(out) {
		if strings.HasPrefix(strings.ToLower(line), "obsoleting packages") {
			break
		}
		f := strings.Fields(line)
		if carry != "" {
			if len(f) == 2 {
				f = []string{carry, f[0], f[1]}
			}
			carry = ""
		}
		if len(f) == 1 && strings.Contains(f[0], ".") && !strings.HasSuffix(f[0], ":") {
			carry = f[0]
			continue
		}
		if len(f) != 3 || !looksLikeVersion(f[1]) {
			continue
		}
		dot := strings.LastIndexByte(f[0], '.')
		if dot <= 0 || dot == len(f[0])-1 {
			continue
		}
		name := f[0][:dot]
		inst, ok := installed[f[0]]
		if !ok {
			inst = installed[name]
		}
		rows = append(rows, pendingPatch(source, name, inst, f[1]))
	}
	return sortPatches(rows)
}

// looksLikeVersion tells versions ("1:2.06-80.el9") from words.
func looksLikeVersion(s string) bool {
	return s != "" && s[0] >= '0' && s[0] <= '9' && strings.ContainsAny(s, ".-")
}

// parseZypperUpdates turns the table of `zypper list-updates` into pending
// patch rows sorted by package. Columns are found by their header names,
// which have moved between zypper versions.
func parseZypperUpdates(out string) []proto.PatchEntry {
	var rows []proto.PatchEntry
	col := map[string]int{}
	for line := range strings.Lines(out) {
		cells := strings.Split(strings.TrimRight(line, "\n"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if len(cells) < 4 {
			continue
		}
		if len(col) == 0 {
			if slices.Contains(cells, "Name") && slices.Contains(cells, "Available Version") {
				for i, c := range cells {
					col[c] = i
				}
			}
			continue
		}
		name, ok1 := cell(cells, col, "Name")
		cur, _ := cell(cells, col, "Current Version")
		avail, ok2 := cell(cells, col, "Available Version")
		if !ok1 || !ok2 || name == "" || !looksLikeVersion(avail) {
			continue
		}
		rows = append(rows, pendingPatch(SourceZypper, name, cur, avail))
	}
	return sortPatches(rows)
}

func cell(cells []string, col map[string]int, name string) (string, bool) {
	i, ok := col[name]
	if !ok || i >= len(cells) {
		return "", false
	}
	return cells[i], true
}

// sortPatches orders rows by package and candidate and drops duplicates:
// the same update of a package built for two architectures is one patch.
func sortPatches(rows []proto.PatchEntry) []proto.PatchEntry {
	slices.SortFunc(rows, func(a, b proto.PatchEntry) int {
		return cmp.Or(cmp.Compare(a.Package, b.Package), cmp.Compare(a.CandidateVersion, b.CandidateVersion))
	})
	return slices.CompactFunc(rows, func(a, b proto.PatchEntry) bool {
		return a.Package == b.Package && a.CandidateVersion == b.CandidateVersion
	})
}
