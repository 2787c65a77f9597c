package patches

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
)

// Patch policy layers (SPEC "Patch policy"), evaluated in this order.
const (
	TypeGlobal       = "global"
	TypeSite         = "site"
	TypeDeviceFilter = "device_filter"
)

// Role scopes of a policy and of a device.
const (
	RoleServer      = "Server"
	RoleWorkstation = "Workstation"
)

// Rule types, match types and actions.
const (
	RuleSeverity = "severity"
	RuleCategory = "category"
	RuleKB       = "kb"
	RuleTitle    = "title"
	RulePackage  = "package"

	MatchEquals        = "equals"
	MatchTitleContains = "title_contains"

	ActionApprove = "approve"
	ActionBlock   = "block"
)

// Reboot policies.
const (
	RebootNever        = "never"
	RebootWhenRequired = "when_required"
	RebootAlways       = "always"
)

// Decision statuses of a candidate update on a device.
const (
	DecisionApproved    = "approved"
	DecisionBlocked     = "blocked"
	DecisionDeferred    = "deferred"
	DecisionNotApproved = "not_approved"
	DecisionExcluded    = "excluded"
)

// Limits of a policy document.
const (
	MaxPolicyRules      = 200
	MaxPolicyExclusions = 500
	MaxRuleValue        = 200
	MaxWindowRanges     = 28
	MaxDeferralDays     = 365
	MaxPolicyName       = 120
)

// RuleMatchTypes lists, per rule type, the match types it takes (the
// metadata route shows it).
var RuleMatchTypes = map[string][]string{
	RuleSeverity: {MatchEquals},
	RuleCategory: {MatchEquals},
	RuleKB:       {MatchEquals},
	RuleTitle:    {MatchEquals, MatchTitleContains},
	RulePackage:  {MatchEquals},
}

// RuleTypes in display order.
var RuleTypes = []string{RuleSeverity, RuleCategory, RuleKB, RuleTitle, RulePackage}

// Weekdays are the window's day names, Sunday first like time.Weekday.
var Weekdays = []string{"sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"}

// Rule is one approval or block rule. A category rule "security" also
// matches rows from a security source (apt security origins, dnf
// updateinfo security advisories).
type Rule struct {
	RuleType  string `json:"rule_type"`
	MatchType string `json:"match_type"`
	Value     string `json:"value"`
	Action    string `json:"action"`
}

// Exclusion takes one device out of a policy and every layer below it.
// A hostname needs site_id unless device_guid is given.
type Exclusion struct {
	DeviceGUID cairn.DeviceGUID `json:"device_guid,omitempty"`
	Hostname   string           `json:"hostname,omitempty"`
	SiteID     *cairn.SiteID    `json:"site_id,omitempty"`
}

// Defaults are the layer's settings; null inherits the parent's.
type Defaults struct {
	// DeferralDays approves an update only N days after its release.
	DeferralDays *int `json:"deferral_days"`
	// RebootPolicy is never, when_required or always.
	RebootPolicy string `json:"reboot_policy"`
	// RebootForced reboots after installs even while a user is signed in
	// (only a policy forces a reboot); it goes with the layer's
	// reboot_policy, when_required or always.
	RebootForced bool `json:"reboot_forced"`
	// EnforcementMode is the Windows Update policy the layer's Windows
	// devices are put in (SPEC agent behaviour 11): unmanaged (Windows
	// Update as the administrator left it), managed (automatic installs
	// stopped, Cairn installs) or frozen (also no automatic downloads, and
	// policy evaluation installs nothing). Empty inherits; no layer
	// setting it is unmanaged.
	EnforcementMode string `json:"enforcement_mode"`
}

// WindowRange is one weekday's time range. WeekOfMonth 0 is every week,
// 1 to 4 the Nth such weekday of the month, -1 the last one.
type WindowRange struct {
	Weekday     string `json:"weekday"`
	WeekOfMonth int    `json:"week_of_month"`
	Start       string `json:"start"`
	End         string `json:"end"`
}

// Window is a maintenance window: installs start only inside one of its
// ranges, read in TimeZone (an IANA name; the store keeps no device or
// site time zone, so the window carries the one it means).
type Window struct {
	TimeZone string        `json:"time_zone"`
	Ranges   []WindowRange `json:"ranges" limit:"max=28"`
}

