package inventory

import (
	"cmp"
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
