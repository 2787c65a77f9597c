// Package directory signs operators in against LDAP, LDAPS and Active
// Directory (simple bind; no Kerberos) and manages the providers: their
// connection settings, the sealed service-account password, and the group
// mappings that give a directory user a role and sites. Signed-in directory
// users are cached as users with auth_source 'directory'; internal/auth
// calls SignIn through its Directory interface and then runs the same MFA
// flow as for local accounts.
package directory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/aegis"
)

// Provider kinds. ldaps and active_directory connect with TLS; ldap is
// plain LDAP (for directories reached over a trusted network only).
const (
	KindLDAP  = "ldap"
	KindLDAPS = "ldaps"
	KindAD    = "active_directory"
)

// Group membership modes: read the user's memberOf attribute, or search
// groups whose member attribute names the user's DN.
const (
	GroupsMemberOf = "member_of"
	GroupsSearch   = "group_search"
)

// RoleMapping gives members of Group a role (admin or operator).
type RoleMapping struct {
	Group string
	Role  string
}

// SiteMapping assigns members of Group to sites.
type SiteMapping struct {
	Group   string
	SiteIDs []int64
}

// Settings are a provider's editable fields, except the bind password.
type Settings struct {
	Name                 string
	Kind                 string
	Host                 string
	Port                 int
	BaseDN               string
	UserFilter           string
	UsernameAttribute    string
	GroupMode            string
	GroupBaseDN          string
	GroupMemberAttribute string
	BindDN               string
	CAPEM                string
	HostOverrides        map[string]string
	RoleMappings         []RoleMapping
	SiteMappings         []SiteMapping
}

// TestResult is the outcome of a connectivity test.
type TestResult struct {
	OK      bool
	Message string
	At      time.Time
}