// PolicyInput is a policy as created or updated.
type PolicyInput struct {
	Name              string        `json:"name" limit:"max=120"`
	Type              string        `json:"type"`
	RoleScope         string        `json:"role_scope"`
	Enabled           *bool         `json:"enabled"`
	SiteID            *cairn.SiteID `json:"site_id"`
	DeviceFilterID    *int64        `json:"device_filter_id"`
	Rules             []Rule        `json:"rules" limit:"max=200"`
	Exclusions        []Exclusion   `json:"exclusions" limit:"max=500"`
	Defaults          Defaults      `json:"defaults"`
	MaintenanceWindow *Window       `json:"maintenance_window"`
	// ConfirmParentOverride accepts approvals of what a parent layer
	// blocks (without it such a save is policy_conflict).
	ConfirmParentOverride bool `json:"confirm_parent_override"`
}

// Policy is a stored policy's document (the list and get rows add counts).
type Policy struct {
	ID                int64         `json:"policy_id"`
	Name              string        `json:"name"`
	Type              string        `json:"type"`
	RoleScope         string        `json:"role_scope"`
	Locked            bool          `json:"locked"`
	Enabled           bool          `json:"enabled"`
	SiteID            *cairn.SiteID `json:"site_id"`
	DeviceFilterID    *int64        `json:"device_filter_id"`
	Rules             []Rule        `json:"rules"`
	Exclusions        []Exclusion   `json:"exclusions"`
	Defaults          Defaults      `json:"defaults"`
	MaintenanceWindow *Window       `json:"maintenance_window"`
	CreatedBy         string        `json:"created_by"`
	CreatedAt         time.Time     `json:"created_at"`
	UpdatedAt         time.Time     `json:"updated_at"`
	LastEvaluatedAt   *time.Time    `json:"last_evaluated_at"`
}

func layerRank(t string) int {
	switch t {
	case TypeGlobal:
		return 0
	case TypeSite:
		return 1
	default:
		return 2
	}
}

// RoleOf is a device's role scope from its operating system: Windows
// Server editions and every non-Windows system are Server, other
// Windows editions Workstation.
func RoleOf(operatingSystem string) string {
	os := strings.ToLower(operatingSystem)
	if strings.Contains(os, "windows") && !strings.Contains(os, "server") {
		return RoleWorkstation
	}
	return RoleServer
}

func normKB(s string) string {
	s = strings.ToUpper(strings.TrimSpace(s))
	return strings.TrimPrefix(s, "KB")
}

func parseClock(s string) (int, bool) {
	t, err := time.Parse("15:04", s)
	if err != nil {
		return 0, false
	}
	return t.Hour()*60 + t.Minute(), true
}

