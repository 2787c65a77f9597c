package inventory

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// patchCache is the last successful reading of pending updates and the
// package database state it was read from.
type patchCache struct {
	source    string
	signature string
	at        time.Time
	rows      []proto.PatchEntry
	status    *proto.PatchStatus
}

// cloneStatus copies a scan's status so callers never share it.
func cloneStatus(s *proto.PatchStatus) *proto.PatchStatus {
	if s == nil {
		return nil
	}
	c := *s
	c.RebootPackages = slices.Clone(s.RebootPackages)
	return &c
}

// fresh says whether the cached rows still describe the system: same
// package manager, same database state, and not older than maxAge (which
// catches changes the signature cannot see).
func (p patchCache) fresh(source, signature string, now time.Time, maxAge time.Duration) bool {
	return p.rows != nil && p.source == source && p.signature == signature && now.Sub(p.at) < maxAge
}

// stateSignature summarises the modification time and size of paths
// (the package database and the package lists). Installing, removing or
// upgrading a package, or refreshing the lists, changes it. A missing
// path is part of the state too.
func stateSignature(paths []string) string {
	var b strings.Builder
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			fmt.Fprintf(&b, "%s:-;", p)
			continue
		}
		fmt.Fprintf(&b, "%s:%d:%d;", p, fi.ModTime().UnixNano(), fi.Size())
	}
	return b.String()
}

// patchRows copies rows so the cache and the inventory handed out never
// share a backing array.
func patchRows(rows []proto.PatchEntry) []proto.PatchEntry {
	return orEmpty(slices.Clone(rows))
}