// Provider is a provider as the API shows it: never the bind password.
type Provider struct {
	ID int64
	Settings
	HasBindPassword bool
	Enabled         bool
	LastTest        *TestResult
	CachedUsers     int64
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

// Patch names the fields to change; nil leaves a field as it is. For a
// new provider every nil field takes its default. BindPassword "" clears
// the stored password.
type Patch struct {
	Name, Kind, Host                        *string
	Port                                    *int
	BaseDN, UserFilter, UsernameAttribute   *string
	GroupMode, GroupBaseDN, GroupMemberAttr *string
	BindDN, BindPassword, CAPEM             *string
	HostOverrides                           *map[string]string
	RoleMappings                            *[]RoleMapping
	SiteMappings                            *[]SiteMapping
	Enabled                                 *bool
}

// Site is what a site mapping may target.
type Site struct {
	ID   int64
	Name string
	Slug string
}

// Service manages providers and signs directory users in.
type Service struct {
	store  *db.Store
	cipher *aegis.Cipher
	log    *slog.Logger
}

// NewService returns the service.
func NewService(store *db.Store, cipher *aegis.Cipher, log *slog.Logger) *Service {
	return &Service{store: store, cipher: cipher, log: log}
}

// List returns every provider.
func (s *Service) List(ctx context.Context) ([]Provider, error) {
	rows, err := s.store.DirectoryProviderList(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Provider, len(rows))
	for i, r := range rows {
		if out[i], err = providerOf(r.DirectoryProvider, r.CachedUsers); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Get returns one provider.
func (s *Service) Get(ctx context.Context, id int64) (Provider, error) {
	r, err := s.store.DirectoryProviderGet(ctx, id)
	if err != nil {
		return Provider{}, db.NotFound(err, "directory provider %d not found", id)
	}
	return providerOf(r.DirectoryProvider, r.CachedUsers)
}

// Create adds a provider. It starts disabled: only a passing connectivity
// test lets an administrator enable it.
func (s *Service) Create(ctx context.Context, p Patch) (Provider, error) {
	if p.Enabled != nil && *p.Enabled {
		return Provider{}, cairn.Invalid("enabled", "a new provider starts disabled; enable it after a passing test")
	}
	var set Settings
	apply(&set, p)
	if err := s.check(ctx, &set, p.BindPassword); err != nil {
		return Provider{}, err
	}
	var id int64
	err := s.store.InTx(ctx, func(q *db.Queries) error {
		params, err := insertParams(set)
		if err != nil {
			return err
		}
		if id, err = q.DirectoryProviderInsert(ctx, params); err != nil {
			return err
		}
		return s.setBindPassword(ctx, q, id, p.BindPassword)
	})
	if db.IsUniqueViolation(err, "directory_providers_name_key") {
		return Provider{}, nameTaken()
	} else if err != nil {
		return Provider{}, err
	}
	return s.Get(ctx, id)
}

// Update changes a provider. Changing connection settings clears the last
// test result and disables it; enabling needs a passing test since.
func (s *Service) Update(ctx context.Context, id int64, p Patch) (Provider, error) {
	cur, err := s.Get(ctx, id)
	if err != nil {
		return Provider{}, err
	}
	set := cur.Settings
	apply(&set, p)
	if err := s.check(ctx, &set, p.BindPassword); err != nil {
		return Provider{}, err
	}
	reset := connectionChanged(cur.Settings, set) || p.BindPassword != nil
	enabled := cur.Enabled
	if p.Enabled != nil {
		enabled = *p.Enabled
	}
	if p.Enabled != nil && *p.Enabled && (reset || cur.LastTest == nil || !cur.LastTest.OK) {
		return Provider{}, cairn.Invalid("enabled", "needs a passing connectivity test of the current connection settings")
	}
	err = s.store.InTx(ctx, func(q *db.Queries) error {
		ins, err := insertParams(set)
		if err != nil {
			return err
		}
		err = q.DirectoryProviderUpdate(ctx, db.DirectoryProviderUpdateParams{ID: id, Name: ins.Name, Kind: ins.Kind,
			Host: ins.Host, Port: ins.Port, BaseDn: ins.BaseDn, UserFilter: ins.UserFilter,
			UsernameAttribute: ins.UsernameAttribute, GroupMode: ins.GroupMode, GroupBaseDn: ins.GroupBaseDn,
			GroupMemberAttribute: ins.GroupMemberAttribute, BindDn: ins.BindDn, CaPem: ins.CaPem,
			HostOverrides: ins.HostOverrides, RoleMappings: ins.RoleMappings, SiteMappings: ins.SiteMappings,
			ResetTest: reset, Enabled: enabled})
		if err != nil {
			return err
		}
		if p.BindPassword == nil {
			return nil
		}
		return s.setBindPassword(ctx, q, id, p.BindPassword)
	})
	if db.IsUniqueViolation(err, "directory_providers_name_key") {
		return Provider{}, nameTaken()
	} else if err != nil {
		return Provider{}, err
	}
	return s.Get(ctx, id)
}

// Delete removes a provider that no cached directory user points at.
func (s *Service) Delete(ctx context.Context, id int64) error {
	if _, err := s.Get(ctx, id); err != nil {
		return err
	}
	n, err := s.store.DirectoryProviderDelete(ctx, id)
	if err != nil {
		return err
	}
	if n == 0 {
		return cairn.Errorf(cairn.ECodeConflict, "cached directory users still belong to this provider; delete them first")
	}
	return nil
}

// Sites lists the sites a site mapping may target.
func (s *Service) Sites(ctx context.Context) ([]Site, error) {
	rows, err := s.store.DirectorySiteList(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Site, len(rows))
	for i, r := range rows {
		out[i] = Site{ID: int64(r.ID), Name: r.Name, Slug: r.Slug}
	}
	return out, nil
}

func (s *Service) setBindPassword(ctx context.Context, q *db.Queries, id int64, password *string) error {
	var sealed []byte
	if password != nil && *password != "" {
		var err error
		if sealed, err = s.cipher.Seal([]byte(*password), bindPasswordAAD(id)); err != nil {
			return err
		}
	}
	return q.DirectoryProviderSetBindPassword(ctx, db.DirectoryProviderSetBindPasswordParams{ID: id, BindPasswordSealed: sealed})
}

// bindPassword opens the provider's sealed service-account password.
func (s *Service) bindPassword(p db.DirectoryProvider) (string, error) {
	if p.BindPasswordSealed == nil {
		return "", nil
	}
	plain, err := s.cipher.Open(p.BindPasswordSealed, bindPasswordAAD(p.ID))
	if errors.Is(err, aegis.ErrForeignKey) {
		// Sealed by a master cipher that was force-reset: unreadable for
		// good, and the fix is an administrator's, not a fault.
		return "", cairn.Errorf(cairn.ECodeConflict, "the directory service-account password was sealed by a master cipher that has since been reset; an administrator must enter it again")
	}
	return string(plain), err
}

// The AAD binds a sealed password to its provider row.
func bindPasswordAAD(id int64) []byte {
	return []byte("cairn:directory:provider:" + strconv.FormatInt(id, 10) + ":bind-password")
}

func nameTaken() error {
	return &cairn.Error{Code: cairn.ECodeConflict, Message: "that provider name is taken", Fields: map[string]string{"name": "is already taken"}}
}

func apply(set *Settings, p Patch) {
	str := func(dst *string, src *string) {
		if src != nil {
			*dst = *src
		}
	}
	str(&set.Name, p.Name)
	str(&set.Kind, p.Kind)
	str(&set.Host, p.Host)
	if p.Port != nil {
		set.Port = *p.Port
	}
	str(&set.BaseDN, p.BaseDN)
	str(&set.UserFilter, p.UserFilter)
	str(&set.UsernameAttribute, p.UsernameAttribute)
	str(&set.GroupMode, p.GroupMode)
	str(&set.GroupBaseDN, p.GroupBaseDN)
	str(&set.GroupMemberAttribute, p.GroupMemberAttr)
	str(&set.BindDN, p.BindDN)
	str(&set.CAPEM, p.CAPEM)
	if p.HostOverrides != nil {
		set.HostOverrides = *p.HostOverrides
	}
	if p.RoleMappings != nil {
		set.RoleMappings = *p.RoleMappings
	}
	if p.SiteMappings != nil {
		set.SiteMappings = *p.SiteMappings
	}
}

// connectionChanged reports a change of what the connectivity test checks.
func connectionChanged(a, b Settings) bool {
	if a.Kind != b.Kind || a.Host != b.Host || a.Port != b.Port || a.BaseDN != b.BaseDN || a.BindDN != b.BindDN || a.CAPEM != b.CAPEM {
		return true
	}
	if len(a.HostOverrides) != len(b.HostOverrides) {
		return true
	}
	for k, v := range a.HostOverrides {
		if b.HostOverrides[k] != v {
			return true
		}
	}
	return false
}

type roleMappingJSON struct {
	Group string `json:"group"`
	Role  string `json:"role"`
}

type siteMappingJSON struct {
	Group   string  `json:"group"`
	SiteIDs []int64 `json:"site_ids"`
}

func insertParams(set Settings) (db.DirectoryProviderInsertParams, error) {
	overrides, err := json.Marshal(orEmpty(set.HostOverrides))
	if err != nil {
		return db.DirectoryProviderInsertParams{}, err
	}
	roles := make([]roleMappingJSON, len(set.RoleMappings))
	for i, m := range set.RoleMappings {
		roles[i] = roleMappingJSON(m)
	}
	sitesJSON := make([]siteMappingJSON, len(set.SiteMappings))
	for i, m := range set.SiteMappings {
		sitesJSON[i] = siteMappingJSON(m)
	}
	rolesRaw, err := json.Marshal(roles)
	if err != nil {
		return db.DirectoryProviderInsertParams{}, err
	}
	sitesRaw, err := json.Marshal(sitesJSON)
	if err != nil {
		return db.DirectoryProviderInsertParams{}, err
	}
	return db.DirectoryProviderInsertParams{Name: set.Name, Kind: set.Kind, Host: set.Host, Port: int32(set.Port),
		BaseDn: set.BaseDN, UserFilter: set.UserFilter, UsernameAttribute: set.UsernameAttribute, GroupMode: set.GroupMode,
		GroupBaseDn: set.GroupBaseDN, GroupMemberAttribute: set.GroupMemberAttribute, BindDn: set.BindDN, CaPem: set.CAPEM,
		HostOverrides: overrides, RoleMappings: rolesRaw, SiteMappings: sitesRaw}, nil
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func providerOf(r db.DirectoryProvider, cached int64) (Provider, error) {
	p := Provider{ID: r.ID, HasBindPassword: r.BindPasswordSealed != nil, Enabled: r.Enabled, CachedUsers: cached,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	var err error
	if p.Settings, err = settingsOf(r); err != nil {
		return Provider{}, err
	}
	if r.LastTestOk != nil && r.LastTestAt != nil {
		p.LastTest = &TestResult{OK: *r.LastTestOk, Message: r.LastTestMessage, At: *r.LastTestAt}
	}
	return p, nil
}

func settingsOf(r db.DirectoryProvider) (Settings, error) {
	set := Settings{Name: r.Name, Kind: r.Kind, Host: r.Host, Port: int(r.Port), BaseDN: r.BaseDn, UserFilter: r.UserFilter,
		UsernameAttribute: r.UsernameAttribute, GroupMode: r.GroupMode, GroupBaseDN: r.GroupBaseDn,
		GroupMemberAttribute: r.GroupMemberAttribute, BindDN: r.BindDn, CAPEM: r.CaPem}
	var roles []roleMappingJSON
	var sitesJSON []siteMappingJSON
	if err := json.Unmarshal(r.HostOverrides, &set.HostOverrides); err != nil {
		return Settings{}, fmt.Errorf("directory provider %d host_overrides: %w", r.ID, err)
	}
	if err := json.Unmarshal(r.RoleMappings, &roles); err != nil {
		return Settings{}, fmt.Errorf("directory provider %d role_mappings: %w", r.ID, err)
	}
	if err := json.Unmarshal(r.SiteMappings, &sitesJSON); err != nil {
		return Settings{}, fmt.Errorf("directory provider %d site_mappings: %w", r.ID, err)
	}
	set.RoleMappings = make([]RoleMapping, len(roles))
	for i, m := range roles {
		set.RoleMappings[i] = RoleMapping(m)
	}
	set.SiteMappings = make([]SiteMapping, len(sitesJSON))
	for i, m := range sitesJSON {
		set.SiteMappings[i] = SiteMapping(m)
	}
	return set, nil
}