// Check validates and normalises a policy document; every problem is a
// field of the validation_failed answer. Existence of the site and the
// filter is the caller's.
func (in PolicyInput) Check() (PolicyInput, error) {
	var v cairn.Validation
	in.Name = strings.TrimSpace(in.Name)
	if in.Name == "" || len(in.Name) > MaxPolicyName {
		v.Add("name", fmt.Sprintf("must be 1 to %d characters", MaxPolicyName))
	}
	switch in.Type {
	case TypeSite:
		if in.SiteID == nil || *in.SiteID <= 0 {
			v.Add("site_id", "is required for a site policy")
		}
		if in.DeviceFilterID != nil {
			v.Add("device_filter_id", "is only for device_filter policies")
		}
	case TypeDeviceFilter:
		if in.DeviceFilterID == nil || *in.DeviceFilterID <= 0 {
			v.Add("device_filter_id", "is required for a device_filter policy")
		}
		if in.SiteID != nil {
			v.Add("site_id", "is only for site policies")
		}
	case TypeGlobal:
		// Updates of the seeded global policies; creation refuses it
		// before Check.
		if in.SiteID != nil {
			v.Add("site_id", "is only for site policies")
		}
		if in.DeviceFilterID != nil {
			v.Add("device_filter_id", "is only for device_filter policies")
		}
	default:
		v.Add("type", "must be site or device_filter")
	}
	if in.RoleScope != RoleServer && in.RoleScope != RoleWorkstation {
		v.Add("role_scope", "must be Server or Workstation")
	}
	if len(in.Rules) > MaxPolicyRules {
		v.Add("rules", fmt.Sprintf("at most %d rules", MaxPolicyRules))
	}
	seen := map[string]int{}
	for i, r := range in.Rules {
		f := fmt.Sprintf("rules[%d]", i)
		r.Value = strings.TrimSpace(r.Value)
		if r.RuleType == RuleKB {
			r.Value = "KB" + normKB(r.Value)
		}
		in.Rules[i] = r
		mts, ok := RuleMatchTypes[r.RuleType]
		switch {
		case !ok:
			v.Add(f+".rule_type", "must be one of "+strings.Join(RuleTypes, ", "))
		case !slices.Contains(mts, r.MatchType):
			v.Add(f+".match_type", "must be one of "+strings.Join(mts, ", ")+" for rule type "+r.RuleType)
		}
		if r.Action != ActionApprove && r.Action != ActionBlock {
			v.Add(f+".action", "must be approve or block")
		}
		if r.Value == "" || r.Value == "KB" || len(r.Value) > MaxRuleValue {
			v.Add(f+".value", fmt.Sprintf("must be 1 to %d characters", MaxRuleValue))
		}
		k := r.key()
		if j, dup := seen[k]; dup {
			v.Add(f, fmt.Sprintf("approves and blocks the same updates as rules[%d]", j))
		}
		seen[k] = i
	}
	if len(in.Exclusions) > MaxPolicyExclusions {
		v.Add("exclusions", fmt.Sprintf("at most %d exclusions", MaxPolicyExclusions))
	}
	for i, e := range in.Exclusions {
		f := fmt.Sprintf("exclusions[%d]", i)
		e.Hostname = strings.TrimSpace(e.Hostname)
		in.Exclusions[i] = e
		switch {
		case e.DeviceGUID == "" && e.Hostname == "":
			v.Add(f, "needs device_guid or hostname")
		case e.DeviceGUID == "" && e.SiteID == nil:
			v.Add(f+".site_id", "is required with a hostname unless device_guid is given")
		}
	}
	if d := in.Defaults.DeferralDays; d != nil && (*d < 0 || *d > MaxDeferralDays) {
		v.Add("defaults.deferral_days", fmt.Sprintf("must be 0 to %d", MaxDeferralDays))
	}
	switch in.Defaults.RebootPolicy {
	case "", RebootNever, RebootWhenRequired, RebootAlways:
	default:
		v.Add("defaults.reboot_policy", "must be never, when_required or always (empty inherits)")
	}
	if in.Defaults.RebootForced && in.Defaults.RebootPolicy != RebootWhenRequired && in.Defaults.RebootPolicy != RebootAlways {
		v.Add("defaults.reboot_forced", "needs reboot_policy when_required or always in the same policy")
	}
	switch in.Defaults.EnforcementMode {
	case "", proto.PatchModeUnmanaged, proto.PatchModeManaged, proto.PatchModeFrozen:
	default:
		v.Add("defaults.enforcement_mode", "must be unmanaged, managed or frozen (empty inherits)")
	}
	if w := in.MaintenanceWindow; w != nil {
		if w.TimeZone == "" {
			w.TimeZone = "UTC"
		}
		if _, err := time.LoadLocation(w.TimeZone); err != nil {
			v.Add("maintenance_window.time_zone", "is not a known IANA time zone")
		}
		if len(w.Ranges) == 0 || len(w.Ranges) > MaxWindowRanges {
			v.Add("maintenance_window.ranges", fmt.Sprintf("must have 1 to %d ranges", MaxWindowRanges))
		}
		for i, r := range w.Ranges {
			f := fmt.Sprintf("maintenance_window.ranges[%d]", i)
			w.Ranges[i].Weekday = strings.ToLower(r.Weekday)
			if !slices.Contains(Weekdays, w.Ranges[i].Weekday) {
				v.Add(f+".weekday", "must be a weekday name (sunday to saturday)")
			}
			if r.WeekOfMonth < -1 || r.WeekOfMonth > 4 {
				v.Add(f+".week_of_month", "must be 0 (every week), 1 to 4, or -1 (the last)")
			}
			s, okS := parseClock(r.Start)
			e, okE := parseClock(r.End)
			if !okS {
				v.Add(f+".start", "must be HH:MM")
			}
			if !okE && r.End != "24:00" {
				v.Add(f+".end", "must be HH:MM")
			}
			if r.End == "24:00" {
				e, okE = 24*60, true
			}
			if okS && okE && e <= s {
				v.Add(f+".end", "must be after start (split a range that crosses midnight)")
			}
		}
	}
	if in.Rules == nil {
		in.Rules = []Rule{}
	}
	if in.Exclusions == nil {
		in.Exclusions = []Exclusion{}
	}
	return in, v.Err()
}

