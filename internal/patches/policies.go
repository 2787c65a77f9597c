package patches

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devicefilters"
)

// ECodePolicyConflict answers a policy save whose rules contradict a
// policy of the same layer, or approve what a parent layer blocks
// without confirm_parent_override (SPEC Errors).
const ECodePolicyConflict = "policy_conflict"

// PolicyFilters resolves device filter policies' saved filters
// (devicefilters.Service).
type PolicyFilters interface {
	MatchSaved(ctx context.Context, scope cairn.SiteScope, ids []int64) ([]devicefilters.DeviceRef, error)
	List(ctx context.Context) ([]devicefilters.Filter, error)
}

// Breakdown counts approved pending updates by the layer whose rule
// approves them.
type Breakdown struct {
	Layer       string `json:"layer"`
	Count       int    `json:"count"`
	DeviceCount int    `json:"device_count"`
}

// PolicyRow is a policy with its list counts (SPEC "Patch policy").
type PolicyRow struct {
	Policy
	// RawDeviceCount counts the visible devices the policy's type selects
	// (all, the site's, the filter's); EligibleDeviceCount those of its
	// role scope it does not exclude.
	RawDeviceCount      int            `json:"raw_device_count"`
	EligibleDeviceCount int            `json:"eligible_device_count"`
	TargetSites         []cairn.SiteID `json:"target_sites"`
	// PendingUpdateCount counts unique approved pending updates on the
	// eligible devices (whichever layer approves them: parent approvals
	// propagate down), PendingUpdateDeviceCount the devices that have one.
	PendingUpdateCount       int         `json:"pending_update_count"`
	PendingUpdateDeviceCount int         `json:"pending_update_device_count"`
	PendingUpdateBreakdown   []Breakdown `json:"pending_update_breakdown"`
}

func policyOf(r db.PatchPolicy) (Policy, error) {
	p := Policy{ID: r.ID, Name: r.Name, Type: r.Type, RoleScope: r.RoleScope, Locked: r.Locked, Enabled: r.Enabled,
		SiteID: r.SiteID, DeviceFilterID: r.DeviceFilterID, CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt,
		UpdatedAt: r.UpdatedAt, LastEvaluatedAt: r.LastEvaluatedAt}
	if err := json.Unmarshal(r.Rules, &p.Rules); err != nil {
		return Policy{}, err
	}
	if err := json.Unmarshal(r.Exclusions, &p.Exclusions); err != nil {
		return Policy{}, err
	}
	if err := json.Unmarshal(r.Defaults, &p.Defaults); err != nil {
		return Policy{}, err
	}
	if len(r.MaintenanceWindow) > 0 {
		if err := json.Unmarshal(r.MaintenanceWindow, &p.MaintenanceWindow); err != nil {
			return Policy{}, err
		}
	}
	return p, nil
}

// visible says whether scope sees the policy: a site policy only inside
// its site's scope.
func visible(scope cairn.SiteScope, p Policy) bool {
	return p.Type != TypeSite || (p.SiteID != nil && scope.Allows(*p.SiteID))
}

// fleet is what the counts, the effective hierarchy and evaluation read:
// the visible devices, every policy, device filter policies' members and
// the devices' pending rows.
type fleet struct {
	devices []Device
	// slugs are the devices' sites' slugs; rebootDue the devices due a
	// reboot with nothing to install (see RebootRetryInterval).
	slugs     map[cairn.DeviceGUID]string
	rebootDue map[cairn.DeviceGUID]bool
	// windows are the Windows devices: enforcement applies to them only.
	windows  map[cairn.DeviceGUID]bool
	policies []Policy
	members  map[int64]map[cairn.DeviceGUID]bool
	cands    map[cairn.DeviceGUID][]Candidate
	effs     map[cairn.DeviceGUID]Effective
	now      time.Time
}

