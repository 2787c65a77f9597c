package watchdogs

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// Snapshot is what rules read of one device.
type Snapshot struct {
	GUID     string
	Hostname string
	SiteID   int64
	LastSeen *time.Time
	// Metrics is the last heartbeat's (nil: none yet).
	Metrics      *proto.Metrics
	AgentVersion string
	BootID       string
	// Disks, Services and Processes are inventory collections (nil: not
	// collected).
	Disks     []proto.Disk
	Services  []proto.Service
	Processes []proto.Process
	Software  []SoftwareRow
	Roles     []RoleRow
}

// SoftwareRow is one installed package (name lower-cased).
type SoftwareRow struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// RoleRow is one agent role's observed health.
type RoleRow struct {
	Key      string `json:"key"`
	Observed string `json:"observed"`
}

// Memo is what the evaluator remembers of a watchdog on a device.
type Memo struct {
	// Since is, per rule, since when its raw condition has held.
	Since []*time.Time `json:"since"`
	// BootID is the device's boot ID at the previous evaluation.
	BootID string `json:"boot_id"`
}

// State is the evaluator's memory plus the device's active incident.
type State struct {
	Consecutive    int
	Memo           Memo
	ClearSince     *time.Time
	LastResolvedAt *time.Time
	// Active is the device's active incident of this watchdog (nil: none).
	Active *ActiveIncident
	// Muted: a device override mutes the watchdog here.
	Muted bool
}

// ActiveIncident is the part of an active incident evaluation reads.
type ActiveIncident struct {
	ID          int64
	State       string
	OfflineOnly bool
}

// Sample is one rule's observed value, recorded on the incident.
type Sample struct {
	Rule     int    `json:"rule"`
	Subject  string `json:"subject"`
	Target   string `json:"target,omitempty"`
	Operator string `json:"operator"`
	// Value is what was observed, in the subject's unit (a number, a
	// state, a version or a time).
	Value   any  `json:"value"`
	Matched bool `json:"matched"`
}

// Decision kinds.
const (
	DecideNone    = ""
	DecideOpen    = "open"
	DecideTouch   = "touch"
	DecideResolve = "resolve"
	DecidePurge   = "purge"
)

// Resolve reasons.
const (
	ReasonCleared  = "condition_cleared"
	ReasonDisabled = "policy_disabled"
	ReasonTarget   = "target_gone"
	ReasonStale    = "telemetry_stale"
)

// Decision is what one evaluation does to one device.
type Decision struct {
	Kind string
	// Reason of a resolve.
	Reason string
	// Matched: the combined condition held this time.
	Matched     bool
	Samples     []Sample
	OfflineOnly bool
	// Next is the state to remember.
	Next State
}

// Evaluate decides, for one device, what the policy's rules say now.
// onlineWindow is how long after its last heartbeat a device is online.
func Evaluate(p Policy, snap Snapshot, st State, now time.Time, onlineWindow time.Duration) Decision {
	active := st.Active != nil
	next := st
	next.Memo.Since = make([]*time.Time, len(p.Rules))
	next.Memo.BootID = snap.BootID
	d := Decision{Samples: make([]Sample, 0, len(p.Rules))}
	held := make([]bool, len(p.Rules))
	offlineOnly := true
	online := snap.LastSeen != nil && now.Sub(*snap.LastSeen) <= onlineWindow
	unknown := false
	for i, r := range p.Rules {
		if !online && describesNow(r.Subject) {
			// An offline device's last CPU, services or uptime say
			// nothing of now: the rule neither matches (no incident opens
			// on old values, nor does a boot grace lapse on a stale
			// uptime) nor clears an open one; its window keeps its start.
			unknown = true
			if i < len(st.Memo.Since) {
				next.Memo.Since[i] = st.Memo.Since[i]
			}
			d.Samples = append(d.Samples, Sample{Rule: i, Subject: r.Subject, Target: r.Target, Operator: r.Operator})
			continue
		}
		raw, value := evalRule(r, snap, st.Memo, active, now, onlineWindow)
		if raw {
			since := now
			if i < len(st.Memo.Since) && st.Memo.Since[i] != nil {
				since = *st.Memo.Since[i]
			}
			next.Memo.Since[i] = &since
			held[i] = now.Sub(since) >= time.Duration(r.ForSeconds)*time.Second
		}
		if held[i] && r.Subject != SubjectOffline {
			offlineOnly = false
		}
		d.Samples = append(d.Samples, Sample{Rule: i, Subject: r.Subject, Target: r.Target, Operator: r.Operator,
			Value: value, Matched: held[i]})
	}
	d.Matched = combine(p.Match, held)
	d.OfflineOnly = d.Matched && offlineOnly

	stale := p.Noise.StaleSeconds > 0 && !hasSubject(p, SubjectOffline) &&
		(snap.LastSeen == nil || now.Sub(*snap.LastSeen) > time.Duration(p.Noise.StaleSeconds)*time.Second)

	if active {
		next.Consecutive = 0
		switch {
		case stale:
			d.Kind, d.Reason = DecideResolve, ReasonStale
		case d.Matched:
			next.ClearSince = nil
			d.Kind = DecideTouch
		case unknown:
			// Nothing known clears it while the device is silent;
			// noise.stale_seconds resolves it where the policy sets it.
		default:
			if next.ClearSince == nil {
				next.ClearSince = &now
			}
			if now.Sub(*next.ClearSince) >= time.Duration(p.Noise.AutoResolveSeconds)*time.Second {
				d.Kind, d.Reason = DecideResolve, ReasonCleared
				if st.Active.OfflineOnly && online {
					d.Kind = DecidePurge
				}
			}
		}
		if d.Kind == DecideResolve || d.Kind == DecidePurge {
			next.Active, next.ClearSince = nil, nil
			next.LastResolvedAt = &now
		}
		d.Next = next
		return d
	}

	next.ClearSince = nil
	if !d.Matched {
		next.Consecutive = 0
		d.Next = next
		return d
	}
	next.Consecutive = st.Consecutive + 1
	bootGrace := p.Noise.BootGraceSeconds > 0 && online && snap.Metrics != nil &&
		snap.Metrics.UptimeSeconds < int64(p.Noise.BootGraceSeconds) && !d.OfflineOnly
	cooling := st.LastResolvedAt != nil && now.Sub(*st.LastResolvedAt) < time.Duration(p.Noise.CooldownSeconds)*time.Second
	if next.Consecutive >= p.Noise.ConsecutiveMatches && !st.Muted && !bootGrace && !cooling && !stale {
		d.Kind = DecideOpen
	}
	d.Next = next
	return d
}

