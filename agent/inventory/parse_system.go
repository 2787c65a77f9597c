package inventory

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// parseOSRelease reads os-release(5): KEY=value lines, values optionally
// in single or double quotes with backslash escapes inside double quotes.
// Comments, blank lines and lines without '=' are ignored.
func parseOSRelease(content string) map[string]string {
	kv := map[string]string{}
	for line := range strings.Lines(content) {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			continue
		}
		kv[k] = unquoteShell(v)
	}
	return kv
}

func unquoteShell(v string) string {
	if len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
		return v[1 : len(v)-1]
	}
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
		var b strings.Builder
		for i := 0; i < len(v); i++ {
			if v[i] == '\\' && i+1 < len(v) && strings.IndexByte("\"\\$`", v[i+1]) >= 0 {
				i++
			}
			b.WriteByte(v[i])
		}
		return b.String()
	}
	return v
}

// unit is one systemd service unit as systemctl list-units or the
// systemd D-Bus API describes it.
type unit struct {
	Name, Load, Active, Sub, Description string
}

// parseSystemctlUnits reads `systemctl list-units --type=service --all
// --no-legend --no-pager --plain --full`: UNIT LOAD ACTIVE SUB DESCRIPTION.
// A leading state marker ("●", "*"), printed by some versions even with
// --plain, is dropped; lines with fewer than four columns are skipped.
func parseSystemctlUnits(out string) []unit {
	var units []unit
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) > 0 && (f[0] == "●" || f[0] == "*" || f[0] == "×") {
			f = f[1:]
		}
		if len(f) < 4 || !strings.HasSuffix(f[0], ".service") {
			continue
		}
		units = append(units, unit{Name: f[0], Load: f[1], Active: f[2], Sub: f[3], Description: strings.Join(f[4:], " ")})
	}
	return units
}

// parseSystemctlUnitFiles reads `systemctl list-unit-files --type=service
// --no-legend --no-pager --full`: UNIT-FILE STATE [PRESET], into a map of
// unit file name to state (enabled, disabled, static, masked, ...).
func parseSystemctlUnitFiles(out string) map[string]string {
	files := map[string]string{}
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) < 2 || !strings.HasSuffix(f[0], ".service") {
			continue
		}
		files[f[0]] = f[1]
	}
	return files
}

// serviceState maps systemd's ActiveState to the cross-platform service
// state watchdog rules compare (running, stopped, failed, ...).
func serviceState(active string) string {
	switch active {
	case "active", "reloading", "refreshing":
		return "running"
	case "inactive":
		return "stopped"
	case "activating":
		return "starting"
	case "deactivating":
		return "stopping"
	default: // failed, maintenance, and states newer systemd may add
		return active
	}
}

// mergeServices builds the service inventory from the loaded units and
// the unit files. Installed but never loaded services appear from their
// unit file as stopped, with no load state. Template unit files
// ("getty@.service") are not services by themselves: their instances are
// listed as units and take the template's start mode. Units systemd knows
// only as a missing name (load state not-found) and that are not running
// are references to software that is not installed, and are left out.
func mergeServices(units []unit, files map[string]string) []proto.Service {
	byName := map[string]proto.Service{}
	for _, u := range units {
		if u.Load == "not-found" && u.Active == "inactive" {
			continue
		}
		mode, ok := files[u.Name]
		if !ok {
			mode = files[templateName(u.Name)]
		}
		byName[u.Name] = proto.Service{
			Name: u.Name, State: serviceState(u.Active), SubState: u.Sub,
			LoadState: u.Load, ActiveState: u.Active, StartMode: mode, Description: u.Description,
		}
	}
	for name, mode := range files {
		if _, ok := byName[name]; ok || strings.HasSuffix(name, "@.service") {
			continue
		}
		byName[name] = proto.Service{Name: name, State: "stopped", SubState: "dead", ActiveState: "inactive", StartMode: mode}
	}
	out := make([]proto.Service, 0, len(byName))
	for _, s := range byName {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b proto.Service) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// templateName is the template unit of an instance: "getty@tty1.service"
// -> "getty@.service"; other names are returned unchanged.
func templateName(name string) string {
	at := strings.IndexByte(name, '@')
	if at < 0 {
		return name
	}
	return name[:at+1] + ".service"
}

// loginSession is one logind session as `loginctl show-session` prints it.
type loginSession struct {
	Session proto.Session
	Class   string
}

// loginctlProperties are the properties parseLoginctlSession reads.
var loginctlProperties = []string{"Id", "Name", "TTY", "Seat", "Remote", "RemoteHost", "Type", "Class", "Active", "Timestamp"}

// parseLoginctlSession reads `loginctl show-session ID -p ...` key=value
// output. Timestamp is local wall-clock time ("Mon 2026-01-22 14:51:57
// CET"); its zone abbreviation can be ambiguous, so it is read in loc.
func parseLoginctlSession(out string, loc *time.Location) loginSession {
	var ls loginSession
	s := &ls.Session
	var remote bool
	var seat string
	for line := range strings.Lines(out) {
		k, v, ok := strings.Cut(strings.TrimRight(line, "\n"), "=")
		if !ok {
			continue
		}
		switch k {
		case "Id":
			s.SessionID = v
		case "Name":
			s.Username = v
		case "TTY":
			s.TTY = v
		case "Seat":
			seat = v
		case "Remote":
			remote = v == "yes"
		case "RemoteHost":
			s.Remote = v
		case "Type":
			s.Type = v
		case "Class":
			ls.Class = v
		case "Active":
			s.Active = v == "yes"
		case "Timestamp":
			if f := strings.Fields(v); len(f) >= 3 {
				if t, err := time.ParseInLocation("2006-01-02 15:04:05", f[1]+" "+f[2], loc); err == nil && sendable(t.UTC()) {
					t = t.UTC()
					s.LoginAt = &t
				}
			}
		}
	}
	if s.TTY == "" {
		s.TTY = seat // graphical logins have a seat, not a tty
	}
	if remote && (s.Type == "tty" || s.Type == "unspecified" || s.Type == "") {
		s.Type = "ssh"
	}
	return ls
}

// parseLoginctlList reads the session IDs of `loginctl list-sessions
// --no-legend --no-pager`: the first column in every systemd version.
func parseLoginctlList(out string) []string {
	var ids []string
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) >= 2 {
			if _, err := strconv.ParseUint(f[1], 10, 32); err == nil { // UID column
				ids = append(ids, f[0])
			}
		}
	}
	return ids
}
