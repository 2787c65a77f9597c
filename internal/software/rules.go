package software

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/inventory"
)

// ECodeUninstallBlocked: the software is on the uninstall blocklist; the
// uninstall route refuses it.
const ECodeUninstallBlocked = "uninstall_blocked"

// Rule text limits.
const (
	MaxReason      = 500
	MaxPath        = 1024
	MaxArguments   = 2048
	MaxDisplayIcon = 1024
)

// Actor is who changes a rule and what they may see.
type Actor struct {
	Username string
	Admin    bool
	Scope    cairn.SiteScope
}

// Target is the software row a rule is made from: a device in the
// actor's scope (by hostname) and a name it has installed. Version nil
// makes the rule apply to every version; a version must be one the
// device has under that name and makes the rule that version's.
type Target struct {
	Hostname string
	Name     string
	Version  *string
}

// Device is the device a rule was made from.
type Device struct {
	GUID     cairn.DeviceGUID
	Hostname string
	SiteID   cairn.SiteID
}

// resolved is a target checked against the device's rows.
type resolved struct {
	device  Device
	name    string // as the device reports it
	nameKey string
	version string // "" = every version
	// os is the device's operating system as its agent reports it.
	os string
}

func (s *Service) resolve(ctx context.Context, a Actor, t Target) (resolved, error) {
	var v cairn.Validation
	name := strings.TrimSpace(t.Name)
	if name == "" || len([]rune(name)) > inventory.MaxSoftwareName {
		v.Add("name", fmt.Sprintf("is required: the software's name, at most %d characters", inventory.MaxSoftwareName))
	}
	if t.Version != nil && len([]rune(*t.Version)) > inventory.MaxSoftwareVersion {
		v.Add("version", fmt.Sprintf("must be at most %d characters", inventory.MaxSoftwareVersion))
	}
	if err := v.Err(); err != nil {
		return resolved{}, err
	}
	d, err := s.store.SoftwareDeviceFind(ctx, db.SoftwareDeviceFindParams{Hostname: t.Hostname, AllSites: a.Scope.All, SiteIds: a.Scope.IDs()})
	if err != nil {
		return resolved{}, db.NotFound(err, "device not found")
	}
	key := inventory.SoftwareKey(name)
	rows, err := s.store.SoftwareDeviceRows(ctx, db.SoftwareDeviceRowsParams{Guid: d.Guid, NameKey: key})
	if err != nil {
		return resolved{}, err
	}
	out := resolved{device: Device{GUID: d.Guid, Hostname: d.Hostname, SiteID: d.SiteID}, nameKey: key, os: d.OperatingSystem}
	for _, r := range rows {
		if t.Version == nil || r.Version == strings.TrimSpace(*t.Version) {
			out.name = r.Name
			if t.Version != nil {
				out.version = r.Version
			}
			return out, nil
		}
	}
	if t.Version != nil {
		return resolved{}, cairn.Errorf(cairn.ECodeNotFound, "%s has no software %q of version %q", d.Hostname, name, strings.TrimSpace(*t.Version))
	}
	return resolved{}, cairn.Errorf(cairn.ECodeNotFound, "%s has no software named %q", d.Hostname, name)
}