// key identifies what a rule matches, whatever its action.
func (r Rule) key() string {
	return r.RuleType + "\x00" + r.MatchType + "\x00" + strings.ToLower(r.Value)
}

// Candidate is a pending update of a device that policies judge.
type Candidate struct {
	PatchKey   string
	KB         string
	KBs        []string
	Title      string
	Severity   string
	Categories []string
	Package    string
	Security   bool
	ReleasedAt *time.Time
}

// Matches says whether the rule selects the candidate.
func (r Rule) Matches(c Candidate) bool {
	switch r.RuleType {
	case RuleSeverity:
		return strings.EqualFold(c.Severity, r.Value)
	case RuleCategory:
		if strings.EqualFold(r.Value, "security") && c.Security {
			return true
		}
		return slices.ContainsFunc(c.Categories, func(s string) bool { return strings.EqualFold(s, r.Value) })
	case RuleKB:
		want := normKB(r.Value)
		if c.KB != "" && normKB(c.KB) == want {
			return true
		}
		return slices.ContainsFunc(c.KBs, func(s string) bool { return normKB(s) == want })
	case RuleTitle:
		if r.MatchType == MatchTitleContains {
			return strings.Contains(strings.ToLower(c.Title), strings.ToLower(r.Value))
		}
		return strings.EqualFold(c.Title, r.Value)
	case RulePackage:
		return c.Package != "" && strings.EqualFold(c.Package, r.Value)
	}
	return false
}

// Device is what decides which policies apply to a device.
type Device struct {
	GUID     cairn.DeviceGUID `json:"device_guid"`
	Hostname string           `json:"hostname"`
	SiteID   cairn.SiteID     `json:"site_id"`
	Role     string           `json:"role_scope"`
}

// Excludes says whether one of the policy's exclusions names the device.
func (p Policy) Excludes(d Device) bool {
	for _, e := range p.Exclusions {
		if e.DeviceGUID != "" {
			if e.DeviceGUID == d.GUID {
				return true
			}
			continue
		}
		if e.SiteID != nil && *e.SiteID == d.SiteID && strings.EqualFold(e.Hostname, d.Hostname) {
			return true
		}
	}
	return false
}

// Decision is the effective hierarchy's answer for one candidate on one
// device (the patch_policy_* source fields).
type Decision struct {
	PatchKey string `json:"patch_key"`
	Title    string `json:"title"`
	KB       string `json:"kb"`
	Status   string `json:"patch_policy_status"`
	// SourceLayer and SourcePolicyID are the layer and policy whose rule
	// decided (empty and 0: none did).
	SourceLayer    string `json:"patch_policy_source_layer"`
	SourcePolicyID int64  `json:"patch_policy_source_policy_id"`
	// OverridesParent is set when a lower layer approved what a parent
	// blocked (a confirmed override).
	OverridesParent bool `json:"patch_policy_overrides_parent"`
	// ApproveAfter is when a deferred approval takes effect.
	ApproveAfter *time.Time `json:"patch_policy_approve_after"`
	// LinkedPolicies are the unique policies whose direct allow or block
	// rules match the update.
	LinkedPolicies []int64 `json:"patch_policy_linked_policies"`
}

