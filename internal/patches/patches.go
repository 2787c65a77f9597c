// Package patches is patch management on the Engine (issue 24): the
// normalised patch inventory of a device and of the fleet (the audit),
// and patch installs, each run by the device's patch lane
// (workflows.PatchLane) and reported "installed" only once the re-scan
// after the attempt shows it. docs/api.md "Patches" has the shapes.
package patches

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/inventory"
)

// Service is patch management over the store.
type Service struct {
	store *db.Store
	now   func() time.Time
	// Filters resolves device filter policies' filters (set by the
	// Engine; policies of that type need it).
	Filters PolicyFilters
}

// New returns the service over store.
func New(store *db.Store) *Service { return &Service{store: store, now: time.Now} }

// ActiveInstall is the open install that owns a row (SPEC "Patch
// inventory row": active_install_job).
type ActiveInstall struct {
	InstallID string `json:"install_id"`
	State     string `json:"state"`
}

// Row is one normalised patch row (SPEC "Patch inventory row").
type Row struct {
	PatchKey         string     `json:"patch_key"`
	KB               string     `json:"kb"`
	KBs              []string   `json:"kbs"`
	Title            string     `json:"title"`
	UpdateID         string     `json:"update_id"`
	Revision         int32      `json:"revision"`
	State            string     `json:"state"`
	Source           string     `json:"source"`
	Package          string     `json:"package"`
	InstalledVersion string     `json:"installed_version"`
	CandidateVersion string     `json:"candidate_version"`
	Severity         string     `json:"severity"`
	Security         bool       `json:"security"`
	Origin           string     `json:"origin"`
	Categories       []string   `json:"categories"`
	RebootBehavior   string     `json:"reboot_behavior"`
	SizeBytes        int64      `json:"size_bytes"`
	ReleasedAt       *time.Time `json:"released_at"`
	InstalledAt      *time.Time `json:"installed_at"`
	UpdatedAt        time.Time  `json:"updated_at"`
	// ActiveInstallJob is the queued or running install of this patch on
	// this device (null: none).
	ActiveInstallJob *ActiveInstall `json:"active_install_job"`
	// The policy source fields (SPEC "Patch inventory row"): the layer and
	// policy that approve a pending row and the policies whose direct
	// rules match it. Null: no patch policy applies (policies are not
	// built yet, so they are always null).
	PatchPolicySource         *PolicySource  `json:"patch_policy_source"`
	PatchPolicyHierarchy      []PolicySource `json:"patch_policy_hierarchy" openapi:"nullable"`
	PatchPolicyLinkedPolicies []PolicySource `json:"patch_policy_linked_policies" openapi:"nullable"`
}