// IconRule is a global icon override.
type IconRule struct {
	Name        string    `json:"name"`
	NameKey     string    `json:"name_key"`
	IconHash    *string   `json:"icon_hash"`
	DisplayIcon string    `json:"display_icon"`
	ClearIcon   bool      `json:"clear_icon"`
	CreatedBy   string    `json:"created_by"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedBy   string    `json:"updated_by"`
	UpdatedAt   time.Time `json:"updated_at"`
}

func newIconRule(r db.SoftwareIconOverride) IconRule {
	return IconRule{Name: r.Name, NameKey: r.NameKey, IconHash: r.IconHash, DisplayIcon: r.DisplayIcon, ClearIcon: r.ClearIcon,
		CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt, UpdatedBy: r.UpdatedBy, UpdatedAt: r.UpdatedAt}
}

// IconOverride is what an icon override sets: exactly one of an uploaded
// icon, an icon resource on the endpoint, no icon, or removing the rule.
type IconOverride struct {
	Icon        []byte
	DisplayIcon string
	ClearIcon   bool
	Remove      bool
}

var (
	windowsPath = regexp.MustCompile(`^(?:[A-Za-z]:\\|\\\\[^\\/]+\\[^\\/]+\\)`)
	iconFile    = regexp.MustCompile(`(?i)\.(?:ico|exe|dll|icl|cpl|ocx|scr|png|svg)(?:,-?\d{1,5})?$`)
)

func (o IconOverride) validate() (contentType string, err error) {
	set := 0
	for _, b := range []bool{o.Icon != nil, o.DisplayIcon != "", o.ClearIcon, o.Remove} {
		if b {
			set++
		}
	}
	if set != 1 {
		return "", cairn.Invalid("icon", "give exactly one of icon, display_icon, clear_icon or remove")
	}
	if o.Icon != nil {
		return SniffIcon("icon", o.Icon)
	}
	if o.DisplayIcon != "" {
		p := o.DisplayIcon
		if len(p) > MaxDisplayIcon || hasControl(p) || strings.Contains(p, `"`) ||
			!(windowsPath.MatchString(p) || strings.HasPrefix(p, "/")) || !iconFile.MatchString(p) {
			return "", cairn.Invalid("display_icon", "must be an absolute path to an .ico, .exe, .dll, .icl, .cpl, .ocx, .scr, .png or .svg file, optionally followed by ,<index>")
		}
	}
	return "", nil
}

// SetIconOverride sets (or removes) the global icon override of the
// target's name. Versions are ignored: an icon belongs to the product,
// whatever version is installed. An uploaded icon is stored by its hash;
// one no rule uses any more is deleted.
func (s *Service) SetIconOverride(ctx context.Context, a Actor, t Target, o IconOverride) (IconRule, Device, error) {
	contentType, err := o.validate()
	if err != nil {
		return IconRule{}, Device{}, err
	}
	t.Version = nil
	res, err := s.resolve(ctx, a, t)
	if err != nil {
		return IconRule{}, Device{}, err
	}
	var rule IconRule
	err = s.store.InTx(ctx, func(q *db.Queries) error {
		var old *string
		prev, err := q.SoftwareIconOverrideGetForUpdate(ctx, res.nameKey)
		exists := err == nil
		switch {
		case exists:
			old = prev.IconHash
		case !db.IsNoRows(err):
			return err
		}
		if o.Remove {
			if !exists {
				return cairn.Errorf(cairn.ECodeNotFound, "%q has no icon override", res.name)
			}
			deleted, err := q.SoftwareIconOverrideDelete(ctx, res.nameKey)
			if err != nil {
				return err
			}
			rule = newIconRule(deleted)
		} else {
			var hash *string
			if o.Icon != nil {
				h := iconHash(o.Icon)
				if err := q.SoftwareIconInsert(ctx, db.SoftwareIconInsertParams{Hash: h, ContentType: contentType, Data: o.Icon, CreatedBy: a.Username}); err != nil {
					return err
				}
				hash = &h
			}
			saved, err := q.SoftwareIconOverrideUpsert(ctx, db.SoftwareIconOverrideUpsertParams{NameKey: res.nameKey, Name: res.name,
				IconHash: hash, DisplayIcon: o.DisplayIcon, ClearIcon: o.ClearIcon, Actor: a.Username})
			if err != nil {
				return err
			}
			rule = newIconRule(saved)
		}
		if old != nil && (rule.IconHash == nil || *old != *rule.IconHash || o.Remove) {
			return q.SoftwareIconDeleteUnused(ctx, *old)
		}
		return nil
	})
	return rule, res.device, err
}

