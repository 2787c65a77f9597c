// Package patches reads a machine's patch state and installs updates
// (SPEC agent behaviour 10): pending updates with their source (security
// or not), the install history the package manager or Windows Update
// keeps, and whether the machine waits for a reboot. A Provider per
// package manager: apt and dnf on Linux (reading local state only: no
// metadata refresh, no network), the Windows Update Agent over COM on
// Windows (wua.go; the COM wrapper is wua_windows.go). docs/agent.md
// "Patches" describes the behaviour.
package patches

import (
	"cmp"
	"context"
	"os/exec"
	"slices"
	"strings"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/toolexec"
)

// Scan is one reading of a machine's patch state.
type Scan struct {
	// Pending are the updates waiting to be installed; History the
	// installed updates the provider's history records (state installed).
	Pending []proto.PatchEntry
	History []proto.PatchEntry
	Status  proto.PatchStatus
}

// Rows are the scan's patch rows, pending first, sorted and without
// repeats (an update both pending and in the history is the installed
// row: the history outranks a stale pending list).
func (s Scan) Rows() []proto.PatchEntry {
	rows := make([]proto.PatchEntry, 0, len(s.Pending)+len(s.History))
	rows = append(rows, s.Pending...)
	rows = append(rows, s.History...)
	slices.SortStableFunc(rows, func(a, b proto.PatchEntry) int {
		return cmp.Or(cmp.Compare(rowKey(a), rowKey(b)),
			cmp.Compare(stateRank(a.State), stateRank(b.State)))
	})
	return slices.CompactFunc(rows, func(a, b proto.PatchEntry) bool { return rowKey(a) == rowKey(b) })
}

// rowKey is how the agent de-duplicates: KB first, then update ID, then
// package and version, then title (the Engine keys rows the same way).
func rowKey(p proto.PatchEntry) string {
	switch {
	case p.KB != "":
		return "kb:" + strings.ToUpper(p.KB)
	case p.UpdateID != "":
		return "update:" + strings.ToLower(p.UpdateID)
	case p.Package != "":
		return "pkg:" + p.Package + "=" + cmp.Or(p.CandidateVersion, p.InstalledVersion)
	}
	return "title:" + strings.ToLower(p.Title)
}

func stateRank(s string) int {
	if s == proto.PatchInstalled {
		return 0
	}
	return 1
}

// Provider reads one package manager's patch state.
type Provider interface {
	// Name is the provider (proto.PatchProvider*).
	Name() string
	// Scan reads the pending updates, the history and the reboot state.
	Scan(ctx context.Context) (Scan, error)
}

// HistoryLimit bounds the installed rows a scan reports from a history
// log: the newest are kept.
const HistoryLimit = 2000

// newestHistory keeps the newest limit rows of a history, in time order.
func newestHistory(rows []proto.PatchEntry, limit int) []proto.PatchEntry {
	slices.SortStableFunc(rows, func(a, b proto.PatchEntry) int {
		switch {
		case a.InstalledAt == nil && b.InstalledAt == nil:
			return 0
		case a.InstalledAt == nil:
			return -1
		case b.InstalledAt == nil:
			return 1
		}
		return a.InstalledAt.Compare(*b.InstalledAt)
	})
	// The newest install of one package version wins.
	seen := map[string]bool{}
	out := make([]proto.PatchEntry, 0, len(rows))
	for i := len(rows) - 1; i >= 0; i-- {
		k := rowKey(rows[i])
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, rows[i])
	}
	slices.Reverse(out)
	if len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out
}

// command and firstError are the agent's one way to run a system tool.
var (
	command    = toolexec.Run
	firstError = toolexec.Explain
)

func hasTool(name string) bool {
	_, err := exec.LookPath(name)
	return err == nil
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
