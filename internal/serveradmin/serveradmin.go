// Package serveradmin answers the read-only parts of SPEC "Server
// administration" that need no other domain (issue 26): the server's
// clock and time zones, the Engine's build and runtime, and the health of
// the public edge's certificate.
package serveradmin

import (
	"bufio"
	"errors"
	"io/fs"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"
)

// Clock is GET /api/server/time.
type Clock struct {
	Now              time.Time `json:"now"`
	UnixMS           int64     `json:"unix_ms"`
	Timezone         string    `json:"timezone"`
	UTCOffsetSeconds int       `json:"utc_offset_seconds"`
}

// ClockAt is the clock at now in loc.
func ClockAt(now time.Time, loc *time.Location) Clock {
	local := now.In(loc)
	_, off := local.Zone()
	return Clock{Now: local, UnixMS: now.UnixMilli(), Timezone: loc.String(), UTCOffsetSeconds: off}
}

// Zone is one time zone of GET /api/server/timezones.
type Zone struct {
	Name             string `json:"name"`
	Abbreviation     string `json:"abbreviation"`
	UTCOffsetSeconds int    `json:"utc_offset_seconds"`
}

// ZoneTables are where the system lists its IANA zones, newest format
// first.
var ZoneTables = []string{"/usr/share/zoneinfo/tzdata.zi", "/usr/share/zoneinfo/zone1970.tab", "/usr/share/zoneinfo/zone.tab"}

// Timezones lists the zones of the first readable table in tables, with
// their offset at now; zones the Go runtime cannot load are left out. No
// table: only UTC and the server's own zone. The list is sorted by name.
func Timezones(fsys fs.FS, tables []string, now time.Time, local *time.Location) []Zone {
	names := map[string]bool{"UTC": true, local.String(): true}
	for _, t := range tables {
		found, err := readZoneTable(fsys, t)
		if err == nil && len(found) > 0 {
			for _, n := range found {
				names[n] = true
			}
			break
		}
	}
	out := make([]Zone, 0, len(names))
	for n := range names {
		loc, err := time.LoadLocation(n)
		if err != nil {
			continue
		}
		abbr, off := now.In(loc).Zone()
		out = append(out, Zone{Name: n, Abbreviation: abbr, UTCOffsetSeconds: off})
	}
	slices.SortFunc(out, func(a, b Zone) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// readZoneTable reads zone names from a zone.tab-style table (third
// column) or tzdata.zi (lines "Z <name> …" and links "L <target> <name>").
func readZoneTable(fsys fs.FS, name string) ([]string, error) {
	f, err := fsys.Open(strings.TrimPrefix(name, "/"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	zi := strings.HasSuffix(name, ".zi")
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		fields := strings.Fields(line)
		switch {
		case zi && len(fields) >= 2 && fields[0] == "Z":
			out = append(out, fields[1])
		case zi && len(fields) >= 3 && fields[0] == "L":
			out = append(out, fields[2])
		case !zi && len(fields) >= 3:
			out = append(out, fields[2])
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New("serveradmin: no zones in " + name)
	}
	return out, nil
}

// RootFS is the file system Timezones reads the system's tables from.
func RootFS() fs.FS { return os.DirFS("/") }

// Build is the Engine's build: module version, VCS revision, Go version.
type Build struct {
	Version   string `json:"version"`
	Revision  string `json:"revision"`
	GoVersion string `json:"go_version"`
}

// BuildInfo reads the running binary's build information.
func BuildInfo() Build {
	b := Build{Version: "(devel)", GoVersion: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			b.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				b.Revision = s.Value
			}
		}
	}
	return b
}

// Certificate severities.
const (
	SeverityOK       = "ok"
	SeverityWarning  = "warning"
	SeverityCritical = "critical"
)

// CertificateSeverity grades a certificate expiring at notAfter: critical
// within 7 days (or expired), warning within 30.
func CertificateSeverity(now, notAfter time.Time) string {
	left := notAfter.Sub(now)
	switch {
	case left < 7*24*time.Hour:
		return SeverityCritical
	case left < 30*24*time.Hour:
		return SeverityWarning
	}
	return SeverityOK
}
