// Package watchdogs is the monitoring capability (SPEC "Watchdog",
// "Watchdog incident", "Device watchdog override"): policies whose rules
// are evaluated against device data already in PostgreSQL (heartbeat
// metrics, inventory, installed software, role health), incidents opened
// and resolved by that evaluation, the operator's alert queue
// (acknowledge, suppress with a reason) and device overrides.
//
// Evaluation is a pure function of a policy, a device snapshot and what
// the evaluator remembered last time (evaluate.go); the Service applies
// its decisions to a batch of devices in one transaction, and the partial
// unique index on watchdog_incidents keeps one active incident per
// watchdog and device whatever racing evaluators decide.
package watchdogs

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cairn-rmm/cairn"
)

// Severities.
const (
	SeverityInfo     = "info"
	SeverityWarning  = "warning"
	SeverityCritical = "critical"
)

// Severities are every severity, least first.
var Severities = []string{SeverityInfo, SeverityWarning, SeverityCritical}

// Incident states (SPEC "Watchdog incident"), as the wire spells them.
const (
	StateOpen         = "Open"
	StateAcknowledged = "Acknowledged"
	StateSuppressed   = "Suppressed"
	StateResolved     = "Resolved"
)

// States are every incident state.
var States = []string{StateOpen, StateAcknowledged, StateSuppressed, StateResolved}

// Target kinds.
const (
	TargetAll     = "all"
	TargetDevices = "devices"
	TargetFilters = "filters"
)

// Rule combinations.
const (
	MatchAll = "all"
	MatchAny = "any"
)

// Rule subjects (docs/api.md "Watchdogs": subjects and units).
const (
	SubjectOffline      = "offline"
	SubjectCPU          = "cpu_percent"
	SubjectMemory       = "memory_percent"
	SubjectStorage      = "storage_percent"
	SubjectUptime       = "uptime_seconds"
	SubjectSessions     = "sessions"
	SubjectService      = "service"
	SubjectProcess      = "process"
	SubjectSoftware     = "software"
	SubjectAgentVersion = "agent_version"
	SubjectRoleHealth   = "role_health"
	SubjectRebooted     = "rebooted"
)

// Operators.
const (
	OpGT         = "gt"
	OpGTE        = "gte"
	OpLT         = "lt"
	OpLTE        = "lte"
	OpIs         = "is"
	OpNotRunning = "not_running"
	OpRunning    = "running"
	OpMissing    = "missing"
	OpPresent    = "present"
	OpVersionLT  = "version_lt"
	OpUnhealthy  = "unhealthy"
)

// Action types.
const (
	ActionTrack          = "track"
	ActionToast          = "toast"
	ActionServiceControl = "service_control"
	// ActionRunAssembly runs a script assembly on the device through the
	// command path (a one-device job run, signed per device).
	ActionRunAssembly = "run_assembly"
)

// Service control actions an action may ask for.
var serviceActions = []string{"start", "stop", "restart"}

// SubjectInfo describes a rule subject for the editor (GET
// /api/watchdogs/metadata).
type SubjectInfo struct {
	Subject     string   `json:"subject"`
	Label       string   `json:"label"`
	Unit        string   `json:"unit"`
	Operators   []string `json:"operators"`
	Threshold   bool     `json:"threshold"`
	Target      string   `json:"target"`
	Value       bool     `json:"value"`
	Description string   `json:"description"`
}

var numericOps = []string{OpGT, OpGTE, OpLT, OpLTE}