// Effective is the hierarchy that applies to one device and what it
// decides.
type Effective struct {
	Device Device `json:"device"`
	// Layers are the policies that apply, global first.
	Layers []EffectiveLayer `json:"layers"`
	// ExcludedBy is the policy whose exclusion takes the device out of
	// its layer and every one below (0: none).
	ExcludedBy   int64   `json:"excluded_by_policy_id"`
	DeferralDays int     `json:"deferral_days"`
	RebootPolicy string  `json:"reboot_policy"`
	RebootForced bool    `json:"reboot_forced"`
	RebootSource int64   `json:"reboot_policy_source_policy_id"`
	Window       *Window `json:"maintenance_window"`
	WindowSource int64   `json:"maintenance_window_source_policy_id"`
	// EnforcementMode is the device's Windows Update enforcement mode and
	// EnforcementSource the policy that sets it (0: none does, unmanaged).
	EnforcementMode   string     `json:"enforcement_mode"`
	EnforcementSource int64      `json:"enforcement_mode_source_policy_id"`
	Decisions         []Decision `json:"decisions"`
}

// EffectiveLayer is one policy of a device's hierarchy.
type EffectiveLayer struct {
	PolicyID int64  `json:"policy_id"`
	Name     string `json:"name"`
	Type     string `json:"type"`
	Excluded bool   `json:"excluded"`
}

// Applicable orders the policies that apply to a device: enabled, of its
// role scope, global, then its site's, then device filter policies whose
// filter matches it (inFilter).
func Applicable(d Device, policies []Policy, inFilter func(policyID int64) bool) []Policy {
	var out []Policy
	for _, p := range policies {
		if !p.Enabled || p.RoleScope != d.Role {
			continue
		}
		switch p.Type {
		case TypeSite:
			if p.SiteID == nil || *p.SiteID != d.SiteID {
				continue
			}
		case TypeDeviceFilter:
			if inFilter == nil || !inFilter(p.ID) {
				continue
			}
		}
		out = append(out, p)
	}
	slices.SortStableFunc(out, func(a, b Policy) int {
		if r := layerRank(a.Type) - layerRank(b.Type); r != 0 {
			return r
		}
		return int(a.ID - b.ID)
	})
	return out
}

// EvaluateHierarchy judges a device's candidates through its layers
// (Applicable's order). Per layer, a block rule beats an approve rule of
// the same layer; a lower layer's rule overrides a parent's decision
// (an approval of what a parent blocks being a confirmed override), and
// what no lower layer decides keeps the parent's decision: parent-approved
// candidates propagate down. An exclusion in any layer makes every
// candidate "excluded" (the exclusion is inherited by the layers below,
// and the layers above approve nothing for the device). The deepest layer that sets a deferral,
// reboot policy or window gives it; an approved update released less
// than the deferral ago is deferred.
func EvaluateHierarchy(d Device, layers []Policy, cands []Candidate, now time.Time) Effective {
	eff := Effective{Device: d, Layers: []EffectiveLayer{}, RebootPolicy: RebootNever, Decisions: []Decision{},
		EnforcementMode: proto.PatchModeUnmanaged}
	active := layers
	for i, p := range layers {
		if eff.ExcludedBy == 0 && p.Excludes(d) {
			eff.ExcludedBy = p.ID
			active = layers[:i]
		}
		eff.Layers = append(eff.Layers, EffectiveLayer{PolicyID: p.ID, Name: p.Name, Type: p.Type, Excluded: eff.ExcludedBy != 0})
	}
	for _, p := range active {
		if p.Defaults.DeferralDays != nil {
			eff.DeferralDays = *p.Defaults.DeferralDays
		}
		if p.Defaults.RebootPolicy != "" {
			eff.RebootPolicy, eff.RebootForced, eff.RebootSource = p.Defaults.RebootPolicy, p.Defaults.RebootForced, p.ID
		}
		if p.MaintenanceWindow != nil {
			eff.Window, eff.WindowSource = p.MaintenanceWindow, p.ID
		}
		if p.Defaults.EnforcementMode != "" {
			eff.EnforcementMode, eff.EnforcementSource = p.Defaults.EnforcementMode, p.ID
		}
	}
	for _, c := range cands {
		dec := Decision{PatchKey: c.PatchKey, Title: c.Title, KB: c.KB, Status: DecisionNotApproved, LinkedPolicies: []int64{}}
		if eff.ExcludedBy != 0 {
			dec.Status = DecisionExcluded
		}
		if eff.ExcludedBy != 0 {
			// An excluded device gets no policy installs at all: what its
			// parents approve does not reach it either.
			eff.Decisions = append(eff.Decisions, dec)
			continue
		}
		for _, p := range active {
			approve, block := false, false
			for _, r := range p.Rules {
				if !r.Matches(c) {
					continue
				}
				if r.Action == ActionBlock {
					block = true
				} else {
					approve = true
				}
			}
			if approve || block {
				if !slices.Contains(dec.LinkedPolicies, p.ID) {
					dec.LinkedPolicies = append(dec.LinkedPolicies, p.ID)
				}
			}
			switch {
			case block:
				dec.Status, dec.SourceLayer, dec.SourcePolicyID, dec.OverridesParent = DecisionBlocked, p.Type, p.ID, false
			case approve:
				dec.OverridesParent = dec.Status == DecisionBlocked && dec.SourcePolicyID != 0 && layerRank(p.Type) > layerRank(dec.SourceLayer)
				dec.Status, dec.SourceLayer, dec.SourcePolicyID = DecisionApproved, p.Type, p.ID
			}
		}
		if dec.Status == DecisionApproved && eff.DeferralDays > 0 && c.ReleasedAt != nil {
			after := c.ReleasedAt.Add(time.Duration(eff.DeferralDays) * 24 * time.Hour)
			if now.Before(after) {
				dec.Status, dec.ApproveAfter = DecisionDeferred, &after
			}
		}
		eff.Decisions = append(eff.Decisions, dec)
	}
	return eff
}