func (s *Service) loadPolicies(ctx context.Context) ([]Policy, error) {
	rows, err := s.store.PatchPolicyList(ctx, "")
	if err != nil {
		return nil, err
	}
	out := make([]Policy, 0, len(rows))
	for _, r := range rows {
		p, err := policyOf(r)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// members resolves a device filter's devices inside scope; a missing
// filter is validation_failed on device_filter_id.
func (s *Service) members(ctx context.Context, scope cairn.SiteScope, filterID int64) (map[cairn.DeviceGUID]bool, error) {
	if s.Filters == nil {
		return nil, fmt.Errorf("patches: no device filter matcher")
	}
	refs, err := s.Filters.MatchSaved(ctx, scope, []int64{filterID})
	if cairn.IsCode(err, cairn.ECodeNotFound) {
		return nil, cairn.Invalid("device_filter_id", "no such device filter")
	}
	if err != nil {
		return nil, err
	}
	m := make(map[cairn.DeviceGUID]bool, len(refs))
	for _, r := range refs {
		m[r.GUID] = true
	}
	return m, nil
}

// loadFleet reads the fleet inside scope (only: just those devices, nil:
// every visible one), with extra (a draft) among the policies when given.
// A device's effective hierarchy needs the policies and the device filter
// memberships but only its own pending rows, so a view of a few devices
// (one device, an audit page) does not read the fleet's rows.
func (s *Service) loadFleet(ctx context.Context, scope cairn.SiteScope, only []cairn.DeviceGUID, extra *Policy) (*fleet, error) {
	f := &fleet{members: map[int64]map[cairn.DeviceGUID]bool{}, cands: map[cairn.DeviceGUID][]Candidate{},
		effs: map[cairn.DeviceGUID]Effective{}, slugs: map[cairn.DeviceGUID]string{}, rebootDue: map[cairn.DeviceGUID]bool{},
		windows: map[cairn.DeviceGUID]bool{}, now: s.now().UTC()}
	var err error
	if f.policies, err = s.loadPolicies(ctx); err != nil {
		return nil, err
	}
	if extra != nil {
		f.policies = slices.DeleteFunc(f.policies, func(p Policy) bool { return p.ID == extra.ID })
		f.policies = append(f.policies, *extra)
	}
	for _, p := range f.policies {
		if p.Type == TypeDeviceFilter && p.DeviceFilterID != nil {
			if f.members[p.ID], err = s.members(ctx, scope, *p.DeviceFilterID); err != nil {
				return nil, err
			}
		}
	}
	devs, err := s.fleetDevices(ctx, scope, only, f.now.Add(-RebootRetryInterval))
	if err != nil {
		return nil, err
	}
	guids := make([]string, len(devs))
	for i, d := range devs {
		f.devices = append(f.devices, Device{GUID: d.Guid, Hostname: d.Hostname, SiteID: d.SiteID, Role: RoleOf(d.OperatingSystem)})
		f.slugs[d.Guid] = d.SiteSlug
		f.rebootDue[d.Guid] = d.RebootDue
		f.windows[d.Guid] = IsWindows(d.OperatingSystem)
		guids[i] = string(d.Guid)
	}
	rows, err := s.store.PatchPolicyPendingRows(ctx, guids)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		f.cands[r.DeviceGuid] = append(f.cands[r.DeviceGuid], Candidate{PatchKey: r.PatchKey, KB: r.Kb, KBs: r.Kbs, Title: r.Title,
			Severity: r.Severity, Categories: r.Categories, Package: r.Package, Security: r.Security, ReleasedAt: r.ReleasedAt})
	}
	return f, nil
}

// fleetDevices reads every device in scope (only nil) or those of only.
func (s *Service) fleetDevices(ctx context.Context, scope cairn.SiteScope, only []cairn.DeviceGUID, rebootAskedSince time.Time) ([]db.PatchPolicyDevicesRow, error) {
	if only == nil {
		return s.store.PatchPolicyDevices(ctx, db.PatchPolicyDevicesParams{AllSites: scope.All, SiteIds: scope.IDs(),
			RebootAskedSince: rebootAskedSince})
	}
	guids := make([]string, len(only))
	for i, g := range only {
		guids[i] = string(g)
	}
	rows, err := s.store.PatchPolicyDevicesByGUID(ctx, db.PatchPolicyDevicesByGUIDParams{Guids: guids, AllSites: scope.All,
		SiteIds: scope.IDs(), RebootAskedSince: rebootAskedSince})
	out := make([]db.PatchPolicyDevicesRow, len(rows))
	for i, r := range rows {
		out[i] = db.PatchPolicyDevicesRow(r)
	}
	return out, err
}

// effective is a device's hierarchy and decisions (cached).
func (f *fleet) effective(d Device) Effective {
	if e, ok := f.effs[d.GUID]; ok {
		return e
	}
	layers := Applicable(d, f.policies, func(id int64) bool { return f.members[id][d.GUID] })
	e := EvaluateHierarchy(d, layers, f.cands[d.GUID], f.now)
	f.effs[d.GUID] = e
	return e
}

// raw are the devices p's type selects.
func (f *fleet) raw(p Policy) []Device {
	var out []Device
	for _, d := range f.devices {
		switch p.Type {
		case TypeSite:
			if p.SiteID == nil || *p.SiteID != d.SiteID {
				continue
			}
		case TypeDeviceFilter:
			if !f.members[p.ID][d.GUID] {
				continue
			}
		}
		out = append(out, d)
	}
	return out
}

// eligible are raw devices of p's role scope that p does not exclude.
func (f *fleet) eligible(p Policy) []Device {
	var out []Device
	for _, d := range f.raw(p) {
		if d.Role == p.RoleScope && !p.Excludes(d) {
			out = append(out, d)
		}
	}
	return out
}

func (f *fleet) row(p Policy) PolicyRow {
	row := PolicyRow{Policy: p, TargetSites: []cairn.SiteID{}, PendingUpdateBreakdown: []Breakdown{}}
	row.RawDeviceCount = len(f.raw(p))
	el := f.eligible(p)
	row.EligibleDeviceCount = len(el)
	keys, devs := map[string]bool{}, map[cairn.DeviceGUID]bool{}
	type layerSets struct {
		keys map[string]bool
		devs map[cairn.DeviceGUID]bool
	}
	by := map[string]*layerSets{}
	for _, d := range el {
		if p.Type == TypeDeviceFilter && !slices.Contains(row.TargetSites, d.SiteID) {
			row.TargetSites = append(row.TargetSites, d.SiteID)
		}
		for _, dec := range f.effective(d).Decisions {
			if dec.Status != DecisionApproved {
				continue
			}
			keys[dec.PatchKey], devs[d.GUID] = true, true
			ls := by[dec.SourceLayer]
			if ls == nil {
				ls = &layerSets{keys: map[string]bool{}, devs: map[cairn.DeviceGUID]bool{}}
				by[dec.SourceLayer] = ls
			}
			ls.keys[dec.PatchKey], ls.devs[d.GUID] = true, true
		}
	}
	if p.Type == TypeSite && p.SiteID != nil {
		row.TargetSites = []cairn.SiteID{*p.SiteID}
	}
	slices.Sort(row.TargetSites)
	row.PendingUpdateCount, row.PendingUpdateDeviceCount = len(keys), len(devs)
	for _, layer := range []string{TypeGlobal, TypeSite, TypeDeviceFilter} {
		if ls := by[layer]; ls != nil {
			row.PendingUpdateBreakdown = append(row.PendingUpdateBreakdown, Breakdown{Layer: layer, Count: len(ls.keys), DeviceCount: len(ls.devs)})
		}
	}
	return row
}

// ListPolicies lists the visible policies (optionally of one type) with
// their counts over the visible devices.
func (s *Service) ListPolicies(ctx context.Context, scope cairn.SiteScope, typ string) ([]PolicyRow, error) {
	switch typ {
	case "", TypeGlobal, TypeSite, TypeDeviceFilter:
	default:
		return nil, cairn.Invalid("type", "must be global, site or device_filter")
	}
	f, err := s.loadFleet(ctx, scope, nil, nil)
	if err != nil {
		return nil, err
	}
	out := []PolicyRow{}
	for _, p := range f.policies {
		if (typ == "" || p.Type == typ) && visible(scope, p) {
			out = append(out, f.row(p))
		}
	}
	return out, nil
}

func (s *Service) policy(ctx context.Context, scope cairn.SiteScope, id int64) (Policy, error) {
	r, err := s.store.PatchPolicyGet(ctx, id)
	if err != nil {
		return Policy{}, db.NotFound(err, "patch policy not found")
	}
	p, err := policyOf(r)
	if err != nil {
		return Policy{}, err
	}
	if !visible(scope, p) {
		return Policy{}, cairn.Errorf(cairn.ECodeNotFound, "patch policy not found")
	}
	return p, nil
}

// GetPolicy returns one visible policy with its counts.
func (s *Service) GetPolicy(ctx context.Context, scope cairn.SiteScope, id int64) (PolicyRow, error) {
	p, err := s.policy(ctx, scope, id)
	if err != nil {
		return PolicyRow{}, err
	}
	f, err := s.loadFleet(ctx, scope, nil, nil)
	if err != nil {
		return PolicyRow{}, err
	}
	return f.row(p), nil
}

// ConflictReport is what the conflicts and preview routes answer about a
// draft or a stored policy.
type ConflictReport struct {
	PolicyRow
	// Conflict is set when saving would answer policy_conflict.
	Conflict bool `json:"conflict"`
	// SameLayerConflicts are rules contradicting a policy of the same
	// layer that shares devices (same site, or overlapping filters).
	SameLayerConflicts []Conflict `json:"same_layer_conflicts"`
	// ParentOverrides are approvals of what a parent layer blocks; saving
	// them needs confirm_parent_override.
	ParentOverrides []Conflict `json:"parent_overrides"`
	// Targets are the eligible devices (the first MaxPreviewTargets).
	Targets []Device `json:"targets"`
}

// MaxPreviewTargets caps the devices a preview lists.
const MaxPreviewTargets = 200

// report judges draft p (id 0 for a new one) against the fleet.
func (f *fleet) report(p Policy, confirm bool) ConflictReport {
	rep := ConflictReport{PolicyRow: f.row(p), SameLayerConflicts: []Conflict{}, ParentOverrides: []Conflict{}, Targets: []Device{}}
	in := PolicyInput{Type: p.Type, RoleScope: p.RoleScope, Rules: p.Rules}
	var parents []Policy
	for _, o := range f.policies {
		if o.ID == p.ID || o.RoleScope != p.RoleScope {
			continue
		}
		switch {
		case o.Type == p.Type && f.sharesDevices(p, o):
			rep.SameLayerConflicts = append(rep.SameLayerConflicts, RuleConflicts(in, o)...)
		case layerRank(o.Type) < layerRank(p.Type):
			if o.Type == TypeGlobal || slices.Contains(rep.TargetSites, *o.SiteID) {
				parents = append(parents, o)
			}
		}
	}
	rep.ParentOverrides = append(rep.ParentOverrides, ParentOverrides(in, parents)...)
	rep.Conflict = len(rep.SameLayerConflicts) > 0 || (len(rep.ParentOverrides) > 0 && !confirm)
	for _, d := range f.eligible(p) {
		if len(rep.Targets) == MaxPreviewTargets {
			break
		}
		rep.Targets = append(rep.Targets, d)
	}
	return rep
}

// sharesDevices says whether two policies of one layer reach the same
// devices: the same site, or device filters with a device in common.
func (f *fleet) sharesDevices(p, o Policy) bool {
	switch p.Type {
	case TypeSite:
		return p.SiteID != nil && o.SiteID != nil && *p.SiteID == *o.SiteID
	case TypeDeviceFilter:
		if p.DeviceFilterID != nil && o.DeviceFilterID != nil && *p.DeviceFilterID == *o.DeviceFilterID {
			return true
		}
		for g := range f.members[p.ID] {
			if f.members[o.ID][g] {
				return true
			}
		}
		return false
	}
	return true
}

// draftID stands for a policy not yet saved among the fleet's policies.
const draftID = -1

func draftOf(in PolicyInput, id int64) Policy {
	p := Policy{ID: id, Name: in.Name, Type: in.Type, RoleScope: in.RoleScope, Enabled: in.Enabled == nil || *in.Enabled,
		SiteID: in.SiteID, DeviceFilterID: in.DeviceFilterID, Rules: in.Rules, Exclusions: in.Exclusions,
		Defaults: in.Defaults, MaintenanceWindow: in.MaintenanceWindow, Locked: in.Type == TypeGlobal}
	return p
}

// checkSite makes a site policy's site one inside scope (not_found
// otherwise: a site outside scope is not told apart from a missing one).
func (s *Service) checkSite(ctx context.Context, scope cairn.SiteScope, in PolicyInput) error {
	if in.Type != TypeSite {
		return nil
	}
	ids, err := s.store.SiteIDsExisting(ctx, []int64{int64(*in.SiteID)})
	if err != nil {
		return err
	}
	if len(ids) == 0 || !scope.Allows(*in.SiteID) {
		return cairn.Errorf(cairn.ECodeNotFound, "site not found")
	}
	return nil
}

// Conflicts previews a draft: coverage, role-filtered counts and its
// conflict state, without saving.
func (s *Service) Conflicts(ctx context.Context, scope cairn.SiteScope, in PolicyInput, policyID int64) (ConflictReport, error) {
	in, err := in.Check()
	if err != nil {
		return ConflictReport{}, err
	}
	if err := s.checkSite(ctx, scope, in); err != nil {
		return ConflictReport{}, err
	}
	id := int64(draftID)
	if policyID != 0 {
		if _, err := s.policy(ctx, scope, policyID); err != nil {
			return ConflictReport{}, err
		}
		id = policyID
	}
	p := draftOf(in, id)
	f, err := s.loadFleet(ctx, scope, nil, &p)
	if err != nil {
		return ConflictReport{}, err
	}
	return f.report(p, in.ConfirmParentOverride), nil
}

// Preview is the stored policy's targets, counts, same-layer conflicts
// and parent override warnings.
func (s *Service) Preview(ctx context.Context, scope cairn.SiteScope, id int64) (ConflictReport, error) {
	p, err := s.policy(ctx, scope, id)
	if err != nil {
		return ConflictReport{}, err
	}
	f, err := s.loadFleet(ctx, scope, nil, nil)
	if err != nil {
		return ConflictReport{}, err
	}
	return f.report(p, true), nil
}

// conflictError is the policy_conflict answer, each conflicting rule a
// field.
func conflictError(rep ConflictReport) error {
	e := &cairn.Error{Code: ECodePolicyConflict, Fields: map[string]string{}}
	for _, c := range rep.SameLayerConflicts {
		e.Fields[ruleField(c.Rule)] = fmt.Sprintf("contradicts %s rule of policy %d (%s) in the same layer", c.Other.Action, c.PolicyID, c.Name)
	}
	if len(rep.SameLayerConflicts) > 0 {
		e.Message = "rules contradict a policy of the same layer"
		return e
	}
	for _, c := range rep.ParentOverrides {
		e.Fields[ruleField(c.Rule)] = fmt.Sprintf("approves what parent policy %d (%s) blocks", c.PolicyID, c.Name)
	}
	e.Message = "approvals override a parent layer's block: resend with confirm_parent_override"
	return e
}

func ruleField(r Rule) string {
	return "rules[" + r.RuleType + ":" + r.MatchType + ":" + r.Value + "]"
}

// CreatePolicy saves a site or device_filter policy.
func (s *Service) CreatePolicy(ctx context.Context, scope cairn.SiteScope, actor string, in PolicyInput) (PolicyRow, error) {
	if in.Type == TypeGlobal {
		return PolicyRow{}, cairn.Errorf(cairn.ECodeConflict, "global policies are seeded by the service and locked")
	}
	return s.save(ctx, scope, actor, 0, in)
}

// UpdatePolicy replaces a policy's document. Its type never changes, nor
// a global policy's role scope.
func (s *Service) UpdatePolicy(ctx context.Context, scope cairn.SiteScope, id int64, in PolicyInput) (PolicyRow, error) {
	old, err := s.policy(ctx, scope, id)
	if err != nil {
		return PolicyRow{}, err
	}
	if old.Locked && in.RoleScope != old.RoleScope {
		return PolicyRow{}, cairn.Errorf(cairn.ECodeConflict, "a global policy's role scope is locked")
	}
	if in.Type != old.Type {
		return PolicyRow{}, cairn.Invalid("type", "cannot change (it is "+old.Type+")")
	}
	return s.save(ctx, scope, "", id, in)
}

func (s *Service) save(ctx context.Context, scope cairn.SiteScope, actor string, id int64, in PolicyInput) (PolicyRow, error) {
	rep, err := s.Conflicts(ctx, scope, in, id)
	if err != nil {
		return PolicyRow{}, err
	}
	if rep.Conflict {
		return PolicyRow{}, conflictError(rep)
	}
	in, _ = in.Check()
	rules, _ := json.Marshal(in.Rules)
	excl, _ := json.Marshal(in.Exclusions)
	defs, _ := json.Marshal(in.Defaults)
	var win []byte
	if in.MaintenanceWindow != nil {
		win, _ = json.Marshal(in.MaintenanceWindow)
	}
	enabled := in.Enabled == nil || *in.Enabled
	var r db.PatchPolicy
	if id == 0 {
		r, err = s.store.PatchPolicyInsert(ctx, db.PatchPolicyInsertParams{Name: in.Name, Type: in.Type, RoleScope: in.RoleScope,
			Enabled: enabled, SiteID: in.SiteID, DeviceFilterID: in.DeviceFilterID, Rules: rules, Exclusions: excl, Defaults: defs,
			MaintenanceWindow: win, CreatedBy: actor})
	} else {
		r, err = s.store.PatchPolicyUpdate(ctx, db.PatchPolicyUpdateParams{ID: id, Name: in.Name, RoleScope: in.RoleScope,
			Enabled: enabled, SiteID: in.SiteID, DeviceFilterID: in.DeviceFilterID, Rules: rules, Exclusions: excl, Defaults: defs,
			MaintenanceWindow: win})
	}
	if err != nil {
		return PolicyRow{}, db.NotFound(err, "patch policy not found")
	}
	return s.GetPolicy(ctx, scope, r.ID)
}

// DeletePolicy deletes an unlocked policy.
func (s *Service) DeletePolicy(ctx context.Context, scope cairn.SiteScope, id int64) error {
	p, err := s.policy(ctx, scope, id)
	if err != nil {
		return err
	}
	if p.Locked {
		return cairn.Errorf(cairn.ECodeConflict, "global policies are locked and cannot be deleted")
	}
	_, err = s.store.PatchPolicyDelete(ctx, id)
	return err
}

// EffectiveFor is a device's same-role hierarchy: its layers, inherited
// exclusion, the sources of its settings and every pending update's
// decision.
func (s *Service) EffectiveFor(ctx context.Context, scope cairn.SiteScope, hostname string) (Effective, error) {
	if strings.TrimSpace(hostname) == "" {
		return Effective{}, cairn.Invalid("hostname", "is required")
	}
	d, err := s.store.PatchDeviceByHostname(ctx, db.PatchDeviceByHostnameParams{Hostname: hostname, AllSites: scope.All, SiteIds: scope.IDs()})
	if err != nil {
		return Effective{}, db.NotFound(err, "device not found")
	}
	f, err := s.loadFleet(ctx, scope, []cairn.DeviceGUID{d.Guid}, nil)
	if err != nil {
		return Effective{}, err
	}
	for _, dev := range f.devices {
		if dev.GUID == d.Guid {
			return f.effective(dev), nil
		}
	}
	return Effective{}, cairn.Errorf(cairn.ECodeNotFound, "device not found")
}

// Metadata is what the policy editor offers.
type Metadata struct {
	Types            []string              `json:"types"`
	RoleScopes       []string              `json:"role_scopes"`
	RuleTypes        []MetadataRuleType    `json:"rule_types"`
	MatchTypes       []string              `json:"match_types"`
	Actions          []string              `json:"actions"`
	RebootPolicies   []string              `json:"reboot_policies"`
	EnforcementModes []string              `json:"enforcement_modes"`
	Weekdays         []string              `json:"weekdays"`
	Exclusions       []string              `json:"exclusions"`
	Defaults         Defaults              `json:"defaults"`
	Sites            []MetadataSite        `json:"sites"`
	Filters          []MetadataFilter      `json:"filters"`
	Limits           map[string]int        `json:"limits"`
	Decisions        []string              `json:"decisions"`
	Layers           map[string]MetadataLy `json:"layers"`
}

// MetadataRuleType is a rule type and the match types it takes.
type MetadataRuleType struct {
	RuleType   string   `json:"rule_type"`
	MatchTypes []string `json:"match_types"`
}

// MetadataSite is a site an operator may target.
type MetadataSite struct {
	ID   cairn.SiteID `json:"site_id"`
	Name string       `json:"name"`
}

// MetadataFilter is a saved device filter.
type MetadataFilter struct {
	ID   int64  `json:"device_filter_id"`
	Name string `json:"name"`
}

// MetadataLy says what one layer may do.
type MetadataLy struct {
	Creatable bool `json:"creatable"`
	Deletable bool `json:"deletable"`
	Rank      int  `json:"rank"`
}

// PolicyMetadata lists what the editor offers inside scope.
func (s *Service) PolicyMetadata(ctx context.Context, scope cairn.SiteScope) (Metadata, error) {
	zero := 0
	m := Metadata{Types: []string{TypeGlobal, TypeSite, TypeDeviceFilter}, RoleScopes: []string{RoleServer, RoleWorkstation},
		MatchTypes: []string{MatchEquals, MatchTitleContains}, Actions: []string{ActionApprove, ActionBlock},
		RebootPolicies: []string{RebootNever, RebootWhenRequired, RebootAlways}, Weekdays: Weekdays,
		EnforcementModes: proto.PatchModes,
		Exclusions:       []string{"device_guid", "hostname", "site_id"}, Defaults: Defaults{DeferralDays: &zero, RebootPolicy: RebootNever, EnforcementMode: proto.PatchModeUnmanaged},
		Sites: []MetadataSite{}, Filters: []MetadataFilter{},
		Decisions: []string{DecisionApproved, DecisionBlocked, DecisionDeferred, DecisionNotApproved, DecisionExcluded},
		Limits: map[string]int{"rules": MaxPolicyRules, "exclusions": MaxPolicyExclusions, "rule_value": MaxRuleValue,
			"window_ranges": MaxWindowRanges, "deferral_days": MaxDeferralDays, "name": MaxPolicyName},
		Layers: map[string]MetadataLy{TypeGlobal: {Rank: 0}, TypeSite: {Creatable: true, Deletable: true, Rank: 1},
			TypeDeviceFilter: {Creatable: true, Deletable: true, Rank: 2}}}
	for _, rt := range RuleTypes {
		m.RuleTypes = append(m.RuleTypes, MetadataRuleType{RuleType: rt, MatchTypes: RuleMatchTypes[rt]})
	}
	sites, err := s.store.SiteList(ctx, db.SiteListParams{AllSites: scope.All, SiteIds: scope.IDs()})
	if err != nil {
		return Metadata{}, err
	}
	for _, st := range sites {
		m.Sites = append(m.Sites, MetadataSite{ID: st.ID, Name: st.Name})
	}
	if s.Filters != nil {
		fs, err := s.Filters.List(ctx)
		if err != nil {
			return Metadata{}, err
		}
		for _, f := range fs {
			m.Filters = append(m.Filters, MetadataFilter{ID: f.ID, Name: f.Name})
		}
	}
	return m, nil
}