// Subjects are every rule subject the evaluator knows, with the data they
// read.
var Subjects = []SubjectInfo{
	{Subject: SubjectOffline, Label: "Device offline", Unit: "", Operators: []string{OpIs},
		Description: "no heartbeat within the online window"},
	{Subject: SubjectCPU, Label: "CPU usage", Unit: "percent", Operators: numericOps, Threshold: true,
		Description: "the last heartbeat's CPU usage"},
	{Subject: SubjectMemory, Label: "Memory usage", Unit: "percent", Operators: numericOps, Threshold: true,
		Description: "used memory over total memory, from the last heartbeat"},
	{Subject: SubjectStorage, Label: "Storage usage", Unit: "percent", Operators: numericOps, Threshold: true,
		Target:      "mountpoint (optional; empty: the fullest mounted volume)",
		Description: "used over used plus free bytes of mounted volumes; CD-ROM drives ignored"},
	{Subject: SubjectUptime, Label: "Uptime", Unit: "seconds", Operators: numericOps, Threshold: true,
		Description: "the last heartbeat's uptime"},
	{Subject: SubjectSessions, Label: "Signed-in users", Unit: "count", Operators: numericOps, Threshold: true,
		Description: "users signed in, from the last heartbeat"},
	{Subject: SubjectService, Label: "Service state", Operators: []string{OpNotRunning, OpRunning, OpMissing},
		Target: "service name", Description: "a service of the device's service inventory"},
	{Subject: SubjectProcess, Label: "Process", Operators: []string{OpMissing, OpPresent},
		Target: "process name", Description: "a process of the device's process inventory"},
	{Subject: SubjectSoftware, Label: "Installed software", Operators: []string{OpMissing, OpPresent, OpVersionLT},
		Target: "software name (case-insensitive)", Value: true,
		Description: "installed software; version_lt compares with value"},
	{Subject: SubjectAgentVersion, Label: "Agent version", Operators: []string{OpVersionLT}, Value: true,
		Description: "the agent's version compared with value"},
	{Subject: SubjectRoleHealth, Label: "Agent role health", Operators: []string{OpUnhealthy},
		Target: "role key (e.g. system:rdp; empty: any role)", Description: "observed role health other than Healthy"},
	{Subject: SubjectRebooted, Label: "Rebooted", Operators: []string{OpIs}, Unit: "",
		Description: "the boot ID changed since the previous evaluation"},
}

func subjectInfo(s string) (SubjectInfo, bool) {
	i := slices.IndexFunc(Subjects, func(x SubjectInfo) bool { return x.Subject == s })
	if i < 0 {
		return SubjectInfo{}, false
	}
	return Subjects[i], true
}

// Targets are which devices of the scope a policy applies to.
type Targets struct {
	Kind        string   `json:"kind"`
	DeviceGUIDs []string `json:"device_guids"`
	FilterIDs   []int64  `json:"filter_ids"`
}

// Rule is one condition.
type Rule struct {
	Subject  string `json:"subject"`
	Operator string `json:"operator"`
	// Target names the service, process, software, mountpoint or role.
	Target string `json:"target"`
	// Threshold and RecoveryThreshold are in the subject's unit; the
	// condition holds from Threshold and, once an incident is active,
	// until RecoveryThreshold is crossed back (nil: Threshold).
	Threshold         *float64 `json:"threshold"`
	RecoveryThreshold *float64 `json:"recovery_threshold"`
	// Value is a version for version_lt.
	Value string `json:"value"`
	// ForSeconds is how long the condition must hold before the rule
	// matches (its window: CPU over 90% for 300 s).
	ForSeconds int `json:"for_seconds"`
}

// Noise are the noise controls.
type Noise struct {
	// IntervalSeconds is how often the policy is evaluated.
	IntervalSeconds int `json:"interval_seconds"`
	// ConsecutiveMatches evaluations must match before an incident opens.
	ConsecutiveMatches int `json:"consecutive_matches"`
	// CooldownSeconds after an incident resolved, no new one opens for
	// the same device.
	CooldownSeconds int `json:"cooldown_seconds"`
	// AutoResolveSeconds the condition must stay clear before the
	// incident resolves (a flapping condition keeps it open).
	AutoResolveSeconds int `json:"auto_resolve_seconds"`
	// BootGraceSeconds after a boot (uptime below it) no incident opens.
	BootGraceSeconds int `json:"boot_grace_seconds"`
	// StaleSeconds: an incident of a device silent this long resolves as
	// telemetry_stale (0: never; offline rules are exempt).
	StaleSeconds int `json:"stale_seconds"`
}

// Action is what opening an incident does.
type Action struct {
	Type string `json:"type"`
	// Service and ServiceAction for service_control.
	Service       string `json:"service,omitempty"`
	ServiceAction string `json:"service_action,omitempty"`
	// AssemblyID (and AssemblyVersion, 0: the current one when saved)
	// for run_assembly, with its Parameters. AssemblySHA256 is the body's
	// hash when the watchdog was saved (set by the Engine): a body changed
	// since refuses the run (assembly_changed) rather than run other code.
	AssemblyID      int64          `json:"assembly_id,omitempty"`
	AssemblyVersion int            `json:"assembly_version,omitempty"`
	AssemblySHA256  string         `json:"assembly_sha256,omitempty"`
	Parameters      map[string]any `json:"parameters,omitempty"`
}