// Open says whether the window admits a new install at now (a nil window
// admits every time). A window's end stops new installs only: one started
// inside it runs on.
func (w *Window) Open(now time.Time) bool {
	if w == nil {
		return true
	}
	loc, err := time.LoadLocation(w.TimeZone)
	if err != nil {
		return false
	}
	t := now.In(loc)
	minute := t.Hour()*60 + t.Minute()
	for _, r := range w.Ranges {
		if r.Weekday != Weekdays[t.Weekday()] {
			continue
		}
		if !inWeekOfMonth(t, r.WeekOfMonth) {
			continue
		}
		s, _ := parseClock(r.Start)
		e, ok := parseClock(r.End)
		if !ok {
			e = 24 * 60
		}
		if minute >= s && minute < e {
			return true
		}
	}
	return false
}

func inWeekOfMonth(t time.Time, n int) bool {
	switch {
	case n == 0:
		return true
	case n == -1:
		return t.AddDate(0, 0, 7).Month() != t.Month()
	default:
		return (t.Day()-1)/7+1 == n
	}
}

// Conflict is an approve rule of one policy that a block rule of another
// matches exactly.
type Conflict struct {
	PolicyID int64  `json:"policy_id"`
	Name     string `json:"name"`
	Type     string `json:"type"`
	Rule     Rule   `json:"rule"`
	Other    Rule   `json:"other_rule"`
}

// RuleConflicts are the rules of p that approve what o blocks or block
// what o approves (the same rule type, match type and value).
func RuleConflicts(p PolicyInput, o Policy) []Conflict {
	var out []Conflict
	for _, r := range p.Rules {
		for _, x := range o.Rules {
			if r.key() == x.key() && r.Action != x.Action {
				out = append(out, Conflict{PolicyID: o.ID, Name: o.Name, Type: o.Type, Rule: r, Other: x})
			}
		}
	}
	return out
}

// ParentOverrides are the approvals of p that a parent layer's policy
// (same role scope; global, or the site's for a device filter policy)
// blocks: saving them needs confirm_parent_override.
func ParentOverrides(p PolicyInput, parents []Policy) []Conflict {
	var out []Conflict
	for _, o := range parents {
		if layerRank(o.Type) >= layerRank(p.Type) || o.RoleScope != p.RoleScope {
			continue
		}
		for _, c := range RuleConflicts(p, o) {
			if c.Rule.Action == ActionApprove {
				out = append(out, c)
			}
		}
	}
	return out
}