// PolicySource names a policy and its layer (global, site, device_filter).
type PolicySource struct {
	PolicyID int64  `json:"policy_id"`
	Name     string `json:"name"`
	Layer    string `json:"layer"`
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func active(id, state *string) *ActiveInstall {
	if id == nil || state == nil {
		return nil
	}
	return &ActiveInstall{InstallID: *id, State: *state}
}

// DeviceView is GET /api/device/patches/<hostname>.
type DeviceView struct {
	GUID     string `json:"guid"`
	Hostname string `json:"hostname"`
	SiteID   int64  `json:"site_id"`
	// Patches is null when the device never reported patches.
	Patches []Row `json:"patches" openapi:"nullable"`
	// CollectedAt is when the inventory was taken (null: never).
	CollectedAt *time.Time `json:"collected_at"`
	// Provider is the agent's patch provider: apt, dnf, wua (null: the
	// agent has not reported a patch scan's status).
	Provider        *string  `json:"provider"`
	RebootRequired  *bool    `json:"reboot_required"`
	RebootPackages  []string `json:"reboot_packages"`
	PendingCount    int      `json:"pending_count"`
	SecurityPending int      `json:"security_pending_count"`
	// Installs are the device's newest installs, newest first.
	Installs []Install `json:"installs"`
	// Reboots are the device's newest patch reboots, newest first.
	Reboots []Reboot `json:"reboots"`
	// Enforcements are the device's newest Windows Update policy
	// enforcements, newest first: the first is its enforcement state.
	Enforcements []Enforcement `json:"enforcements"`
}

// MaxDeviceInstalls bounds DeviceView.Installs.
const MaxDeviceInstalls = 50

// Device returns a device's patch rows inside scope.
func (s *Service) Device(ctx context.Context, scope cairn.SiteScope, hostname string) (DeviceView, error) {
	d, err := s.store.PatchDeviceByHostname(ctx, db.PatchDeviceByHostnameParams{Hostname: hostname, AllSites: scope.All, SiteIds: scope.IDs()})
	if err != nil {
		// Outside the scope reads as missing, with the same message.
		return DeviceView{}, db.NotFound(err, "device not found")
	}
	out := DeviceView{GUID: string(d.Guid), Hostname: d.Hostname, SiteID: int64(d.SiteID), CollectedAt: d.CollectedAt,
		Provider: d.Provider, RebootRequired: d.RebootRequired, RebootPackages: nonNilStrings(d.RebootPackages)}
	reported, err := s.patchesReported(ctx, string(d.Guid))
	if err != nil {
		return DeviceView{}, err
	}
	if reported {
		rows, err := s.store.PatchDeviceRows(ctx, d.Guid)
		if err != nil {
			return DeviceView{}, err
		}
		out.Patches = make([]Row, len(rows))
		for i, p := range rows {
			out.Patches[i] = Row{PatchKey: p.PatchKey, KB: p.Kb, KBs: nonNilStrings(p.Kbs), Title: p.Title, UpdateID: p.UpdateID,
				Revision: p.Revision, State: p.State, Source: p.Source, Package: p.Package, InstalledVersion: p.InstalledVersion,
				CandidateVersion: p.CandidateVersion, Severity: p.Severity, Security: p.Security, Origin: p.Origin,
				Categories: nonNilStrings(p.Categories), RebootBehavior: p.RebootBehavior, SizeBytes: p.SizeBytes,
				ReleasedAt: p.ReleasedAt, InstalledAt: p.InstalledAt, UpdatedAt: p.UpdatedAt,
				ActiveInstallJob: active(p.ActiveInstallID, p.ActiveInstallState)}
			if p.State == "pending" {
				out.PendingCount++
				if p.Security {
					out.SecurityPending++
				}
			}
		}
		own := make([]deviceRow, len(out.Patches))
		for i := range out.Patches {
			own[i] = deviceRow{guid: d.Guid, row: &out.Patches[i]}
		}
		if err := s.policySources(ctx, scope, own); err != nil {
			return DeviceView{}, err
		}
	}
	if out.Installs, err = s.deviceInstalls(ctx, d.Guid); err != nil {
		return DeviceView{}, err
	}
	if out.Reboots, err = s.deviceReboots(ctx, d.Guid); err != nil {
		return DeviceView{}, err
	}
	out.Enforcements, err = s.deviceEnforcements(ctx, d.Guid)
	return out, err
}

// deviceRow is a patch row with the device it belongs to.
type deviceRow struct {
	guid cairn.DeviceGUID
	row  *Row
}

// policySources fills pending rows' patch_policy_* fields from their
// devices' effective hierarchies: the approving (or blocking) policy, the
// hierarchy, and the policies whose direct rules match the row. Only the
// rows' own devices are read, so an audit page costs its devices, not
// the fleet.
func (s *Service) policySources(ctx context.Context, scope cairn.SiteScope, rows []deviceRow) error {
	var guids []cairn.DeviceGUID
	seen := map[cairn.DeviceGUID]bool{}
	for _, r := range rows {
		if r.row.State == "pending" && !seen[r.guid] {
			seen[r.guid] = true
			guids = append(guids, r.guid)
		}
	}
	if len(guids) == 0 {
		return nil
	}
	f, err := s.loadFleet(ctx, scope, guids, nil)
	if err != nil {
		return err
	}
	views := make(map[cairn.DeviceGUID]policyView, len(f.devices))
	for _, d := range f.devices {
		views[d.GUID] = newPolicyView(f.effective(d))
	}
	for _, r := range rows {
		if v, ok := views[r.guid]; ok && r.row.State == "pending" {
			v.fill(r.row)
		}
	}
	return nil
}

// policyView is one device's effective hierarchy, indexed for its rows.
type policyView struct {
	hierarchy []PolicySource
	names     map[int64]PolicySource
	decisions map[string]Decision
}

func newPolicyView(e Effective) policyView {
	v := policyView{hierarchy: []PolicySource{}, names: map[int64]PolicySource{}, decisions: map[string]Decision{}}
	for _, l := range e.Layers {
		v.names[l.PolicyID] = PolicySource{PolicyID: l.PolicyID, Name: l.Name, Layer: l.Type}
		v.hierarchy = append(v.hierarchy, v.names[l.PolicyID])
	}
	for _, dec := range e.Decisions {
		v.decisions[dec.PatchKey] = dec
	}
	return v
}

// fill sets a pending row's sources; a row no layer decides keeps none.
func (v policyView) fill(r *Row) {
	dec, ok := v.decisions[r.PatchKey]
	if !ok {
		return
	}
	r.PatchPolicyHierarchy = v.hierarchy
	if dec.SourcePolicyID != 0 {
		src := v.names[dec.SourcePolicyID]
		r.PatchPolicySource = &src
	}
	r.PatchPolicyLinkedPolicies = []PolicySource{}
	for _, id := range dec.LinkedPolicies {
		r.PatchPolicyLinkedPolicies = append(r.PatchPolicyLinkedPolicies, v.names[id])
	}
}

// patchesReported says whether the device's inventory ever held patches.
func (s *Service) patchesReported(ctx context.Context, guid string) (bool, error) {
	inv, err := s.store.DeviceInventoryGet(ctx, cairn.DeviceGUID(guid))
	if db.IsNoRows(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var parts map[string]string
	if len(inv.PartHashes) > 0 {
		if err := json.Unmarshal(inv.PartHashes, &parts); err != nil {
			return false, err
		}
	}
	_, ok := parts[inventory.PartPatches]
	return ok, nil
}

// Audit paging.
const (
	DefaultAuditLimit = 200
	MaxAuditLimit     = 1000
	MaxAuditText      = 256
)

// AuditQuery filters and pages the fleet audit.
type AuditQuery struct {
	SiteID         int64
	Hostname       string
	State          string
	Source         string
	Severity       string
	KB             string
	Q              string
	SecurityOnly   bool
	RebootRequired bool
	Limit          int
	Cursor         string
}

// AuditRow is one device's patch row in the audit.
type AuditRow struct {
	DeviceGUID      string `json:"device_guid"`
	Hostname        string `json:"hostname"`
	SiteID          int64  `json:"site_id"`
	SiteName        string `json:"site_name"`
	OperatingSystem string `json:"operating_system"`
	RebootRequired  bool   `json:"reboot_required"`
	Row
}

// AuditPage is a page of the audit; NextCursor continues it (null: the
// last page).
type AuditPage struct {
	Rows       []AuditRow `json:"rows"`
	NextCursor *string    `json:"next_cursor"`
}

// cursor is where a page ends: the last row's order key.
type cursor struct {
	Hostname string `json:"h"`
	GUID     string `json:"g"`
	Key      string `json:"k"`
}

func (c cursor) encode() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (cursor, bool) {
	var c cursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || json.Unmarshal(b, &c) != nil {
		return cursor{}, false
	}
	return c, true
}

// Audit states and sources a filter may name.
var (
	auditStates = map[string]bool{"pending": true, "installed": true}
)

// Audit returns a page of every in-scope device's patch rows, ordered by
// hostname, device and patch key.
func (s *Service) Audit(ctx context.Context, scope cairn.SiteScope, q AuditQuery) (AuditPage, error) {
	var v cairn.Validation
	if q.State != "" && !auditStates[q.State] {
		v.Add("state", "must be pending or installed")
	}
	for field, val := range map[string]string{"hostname": q.Hostname, "source": q.Source, "severity": q.Severity, "kb": q.KB, "q": q.Q} {
		if len(val) > MaxAuditText {
			v.Add(field, "is too long")
		}
	}
	if q.SiteID < 0 {
		v.Add("site_id", "must be a site ID")
	}
	var after cursor
	if q.Cursor != "" {
		c, ok := decodeCursor(q.Cursor)
		if !ok {
			v.Add("cursor", "is not a cursor this route returned")
		}
		after = c
	}
	if err := v.Err(); err != nil {
		return AuditPage{}, err
	}
	if q.Limit <= 0 {
		q.Limit = DefaultAuditLimit
	}
	kb := strings.TrimSpace(q.KB)
	if kb != "" {
		kb = inventory.NormalizeKB(kb)
	}
	params := db.PatchAuditPageParams{AllSites: scope.All, SiteIds: scope.IDs(), SiteID: q.SiteID,
		Hostname: strings.TrimSpace(q.Hostname), State: q.State, Source: strings.TrimSpace(q.Source), Severity: strings.TrimSpace(q.Severity),
		SecurityOnly: q.SecurityOnly, RebootOnly: q.RebootRequired, Kb: kb, Q: strings.ToLower(strings.TrimSpace(q.Q)),
		AfterHostname: after.Hostname, AfterGuid: after.GUID, AfterKey: after.Key, MaxRows: int32(q.Limit + 1)}
	rows, err := s.store.PatchAuditPage(ctx, params)
	if err != nil {
		return AuditPage{}, err
	}
	out := AuditPage{Rows: make([]AuditRow, 0, min(len(rows), q.Limit))}
	for i, p := range rows {
		if i == q.Limit {
			last := rows[i-1]
			next := cursor{Hostname: last.HostnameKey, GUID: string(last.Guid), Key: last.PatchKey}.encode()
			out.NextCursor = &next
			break
		}
		out.Rows = append(out.Rows, AuditRow{DeviceGUID: string(p.Guid), Hostname: p.Hostname, SiteID: int64(p.SiteID), SiteName: p.SiteName,
			OperatingSystem: p.OperatingSystem, RebootRequired: p.RebootRequired, Row: Row{PatchKey: p.PatchKey, KB: p.Kb,
				KBs: nonNilStrings(p.Kbs), Title: p.Title, UpdateID: p.UpdateID, Revision: p.Revision, State: p.State, Source: p.Source,
				Package: p.Package, InstalledVersion: p.InstalledVersion, CandidateVersion: p.CandidateVersion, Severity: p.Severity,
				Security: p.Security, Origin: p.Origin, Categories: nonNilStrings(p.Categories), RebootBehavior: p.RebootBehavior,
				SizeBytes: p.SizeBytes, ReleasedAt: p.ReleasedAt, InstalledAt: p.InstalledAt, UpdatedAt: p.UpdatedAt,
				ActiveInstallJob: active(p.ActiveInstallID, p.ActiveInstallState)}})
	}
	rowsOf := make([]deviceRow, len(out.Rows))
	for i := range out.Rows {
		rowsOf[i] = deviceRow{guid: cairn.DeviceGUID(out.Rows[i].DeviceGUID), row: &out.Rows[i].Row}
	}
	if err := s.policySources(ctx, scope, rowsOf); err != nil {
		return AuditPage{}, err
	}
	return out, nil
}
