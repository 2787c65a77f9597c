package patches

import (
	"bufio"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// Dnf reads an rpm system's patch state from dnf's metadata cache (-C:
// no download, no refresh): pending updates from check-update, their
// advisories from updateinfo, the history from dnf.rpm.log and the
// reboot flag from needs-restarting -r. Zero fields take the system's
// paths.
type Dnf struct {
	// RPMLog is dnf's rpm transaction log (/var/log/dnf.rpm.log).
	RPMLog string
}

// Name is "dnf".
func (d *Dnf) Name() string { return proto.PatchProviderDnf }

// Scan reads pending updates, advisories, history and the reboot flag.
func (d *Dnf) Scan(ctx context.Context) (Scan, error) {
	// Exit 100: updates are available; 0: none.
	out, _, err := command(ctx, []int{100}, "dnf", "-q", "-C", "check-update")
	if err != nil {
		return Scan{}, err
	}
	inst, _, err := command(ctx, nil, "rpm", "-qa", "--qf", "%{NAME}.%{ARCH} %{EPOCH}:%{VERSION}-%{RELEASE}\n")
	if err != nil {
		return Scan{}, err
	}
	installed := map[string]string{}
	for line := range strings.Lines(inst) {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		v := strings.TrimPrefix(strings.TrimPrefix(f[1], "(none):"), "0:")
		installed[f[0]] = v
		if dot := strings.LastIndexByte(f[0], '.'); dot > 0 {
			installed[f[0][:dot]] = v
		}
	}
	pending := ParseCheckUpdate(out, proto.PatchProviderDnf, installed)
	// Advisories need updateinfo metadata in the cache; without it the
	// rows stay, unclassified.
	if info, _, err := command(ctx, nil, "dnf", "-q", "-C", "updateinfo", "list", "--updates"); err == nil {
		ApplyUpdateInfo(pending, ParseUpdateInfo(info))
	}
	var hist []proto.PatchEntry
	f, err := os.Open(cmpOr(d.RPMLog, "/var/log/dnf.rpm.log"))
	switch {
	case err == nil:
		hist = newestHistory(ParseDnfRPMLog(f), HistoryLimit)
		f.Close()
	case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission):
		return Scan{}, err
	}
	reboot, err := dnfNeedsReboot(ctx)
	if err != nil {
		return Scan{}, err
	}
	return Scan{Pending: orEmpty(pending), History: orEmpty(hist),
		Status: proto.PatchStatus{Provider: proto.PatchProviderDnf, RebootRequired: reboot}}, nil
}

// dnfNeedsReboot asks needs-restarting -r (dnf-utils, or dnf's plugin):
// exit 1 means a reboot is needed, 0 none.
func dnfNeedsReboot(ctx context.Context) (bool, error) {
	name, args := "dnf", []string{"-q", "-C", "needs-restarting", "-r"}
	if hasTool("needs-restarting") {
		name, args = "needs-restarting", []string{"-r"}
	}
	_, code, err := command(ctx, []int{1}, name, args...)
	if err != nil {
		// Without the plugin there is no answer; say none rather than fail
		// the whole scan.
		return false, nil
	}
	return code == 1, nil
}

// ParseCheckUpdate turns `dnf check-update` or `yum check-update` output
// into pending rows sorted by package. It prints "name.arch version
// repository" and wraps a long name.arch onto a line of its own; the
// "Obsoleting Packages" section that follows lists installed packages, so
// reading stops there. installed maps "name.arch" (or "name") to the
// installed version, which check-update does not print.
func ParseCheckUpdate(out, source string, installed map[string]string) []proto.PatchEntry {
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
		row := pendingPatch(source, name, inst, f[1])
		row.Origin = f[2]
		rows = append(rows, row)
	}
	return sortPending(rows)
}

// looksLikeVersion tells versions ("1:2.06-80.el9") from words.
func looksLikeVersion(s string) bool {
	return s != "" && s[0] >= '0' && s[0] <= '9' && strings.ContainsAny(s, ".-")
}

// Advisory is one `dnf updateinfo list` row: an advisory fixing a package
// version.
type Advisory struct {
	ID       string
	Security bool
	Severity string
	Package  string
	Version  string
}

// ParseUpdateInfo reads `dnf updateinfo list --updates`:
//
//	FEDORA-2024-3b5a1d6c27 Important/Sec. openssl-libs-1:3.1.1-4.fc39.x86_64
//	RHBA-2024:0263         bugfix         tzdata-2024a-1.el9.noarch
func ParseUpdateInfo(out string) []Advisory {
	var advs []Advisory
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		name, ver, ok := splitNEVRA(f[2])
		if !ok {
			continue
		}
		a := Advisory{ID: f[0], Package: name, Version: ver}
		typ := f[1]
		if sev, rest, found := strings.Cut(typ, "/"); found {
			a.Severity, typ = sev, rest
		}
		a.Security = strings.HasPrefix(strings.ToLower(typ), "sec")
		if !a.Security && typ != "bugfix" && typ != "enhancement" && typ != "newpackage" && typ != "unspecified" {
			continue
		}
		advs = append(advs, a)
	}
	return advs
}

// ApplyUpdateInfo marks pending rows with the advisories that fix their
// candidate version: security, severity and the advisory as origin.
func ApplyUpdateInfo(rows []proto.PatchEntry, advs []Advisory) {
	by := map[string]Advisory{}
	for _, a := range advs {
		k := a.Package + "=" + a.Version
		if old, ok := by[k]; ok && old.Security && !a.Security {
			continue
		}
		by[k] = a
	}
	for i := range rows {
		a, ok := by[rows[i].Package+"="+rows[i].CandidateVersion]
		if !ok {
			continue
		}
		rows[i].Security = a.Security
		rows[i].Severity = a.Severity
		rows[i].Origin = a.ID
	}
}

// splitNEVRA splits "openssl-libs-1:3.1.1-4.fc39.x86_64" into the name
// and "[epoch:]version-release" as check-update prints it (no 0: epoch).
func splitNEVRA(s string) (name, version string, ok bool) {
	if dot := strings.LastIndexByte(s, '.'); dot > 0 {
		s = s[:dot]
	}
	rel := strings.LastIndexByte(s, '-')
	if rel <= 0 {
		return "", "", false
	}
	ver := strings.LastIndexByte(s[:rel], '-')
	if ver <= 0 {
		return "", "", false
	}
	v := strings.TrimPrefix(s[ver+1:], "0:")
	if !looksLikeVersion(v) {
		return "", "", false
	}
	return s[:ver], v, true
}

// ParseDnfRPMLog reads dnf.rpm.log: every "Upgrade: <nevra>" line is an
// installed row (source dnf_history) at the line's timestamp.
//
//	2024-01-15T10:22:33+0000 SUBDEBUG Upgrade: openssl-libs-1:3.0.7-25.el9_3.x86_64
func ParseDnfRPMLog(r io.Reader) []proto.PatchEntry {
	var rows []proto.PatchEntry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 4 || f[2] != "Upgrade:" {
			continue
		}
		name, ver, ok := splitNEVRA(f[3])
		if !ok {
			continue
		}
		row := proto.PatchEntry{Title: name + " " + ver, State: proto.PatchInstalled, Source: proto.PatchSourceDnfHistory,
			Package: name, InstalledVersion: ver}
		for _, layout := range []string{"2006-01-02T15:04:05-0700", time.RFC3339} {
			if t, err := time.Parse(layout, f[0]); err == nil {
				u := t.UTC()
				row.InstalledAt = &u
				break
			}
		}
		rows = append(rows, row)
	}
	return rows
}