// UninstallOverrideRule is a global uninstall override.
type UninstallOverrideRule struct {
	Name       string    `json:"name"`
	NameKey    string    `json:"name_key"`
	Version    string    `json:"version"`
	Executable string    `json:"executable"`
	Arguments  string    `json:"arguments"`
	Command    string    `json:"command"`
	CreatedBy  string    `json:"created_by"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedBy  string    `json:"updated_by"`
	UpdatedAt  time.Time `json:"updated_at"`
}

func newOverrideRule(r db.SoftwareUninstallOverride) UninstallOverrideRule {
	return UninstallOverrideRule{Name: r.Name, NameKey: r.NameKey, Version: r.Version, Executable: r.Executable, Arguments: r.Arguments,
		Command: r.Command, CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt, UpdatedBy: r.UpdatedBy, UpdatedAt: r.UpdatedAt}
}

// UninstallOverride is the silent uninstall command to use instead of the
// endpoint's, or Remove to drop the rule.
type UninstallOverride struct {
	Executable string
	Arguments  string
	Remove     bool
}

var (
	uninstallExe = regexp.MustCompile(`(?i)\.(?:exe|msi|cmd|bat|com)$`)
	bareExe      = map[string]bool{"msiexec": true, "msiexec.exe": true}
)

// command validates the override and renders its command line: the
// executable (an absolute path, quoted, or msiexec) and its arguments.
func (o UninstallOverride) command() (string, error) {
	var v cairn.Validation
	exe, args := strings.TrimSpace(o.Executable), strings.TrimSpace(o.Arguments)
	switch {
	case exe == "":
		v.Add("executable", "is required: the uninstaller's absolute path, or msiexec.exe")
	case len(exe) > MaxPath || hasControl(exe) || strings.Contains(exe, `"`):
		v.Add("executable", fmt.Sprintf("must be at most %d characters, without quotes or control characters", MaxPath))
	case bareExe[strings.ToLower(exe)]:
	case !(windowsPath.MatchString(exe) || strings.HasPrefix(exe, "/")):
		v.Add("executable", "must be an absolute path (C:\\..., \\\\server\\share\\... or /...) or msiexec.exe")
	case windowsPath.MatchString(exe) && !uninstallExe.MatchString(exe):
		v.Add("executable", "must name an .exe, .msi, .cmd, .bat or .com file")
	}
	if len(args) > MaxArguments || hasControl(args) {
		v.Add("arguments", fmt.Sprintf("must be one line of at most %d characters", MaxArguments))
	}
	if err := v.Err(); err != nil {
		return "", err
	}
	cmd := exe
	if !bareExe[strings.ToLower(exe)] {
		cmd = `"` + exe + `"`
	}
	if args != "" {
		cmd += " " + args
	}
	return cmd, nil
}

// SetUninstallOverride sets (or removes) the global uninstall override of
// the target's name (and version, when the target names one). The command
// runs with the agent's privileges on every site's devices, so only an
// administrator may set or remove one.
func (s *Service) SetUninstallOverride(ctx context.Context, a Actor, t Target, o UninstallOverride) (UninstallOverrideRule, error) {
	if !a.Admin {
		return UninstallOverrideRule{}, cairn.Errorf(cairn.ECodeForbidden, "uninstall overrides run on every site's devices; only administrators may change them")
	}
	var cmd string
	if !o.Remove {
		var err error
		if cmd, err = o.command(); err != nil {
			return UninstallOverrideRule{}, err
		}
	} else if o.Executable != "" || o.Arguments != "" {
		return UninstallOverrideRule{}, cairn.Invalid("remove", "cannot be combined with executable or arguments")
	}
	res, err := s.resolve(ctx, a, t)
	if err != nil {
		return UninstallOverrideRule{}, err
	}
	if o.Remove {
		r, err := s.store.SoftwareUninstallOverrideDelete(ctx, db.SoftwareUninstallOverrideDeleteParams{NameKey: res.nameKey, Version: res.version})
		if err != nil {
			return UninstallOverrideRule{}, db.NotFound(err, "%q has no uninstall override for %s", res.name, versionText(res.version))
		}
		return newOverrideRule(r), nil
	}
	r, err := s.store.SoftwareUninstallOverrideUpsert(ctx, db.SoftwareUninstallOverrideUpsertParams{NameKey: res.nameKey, Version: res.version,
		Name: res.name, Executable: strings.TrimSpace(o.Executable), Arguments: strings.TrimSpace(o.Arguments), Command: cmd, Actor: a.Username})
	if err != nil {
		return UninstallOverrideRule{}, err
	}
	return newOverrideRule(r), nil
}

