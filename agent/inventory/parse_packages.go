package inventory

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// Software sources.
const (
	SourceDpkg = "dpkg"
	SourceRPM  = "rpm"
)

// dpkgFormat is the dpkg-query -f format parseDpkg reads: one package per
// line, tab-separated. Installed-Size is in KiB.
const dpkgFormat = "${Package}\t${Version}\t${Architecture}\t${db:Status-Abbrev}\t${Installed-Size}\t${Maintainer}\n"

// parseDpkg turns `dpkg-query -W -f dpkgFormat` output into software rows,
// sorted by name and arch. Packages that are not installed (removed with
// config files left, half-installed, ...) and malformed lines are skipped.
func parseDpkg(out string) []proto.Software {
	var rows []proto.Software
	for line := range strings.Lines(out) {
		f := strings.Split(strings.TrimRight(line, "\n"), "\t")
		if len(f) != 6 || f[0] == "" || f[1] == "" {
			continue
		}
		// Status-Abbrev is want, status, error flags: "ii ", "hi ", "rc ".
		// Only the second letter says whether the package is installed.
		if len(f[3]) < 2 || f[3][1] != 'i' {
			continue
		}
		s := proto.Software{Name: f[0], Version: f[1], Arch: f[2], Source: SourceDpkg, Publisher: personName(f[5])}
		if kib, err := strconv.ParseUint(strings.TrimSpace(f[4]), 10, 64); err == nil {
			s.SizeBytes = kib * 1024
		}
		rows = append(rows, s)
	}
	sortSoftware(rows)
	return rows
}

// rpmFormat is the rpm --queryformat parseRPM reads. The epoch is shown
// only when set, as dnf and yum show it, so versions compare as text.
const rpmFormat = "%{NAME}\t%|EPOCH?{%{EPOCH}:}:{}|%{VERSION}-%{RELEASE}\t%{ARCH}\t%{VENDOR}\t%{INSTALLTIME}\t%{SIZE}\n"

// parseRPM turns `rpm -qa --queryformat rpmFormat` output into software
// rows, sorted by name and arch. gpg-pubkey entries are keys in rpm's
// keyring, not software, and are skipped with malformed lines.
func parseRPM(out string) []proto.Software {
	var rows []proto.Software
	for line := range strings.Lines(out) {
		f := strings.Split(strings.TrimRight(line, "\n"), "\t")
		if len(f) != 6 || f[0] == "" || f[1] == "" || f[0] == "gpg-pubkey" {
			continue
		}
		s := proto.Software{Name: f[0], Version: f[1], Arch: none(f[2]), Source: SourceRPM, Publisher: none(f[3])}
		if sec, err := strconv.ParseInt(f[4], 10, 64); err == nil && sec > 0 {
			if at := time.Unix(sec, 0).UTC(); sendable(at) {
				s.InstalledAt = &at
			}
		}
		if n, err := strconv.ParseUint(f[5], 10, 64); err == nil {
			s.SizeBytes = n
		}
		rows = append(rows, s)
	}
	sortSoftware(rows)
	return rows
}

// sendable reports whether t can travel as an RFC 3339 timestamp: JSON
// refuses years outside 0..9999, which a corrupt rpm database or a
// crafted package header can produce. Such a time is dropped, not sent.
func sendable(t time.Time) bool {
	return t.Year() >= 1 && t.Year() <= 9999
}

// none maps rpm's "(none)" placeholder to empty.
func none(s string) string {
	if s == "(none)" {
		return ""
	}
	return s
}

// personName drops the address from "Name <address>".
func personName(s string) string {
	if i := strings.IndexByte(s, '<'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

func sortSoftware(rows []proto.Software) {
	slices.SortFunc(rows, func(a, b proto.Software) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Arch, b.Arch), cmp.Compare(a.Version, b.Version))
	})
}