// describesNow says whether a subject is the device's current state,
// known only while it reports: everything but offline itself, installed
// software and the agent's version.
func describesNow(subject string) bool {
	switch subject {
	case SubjectOffline, SubjectSoftware, SubjectAgentVersion:
		return false
	}
	return true
}

func combine(match string, held []bool) bool {
	if match == MatchAny {
		for _, h := range held {
			if h {
				return true
			}
		}
		return false
	}
	for _, h := range held {
		if !h {
			return false
		}
	}
	return len(held) > 0
}

func hasSubject(p Policy, subject string) bool {
	for _, r := range p.Rules {
		if r.Subject == subject {
			return true
		}
	}
	return false
}

// evalRule is a rule's raw condition (before its window) and the value it
// observed. active selects the recovery threshold (hysteresis).
func evalRule(r Rule, s Snapshot, memo Memo, active bool, now time.Time, onlineWindow time.Duration) (bool, any) {
	switch r.Subject {
	case SubjectOffline:
		var seen any
		if s.LastSeen != nil {
			seen = s.LastSeen.UTC().Format(time.RFC3339)
		}
		return s.LastSeen == nil || now.Sub(*s.LastSeen) > onlineWindow, seen
	case SubjectCPU:
		if s.Metrics == nil {
			return false, nil
		}
		return compare(r, s.Metrics.CPUPercent, active), round(s.Metrics.CPUPercent)
	case SubjectMemory:
		if s.Metrics == nil || s.Metrics.MemoryTotalBytes == 0 {
			return false, nil
		}
		v := float64(s.Metrics.MemoryUsedBytes) / float64(s.Metrics.MemoryTotalBytes) * 100
		return compare(r, v, active), round(v)
	case SubjectUptime:
		if s.Metrics == nil {
			return false, nil
		}
		return compare(r, float64(s.Metrics.UptimeSeconds), active), s.Metrics.UptimeSeconds
	case SubjectSessions:
		if s.Metrics == nil {
			return false, nil
		}
		return compare(r, float64(len(s.Metrics.LoggedInUsers)), active), len(s.Metrics.LoggedInUsers)
	case SubjectStorage:
		return evalStorage(r, s.Disks, active)
	case SubjectService:
		if s.Services == nil {
			return false, nil
		}
		for _, svc := range s.Services {
			if strings.EqualFold(svc.Name, r.Target) || strings.EqualFold(svc.DisplayName, r.Target) {
				running := svc.State == "running"
				switch r.Operator {
				case OpNotRunning:
					return !running, svc.State
				case OpRunning:
					return running, svc.State
				}
				return false, svc.State
			}
		}
		return r.Operator == OpMissing, "missing"
	case SubjectProcess:
		if s.Processes == nil {
			return false, nil
		}
		n := 0
		for _, p := range s.Processes {
			if processNamed(p.Name, r.Target) {
				n++
			}
		}
		if r.Operator == OpMissing {
			return n == 0, n
		}
		return n > 0, n
	case SubjectSoftware:
		key := strings.ToLower(r.Target)
		var versions []string
		for _, sw := range s.Software {
			if sw.Name == key {
				versions = append(versions, sw.Version)
			}
		}
		switch r.Operator {
		case OpMissing:
			return len(versions) == 0, versions
		case OpPresent:
			return len(versions) > 0, versions
		case OpVersionLT:
			for _, v := range versions {
				if VersionLess(v, r.Value) {
					return true, versions
				}
			}
			return false, versions
		}
	case SubjectAgentVersion:
		if s.AgentVersion == "" {
			return false, nil
		}
		return VersionLess(s.AgentVersion, r.Value), s.AgentVersion
	case SubjectRoleHealth:
		for _, role := range s.Roles {
			if (r.Target == "" || role.Key == r.Target) && role.Observed != "" && role.Observed != proto.RoleHealthy &&
				role.Observed != proto.RoleStopped { // stopped on purpose is not a fault
				return true, role.Key + ": " + role.Observed
			}
		}
		return false, nil
	case SubjectRebooted:
		return memo.BootID != "" && s.BootID != "" && memo.BootID != s.BootID, s.BootID
	}
	return false, nil
}