// BlockRule is a global uninstall block.
type BlockRule struct {
	Name      string    `json:"name"`
	NameKey   string    `json:"name_key"`
	Version   string    `json:"version"`
	Reason    string    `json:"reason"`
	CreatedBy string    `json:"created_by"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedBy string    `json:"updated_by"`
	UpdatedAt time.Time `json:"updated_at"`
}

func newBlockRule(r db.SoftwareUninstallBlock) BlockRule {
	return BlockRule{Name: r.Name, NameKey: r.NameKey, Version: r.Version, Reason: r.Reason,
		CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt, UpdatedBy: r.UpdatedBy, UpdatedAt: r.UpdatedAt}
}

// Block puts the target's name (and version) on the uninstall blocklist.
// Any operator who sees the device may: a block only ever makes the fleet
// safer.
func (s *Service) Block(ctx context.Context, a Actor, t Target, reason string) (BlockRule, error) {
	reason = strings.TrimSpace(reason)
	if reason == "" || len([]rune(reason)) > MaxReason || hasControl(strings.ReplaceAll(reason, "\n", " ")) {
		return BlockRule{}, cairn.Invalid("reason", fmt.Sprintf("is required: why the uninstall is unsafe, at most %d characters", MaxReason))
	}
	res, err := s.resolve(ctx, a, t)
	if err != nil {
		return BlockRule{}, err
	}
	r, err := s.store.SoftwareUninstallBlockUpsert(ctx, db.SoftwareUninstallBlockUpsertParams{NameKey: res.nameKey, Version: res.version,
		Name: res.name, Reason: reason, Actor: a.Username})
	if err != nil {
		return BlockRule{}, err
	}
	return newBlockRule(r), nil
}

// Unblock removes every block that stops the target row: with a version,
// that version's rule and the every-version rule; without, every rule of
// the name. Lifting a fleet-wide safety rule is an administrator's call.
func (s *Service) Unblock(ctx context.Context, a Actor, t Target) ([]BlockRule, error) {
	if !a.Admin {
		return nil, cairn.Errorf(cairn.ECodeForbidden, "the uninstall blocklist applies to every site; only administrators may lift a block")
	}
	res, err := s.resolve(ctx, a, t)
	if err != nil {
		return nil, err
	}
	rows, err := s.store.SoftwareUninstallBlockDeleteMatching(ctx, db.SoftwareUninstallBlockDeleteMatchingParams{NameKey: res.nameKey,
		Version: res.version, AllVersions: t.Version == nil})
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, cairn.Errorf(cairn.ECodeNotFound, "no uninstall block stops %q", res.name)
	}
	out := make([]BlockRule, len(rows))
	for i, r := range rows {
		out[i] = newBlockRule(r)
	}
	return out, nil
}

// UninstallPlan is what the uninstall route runs for a row: the override
// command when a rule gives one ("" means the endpoint's own).
type UninstallPlan struct {
	Command     string
	RuleVersion string
}

// CheckUninstall is the uninstall route's gate: a blocked (name, version)
// is refused with uninstall_blocked and the block's reason; otherwise the
// most specific override (the version's own before every version) wins.
func (s *Service) CheckUninstall(ctx context.Context, name, version string) (UninstallPlan, error) {
	rules, err := s.store.SoftwareUninstallRules(ctx, db.SoftwareUninstallRulesParams{NameKey: inventory.SoftwareKey(name), Version: strings.TrimSpace(version)})
	if err != nil {
		return UninstallPlan{}, err
	}
	var plan UninstallPlan
	found := false
	for _, r := range rules {
		switch r.Kind {
		case "block":
			return UninstallPlan{}, cairn.Errorf(ECodeUninstallBlocked, "uninstalling %s is blocked: %s", name, r.Detail)
		case "override":
			if !found {
				plan, found = UninstallPlan{Command: r.Detail, RuleVersion: r.Version}, true
			}
		}
	}
	return plan, nil
}

// Rules are every global rule, for the console's rule list.
type Rules struct {
	IconOverrides      []IconRule              `json:"icon_overrides"`
	UninstallOverrides []UninstallOverrideRule `json:"uninstall_overrides"`
	UninstallBlocks    []BlockRule             `json:"uninstall_blocks"`
}

// ListRules returns every rule.
func (s *Service) ListRules(ctx context.Context) (Rules, error) {
	icons, err := s.store.SoftwareIconOverrideList(ctx)
	if err != nil {
		return Rules{}, err
	}
	overrides, err := s.store.SoftwareUninstallOverrideList(ctx)
	if err != nil {
		return Rules{}, err
	}
	blocks, err := s.store.SoftwareUninstallBlockList(ctx)
	if err != nil {
		return Rules{}, err
	}
	out := Rules{IconOverrides: make([]IconRule, len(icons)), UninstallOverrides: make([]UninstallOverrideRule, len(overrides)),
		UninstallBlocks: make([]BlockRule, len(blocks))}
	for i, r := range icons {
		out.IconOverrides[i] = newIconRule(r)
	}
	for i, r := range overrides {
		out.UninstallOverrides[i] = newOverrideRule(r)
	}
	for i, r := range blocks {
		out.UninstallBlocks[i] = newBlockRule(r)
	}
	return out, nil
}

// AgentIconRule is one icon override as agents get it.
type AgentIconRule struct {
	Name        string    `json:"name"`
	NameKey     string    `json:"name_key"`
	IconHash    *string   `json:"icon_hash"`
	DisplayIcon string    `json:"display_icon"`
	ClearIcon   bool      `json:"clear_icon"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// AgentOverrides is the agent's overrides payload; Revision changes
// whenever any rule does, so an agent can skip re-applying an unchanged set.
type AgentOverrides struct {
	Revision      string          `json:"revision"`
	IconOverrides []AgentIconRule `json:"icon_overrides"`
}

// AgentRules returns the icon override rules agents apply while
// collecting software.
func (s *Service) AgentRules(ctx context.Context) (AgentOverrides, error) {
	rows, err := s.store.SoftwareIconOverrideList(ctx)
	if err != nil {
		return AgentOverrides{}, err
	}
	out := AgentOverrides{IconOverrides: make([]AgentIconRule, len(rows))}
	for i, r := range rows {
		out.IconOverrides[i] = AgentIconRule{Name: r.Name, NameKey: r.NameKey, IconHash: r.IconHash, DisplayIcon: r.DisplayIcon,
			ClearIcon: r.ClearIcon, UpdatedAt: r.UpdatedAt.UTC()}
	}
	raw, err := json.Marshal(out.IconOverrides)
	if err != nil {
		return AgentOverrides{}, err
	}
	sum := sha256.Sum256(raw)
	out.Revision = hex.EncodeToString(sum[:16])
	return out, nil
}

func versionText(v string) string {
	if v == "" {
		return "every version"
	}
	return "version " + v
}

// hasControl reports control characters (newlines included).
func hasControl(s string) bool {
	return strings.ContainsFunc(s, unicode.IsControl)
}