// Policy is the watchdog policy record.
type Policy struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Severity    string   `json:"severity"`
	Enabled     bool     `json:"enabled"`
	SiteIDs     []int64  `json:"site_ids"`
	Targets     Targets  `json:"targets"`
	Match       string   `json:"match"`
	Rules       []Rule   `json:"rules"`
	Noise       Noise    `json:"noise"`
	Actions     []Action `json:"actions"`
}

// document is what the policy column holds: everything but the columns.
type document struct {
	Targets Targets  `json:"targets"`
	Match   string   `json:"match"`
	Rules   []Rule   `json:"rules"`
	Noise   Noise    `json:"noise"`
	Actions []Action `json:"actions"`
}

// Limits.
const (
	MaxName         = 120
	MaxDescription  = 2000
	MaxRules        = 32
	MaxActions      = 8
	MaxTargets      = 1000
	MaxTargetName   = 256
	MaxSeconds      = 7 * 24 * 3600
	MinInterval     = 30
	DefaultInterval = 60
)

// check validates p and fills its defaults; the fields name the request's.
func (p Policy) check() (Policy, error) {
	var v cairn.Validation
	p.Name = strings.TrimSpace(p.Name)
	switch {
	case p.Name == "":
		v.Add("name", "is required")
	case len(p.Name) > MaxName:
		v.Add("name", fmt.Sprintf("must be at most %d characters", MaxName))
	}
	if len(p.Description) > MaxDescription {
		v.Add("description", fmt.Sprintf("must be at most %d characters", MaxDescription))
	}
	if !slices.Contains(Severities, p.Severity) {
		v.Add("severity", "must be info, warning or critical")
	}
	if p.SiteIDs != nil {
		if len(p.SiteIDs) == 0 {
			v.Add("site_ids", "must name at least one site, or be null for every site")
		}
		p.SiteIDs = slices.Compact(slices.Sorted(slices.Values(p.SiteIDs)))
	}
	switch p.Targets.Kind {
	case TargetAll:
		p.Targets.DeviceGUIDs, p.Targets.FilterIDs = nil, nil
	case TargetDevices:
		p.Targets.FilterIDs = nil
		if len(p.Targets.DeviceGUIDs) == 0 {
			v.Add("targets.device_guids", "must name at least one device")
		} else if len(p.Targets.DeviceGUIDs) > MaxTargets {
			v.Add("targets.device_guids", fmt.Sprintf("must name at most %d devices", MaxTargets))
		}
		p.Targets.DeviceGUIDs = slices.Compact(slices.Sorted(slices.Values(p.Targets.DeviceGUIDs)))
	case TargetFilters:
		p.Targets.DeviceGUIDs = nil
		if len(p.Targets.FilterIDs) == 0 {
			v.Add("targets.filter_ids", "must name at least one saved filter")
		} else if len(p.Targets.FilterIDs) > MaxTargets {
			v.Add("targets.filter_ids", fmt.Sprintf("must name at most %d filters", MaxTargets))
		}
		p.Targets.FilterIDs = slices.Compact(slices.Sorted(slices.Values(p.Targets.FilterIDs)))
	default:
		v.Add("targets.kind", "must be all, devices or filters")
	}
	if p.Match == "" {
		p.Match = MatchAll
	}
	if p.Match != MatchAll && p.Match != MatchAny {
		v.Add("match", "must be all or any")
	}
	switch {
	case len(p.Rules) == 0:
		v.Add("rules", "must hold at least one rule")
	case len(p.Rules) > MaxRules:
		v.Add("rules", fmt.Sprintf("must hold at most %d rules", MaxRules))
	}
	for i := range p.Rules {
		p.Rules[i] = p.Rules[i].check(&v, fmt.Sprintf("rules[%d]", i))
	}
	n := &p.Noise
	if n.IntervalSeconds == 0 {
		n.IntervalSeconds = DefaultInterval
	}
	if n.IntervalSeconds < MinInterval || n.IntervalSeconds > MaxSeconds {
		v.Add("noise.interval_seconds", fmt.Sprintf("must be %d to %d", MinInterval, MaxSeconds))
	}
	if n.ConsecutiveMatches == 0 {
		n.ConsecutiveMatches = 1
	}
	if n.ConsecutiveMatches < 1 || n.ConsecutiveMatches > 100 {
		v.Add("noise.consecutive_matches", "must be 1 to 100")
	}
	for field, s := range map[string]int{"noise.cooldown_seconds": n.CooldownSeconds,
		"noise.auto_resolve_seconds": n.AutoResolveSeconds, "noise.boot_grace_seconds": n.BootGraceSeconds,
		"noise.stale_seconds": n.StaleSeconds} {
		if s < 0 || s > MaxSeconds {
			v.Add(field, fmt.Sprintf("must be 0 to %d", MaxSeconds))
		}
	}
	if len(p.Actions) > MaxActions {
		v.Add("actions", fmt.Sprintf("must hold at most %d actions", MaxActions))
	}
	if p.Actions == nil {
		p.Actions = []Action{}
	}
	for i, a := range p.Actions {
		field := fmt.Sprintf("actions[%d]", i)
		switch a.Type {
		case ActionTrack, ActionToast:
			p.Actions[i] = Action{Type: a.Type}
		case ActionRunAssembly:
			p.Actions[i] = Action{Type: a.Type, AssemblyID: a.AssemblyID, AssemblyVersion: a.AssemblyVersion, Parameters: a.Parameters}
			if a.AssemblyID <= 0 {
				v.Add(field+".assembly_id", "is required")
			}
			if a.AssemblyVersion < 0 {
				v.Add(field+".assembly_version", "must be 0 (the current version) or a version number")
			}
		case ActionServiceControl:
			p.Actions[i] = Action{Type: a.Type, Service: a.Service, ServiceAction: a.ServiceAction}
			if strings.TrimSpace(a.Service) == "" || len(a.Service) > MaxTargetName {
				v.Add(field+".service", "is required (at most 256 characters)")
			}
			if !slices.Contains(serviceActions, a.ServiceAction) {
				v.Add(field+".service_action", "must be start, stop or restart")
			}
		default:
			v.Add(field+".type", "must be track, toast, service_control or run_assembly")
		}
	}
	return p, v.Err()
}