func processNamed(name, target string) bool {
	name = strings.ToLower(name)
	target = strings.ToLower(target)
	return name == target || strings.TrimSuffix(name, ".exe") == strings.TrimSuffix(target, ".exe")
}

// evalStorage reads mounted volumes other than CD-ROM drives: the named
// mountpoint, or the fullest.
func evalStorage(r Rule, disks []proto.Disk, active bool) (bool, any) {
	best, found, where := 0.0, false, ""
	for _, d := range disks {
		if d.CDROM || d.Mountpoint == "" || d.UsedBytes+d.FreeBytes == 0 {
			continue
		}
		if r.Target != "" && !strings.EqualFold(d.Mountpoint, r.Target) {
			continue
		}
		v := float64(d.UsedBytes) / float64(d.UsedBytes+d.FreeBytes) * 100
		if !found || v > best {
			best, found, where = v, true, d.Mountpoint
		}
	}
	if !found {
		return false, nil
	}
	return compare(r, best, active), map[string]any{"mountpoint": where, "percent": round(best)}
}

// compare applies a numeric rule; while an incident is active the
// recovery threshold decides (the condition holds until it is crossed).
func compare(r Rule, v float64, active bool) bool {
	if r.Threshold == nil {
		return false
	}
	t := *r.Threshold
	if active && r.RecoveryThreshold != nil {
		t = *r.RecoveryThreshold
	}
	switch r.Operator {
	case OpGT:
		return v > t
	case OpGTE:
		return v >= t
	case OpLT:
		return v < t
	case OpLTE:
		return v <= t
	}
	return false
}

func round(v float64) float64 {
	f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', 2, 64), 64)
	return f
}

// VersionLess compares dotted versions numerically ("1.10" after "1.9");
// a part's leading digits count, a leading "v" is ignored.
func VersionLess(a, b string) bool {
	pa, pb := versionParts(a), versionParts(b)
	for i := 0; i < max(len(pa), len(pb)); i++ {
		var x, y int64
		if i < len(pa) {
			x = pa[i]
		}
		if i < len(pb) {
			y = pb[i]
		}
		if x != y {
			return x < y
		}
	}
	return false
}

func versionParts(v string) []int64 {
	v = strings.TrimPrefix(strings.TrimSpace(strings.ToLower(v)), "v")
	if i := strings.IndexAny(v, "-+~ "); i >= 0 {
		v = v[:i]
	}
	var out []int64
	for _, p := range strings.Split(v, ".") {
		j := 0
		for j < len(p) && p[j] >= '0' && p[j] <= '9' {
			j++
		}
		n, _ := strconv.ParseInt(p[:j], 10, 64)
		out = append(out, n)
	}
	return out
}

// Title is an incident's title.
func Title(p Policy, hostname string) string {
	return fmt.Sprintf("%s on %s", p.Name, hostname)
}

// snapshotOf decodes a snapshot row's JSON columns.
func snapshotOf(guid, hostname string, site int64, lastSeen *time.Time, metrics, hardware, services, processes, software, roles []byte,
	agentVersion, bootID string) (Snapshot, error) {
	s := Snapshot{GUID: guid, Hostname: hostname, SiteID: site, LastSeen: lastSeen, AgentVersion: agentVersion, BootID: bootID}
	if lastSeen != nil && len(metrics) > 2 {
		var m proto.Metrics
		if err := json.Unmarshal(metrics, &m); err != nil {
			return s, fmt.Errorf("device %s metrics: %w", guid, err)
		}
		s.Metrics = &m
	}
	if len(hardware) > 0 && string(hardware) != "null" {
		var hw proto.Hardware
		if err := json.Unmarshal(hardware, &hw); err != nil {
			return s, fmt.Errorf("device %s hardware: %w", guid, err)
		}
		s.Disks = hw.Disks
		if s.Disks == nil {
			s.Disks = []proto.Disk{}
		}
	}
	for _, c := range []struct {
		raw []byte
		to  any
	}{{services, &s.Services}, {processes, &s.Processes}, {software, &s.Software}, {roles, &s.Roles}} {
		if len(c.raw) == 0 || string(c.raw) == "null" {
			continue
		}
		if err := json.Unmarshal(c.raw, c.to); err != nil {
			return s, fmt.Errorf("device %s inventory: %w", guid, err)
		}
	}
	return s, nil
}