func (r Rule) check(v *cairn.Validation, field string) Rule {
	info, ok := subjectInfo(r.Subject)
	if !ok {
		v.Add(field+".subject", "is not a known subject (GET /api/watchdogs/metadata)")
		return r
	}
	if !slices.Contains(info.Operators, r.Operator) {
		v.Add(field+".operator", "must be one of "+strings.Join(info.Operators, ", "))
	}
	r.Target = strings.TrimSpace(r.Target)
	if len(r.Target) > MaxTargetName {
		v.Add(field+".target", "must be at most 256 characters")
	}
	if info.Target == "" {
		r.Target = ""
	} else if r.Target == "" && !strings.Contains(info.Target, "optional") && !strings.Contains(info.Target, "empty:") {
		v.Add(field+".target", "names the "+info.Target)
	}
	if info.Threshold {
		switch {
		case r.Threshold == nil:
			v.Add(field+".threshold", "is required")
		case *r.Threshold < 0:
			v.Add(field+".threshold", "must not be negative")
		case info.Unit == "percent" && *r.Threshold > 100:
			v.Add(field+".threshold", "must be 0 to 100")
		}
		if r.RecoveryThreshold != nil && r.Threshold != nil {
			rec, th := *r.RecoveryThreshold, *r.Threshold
			// The recovery threshold lies on the clear side of the threshold.
			if (r.Operator == OpGT || r.Operator == OpGTE) && rec > th ||
				(r.Operator == OpLT || r.Operator == OpLTE) && rec < th {
				v.Add(field+".recovery_threshold", "must lie on the recovered side of threshold")
			}
		}
	} else {
		r.Threshold, r.RecoveryThreshold = nil, nil
	}
	if r.Operator == OpVersionLT {
		if strings.TrimSpace(r.Value) == "" || len(r.Value) > 64 {
			v.Add(field+".value", "is the version to compare with (at most 64 characters)")
		}
	} else {
		r.Value = ""
	}
	if r.ForSeconds < 0 || r.ForSeconds > MaxSeconds {
		v.Add(field+".for_seconds", fmt.Sprintf("must be 0 to %d", MaxSeconds))
	}
	return r
}
