package api

import (
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/directory"
)

// DirectoryArea are the routes of Directory, over the services only they use.
type DirectoryArea struct {
	// Directory manages directory providers and cached directory users.
	Directory *directory.Service
}

type directoryAPI struct {
	*Server
	DirectoryArea
}

func (d DirectoryArea) routes(s *Server) []Route {
	a := &directoryAPI{Server: s, DirectoryArea: d}
	return slices.Concat(a.directoryRoutes())
}

func (s *directoryAPI) directoryRoutes() []Route {
	const one = "/api/directory/providers/{provider_id}"
	return []Route{
		{"GET", "/api/directory/providers", AuthAdmin, getAction(s.Server, func(r *http.Request) (providerListJSON, error) {
			list, err := s.Directory.List(r.Context())
			out := make([]providerJSON, len(list))
			for i, p := range list {
				out[i] = providerJSONOf(p)
			}
			return providerListJSON{Providers: out}, err
		}), "List directory providers"},
		// Changing who may sign in, and how, is sudo (issue 21 item 5): a
		// recently re-authenticated session, never an API token. So is
		// lookup-user, a password oracle for the directory's accounts.
		{"POST", "/api/directory/providers", AuthAdmin, s.sudo(jsonAction(s.Server, http.StatusCreated, false, func(r *http.Request, req providerRequest) (providerJSON, error) {
			p, err := s.Directory.Create(r.Context(), req.patch())
			return providerJSONOf(p), err
		})).Errors(cairn.ECodeConflict), "Create a directory provider"},
		{"PATCH", one, AuthAdmin, s.sudo(jsonAction(s.Server, http.StatusOK, false, func(r *http.Request, req providerRequest) (providerJSON, error) {
			id, err := providerID(r)
			if err != nil {
				return providerJSON{}, err
			}
			p, err := s.Directory.Update(r.Context(), id, req.patch())
			return providerJSONOf(p), err
		})).Errors(cairn.ECodeNotFound, cairn.ECodeConflict), "Update a directory provider"},
		{"DELETE", one, AuthAdmin, s.sudo(jsonAction(s.Server, http.StatusNoContent, true, func(r *http.Request, _ struct{}) (struct{}, error) {
			id, err := providerID(r)
			if err != nil {
				return struct{}{}, err
			}
			return struct{}{}, s.Directory.Delete(r.Context(), id)
		})).Errors(cairn.ECodeNotFound, cairn.ECodeConflict), "Delete a directory provider"},
		{"POST", "/api/directory/providers/certificate", AuthAdmin, jsonAction(s.Server, http.StatusOK, false, func(r *http.Request, req certificateRequest) (certificateJSON, error) {
			c, err := directory.FetchCertificate(r.Context(), req.Host, req.Port, req.HostOverrides)
			return certificateJSON{Subject: c.Subject, Issuer: c.Issuer, SANs: c.SANs, NotBefore: c.NotBefore, NotAfter: c.NotAfter,
				SHA256Fingerprint: c.SHA256Fingerprint, PEM: c.PEM}, err
		}).Errors(cairn.ECodeUnavailable), "Inspect a directory server certificate"},
		{"POST", one + "/test", AuthAdmin, jsonAction(s.Server, http.StatusOK, true, func(r *http.Request, _ struct{}) (testResultJSON, error) {
			id, err := providerID(r)
			if err != nil {
				return testResultJSON{}, err
			}
			res, err := s.Directory.Test(r.Context(), id)
			return testResultJSON{OK: res.OK, Message: res.Message, TestedAt: res.At}, err
		}).Errors(cairn.ECodeNotFound, cairn.ECodeUnavailable, cairn.ECodeConflict), "Test a directory provider"},
		{"POST", one + "/lookup-user", AuthAdmin, s.sudo(jsonAction(s.Server, http.StatusOK, false, func(r *http.Request, req lookupRequest) (lookupJSON, error) {
			id, err := providerID(r)
			if err != nil {
				return lookupJSON{}, err
			}
			res, err := s.Directory.Lookup(r.Context(), id, req.Username, req.Password)
			return lookupJSON{Found: res.Found, DN: res.DN, Attributes: orEmptyMap(res.Attributes), Groups: orEmptyList(res.Groups),
				Role: res.Role, SiteIDs: orEmptyIDs(res.SiteIDs), PasswordOK: res.PasswordOK}, err
		})).Errors(cairn.ECodeNotFound, cairn.ECodeInvalidCredentials, cairn.ECodeUnavailable), "Look up a directory user"},
		{"POST", one + "/sync", AuthAdmin, s.sudo(jsonAction(s.Server, http.StatusOK, true, func(r *http.Request, _ struct{}) (syncJSON, error) {
			id, err := providerID(r)
			if err != nil {
				return syncJSON{}, err
			}
			res, err := s.Directory.Sync(r.Context(), id)
			return syncJSON{Checked: res.Checked, Disabled: res.Disabled}, err
		})).Errors(cairn.ECodeNotFound, cairn.ECodeUnavailable), "Sync a directory provider"},
		{"GET", "/api/directory/sites", AuthToken, getAction(s.Server, func(r *http.Request) (directorySiteListJSON, error) {
			// The sites a mapping may target, within the caller's scope like
			// every other site listing.
			list, err := s.Sites.List(r.Context(), principal(r.Context()).SiteScope())
			out := make([]directorySiteJSON, len(list))
			for i, st := range list {
				out[i] = directorySiteJSON{ID: int64(st.ID), Name: st.Name, Slug: st.Slug}
			}
			return directorySiteListJSON{Sites: out}, err
		}), "List the sites a directory mapping may target"},
		{"POST", "/api/users/{username}/directory-cache", AuthAdmin, s.sudo(jsonAction(s.Server, http.StatusOK, false, func(r *http.Request, req directoryCacheRequest) (directoryCacheJSON, error) {
			name := chi.URLParam(r, "username")
			return directoryCacheJSON{Username: name, Enabled: *req.Enabled}, s.Directory.SetCacheEnabled(r.Context(), name, *req.Enabled)
		})).Errors(cairn.ECodeNotFound), "Turn a user's directory cache on or off"},
	}
}

func providerID(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(chi.URLParam(r, "provider_id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, cairn.Invalid("provider_id", "must be a positive integer")
	}
	return id, nil
}

type roleMappingJSON struct {
	Group string `json:"group"`
	Role  string `json:"role"`
}

type siteMappingJSON struct {
	Group   string  `json:"group"`
	SiteIDs []int64 `json:"site_ids"`
}

// providerRequest is the body of create (missing fields take defaults) and
// update (missing fields stay as they are).
type providerRequest struct {
	Name                 *string            `json:"name" limit:"max=100"`
	Kind                 *string            `json:"kind"`
	Host                 *string            `json:"host"`
	Port                 *int               `json:"port"`
	BaseDN               *string            `json:"base_dn" limit:"max=1024"`
	UserFilter           *string            `json:"user_filter" limit:"max=1024"`
	UsernameAttribute    *string            `json:"username_attribute"`
	GroupMode            *string            `json:"group_mode"`
	GroupBaseDN          *string            `json:"group_base_dn" limit:"max=1024"`
	GroupMemberAttribute *string            `json:"group_member_attribute"`
	BindDN               *string            `json:"bind_dn" limit:"max=1024"`
	BindPassword         *string            `json:"bind_password" limit:"max=1024"`
	CAPEM                *string            `json:"ca_pem" limit:"max=65536"`
	HostOverrides        *map[string]string `json:"host_overrides"`
	RoleMappings         *[]roleMappingJSON `json:"role_mappings" limit:"max=200"`
	SiteMappings         *[]siteMappingJSON `json:"site_mappings" limit:"max=200"`
	Enabled              *bool              `json:"enabled"`
}

func (req providerRequest) patch() directory.Patch {
	p := directory.Patch{Name: req.Name, Kind: req.Kind, Host: req.Host, Port: req.Port, BaseDN: req.BaseDN,
		UserFilter: req.UserFilter, UsernameAttribute: req.UsernameAttribute, GroupMode: req.GroupMode,
		GroupBaseDN: req.GroupBaseDN, GroupMemberAttr: req.GroupMemberAttribute, BindDN: req.BindDN,
		BindPassword: req.BindPassword, CAPEM: req.CAPEM, HostOverrides: req.HostOverrides, Enabled: req.Enabled}
	if req.RoleMappings != nil {
		m := make([]directory.RoleMapping, len(*req.RoleMappings))
		for i, r := range *req.RoleMappings {
			m[i] = directory.RoleMapping(r)
		}
		p.RoleMappings = &m
	}
	if req.SiteMappings != nil {
		m := make([]directory.SiteMapping, len(*req.SiteMappings))
		for i, r := range *req.SiteMappings {
			m[i] = directory.SiteMapping(r)
		}
		p.SiteMappings = &m
	}
	return p
}

type testResultJSON struct {
	OK       bool      `json:"ok"`
	Message  string    `json:"message"`
	TestedAt time.Time `json:"tested_at"`
}

type providerJSON struct {
	ProviderID           int64             `json:"provider_id"`
	Name                 string            `json:"name"`
	Kind                 string            `json:"kind"`
	Host                 string            `json:"host"`
	Port                 int               `json:"port"`
	BaseDN               string            `json:"base_dn"`
	UserFilter           string            `json:"user_filter"`
	UsernameAttribute    string            `json:"username_attribute"`
	GroupMode            string            `json:"group_mode"`
	GroupBaseDN          string            `json:"group_base_dn"`
	GroupMemberAttribute string            `json:"group_member_attribute"`
	BindDN               string            `json:"bind_dn"`
	HasBindPassword      bool              `json:"has_bind_password"`
	CAPEM                string            `json:"ca_pem"`
	HostOverrides        map[string]string `json:"host_overrides"`
	RoleMappings         []roleMappingJSON `json:"role_mappings"`
	SiteMappings         []siteMappingJSON `json:"site_mappings"`
	Enabled              bool              `json:"enabled"`
	LastTest             *testResultJSON   `json:"last_test"`
	CachedUsers          int64             `json:"cached_users"`
	CreatedAt            time.Time         `json:"created_at"`
	UpdatedAt            time.Time         `json:"updated_at"`
}

func providerJSONOf(p directory.Provider) providerJSON {
	out := providerJSON{ProviderID: p.ID, Name: p.Name, Kind: p.Kind, Host: p.Host, Port: p.Port, BaseDN: p.BaseDN,
		UserFilter: p.UserFilter, UsernameAttribute: p.UsernameAttribute, GroupMode: p.GroupMode, GroupBaseDN: p.GroupBaseDN,
		GroupMemberAttribute: p.GroupMemberAttribute, BindDN: p.BindDN, HasBindPassword: p.HasBindPassword, CAPEM: p.CAPEM,
		HostOverrides: p.HostOverrides, Enabled: p.Enabled, CachedUsers: p.CachedUsers, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt,
		RoleMappings: make([]roleMappingJSON, len(p.RoleMappings)), SiteMappings: make([]siteMappingJSON, len(p.SiteMappings))}
	if out.HostOverrides == nil {
		out.HostOverrides = map[string]string{}
	}
	for i, m := range p.RoleMappings {
		out.RoleMappings[i] = roleMappingJSON(m)
	}
	for i, m := range p.SiteMappings {
		out.SiteMappings[i] = siteMappingJSON{Group: m.Group, SiteIDs: orEmptyIDs(m.SiteIDs)}
	}
	if p.LastTest != nil {
		out.LastTest = &testResultJSON{OK: p.LastTest.OK, Message: p.LastTest.Message, TestedAt: p.LastTest.At}
	}
	return out
}

type certificateRequest struct {
	Host          string            `json:"host"`
	Port          int               `json:"port"`
	HostOverrides map[string]string `json:"host_overrides"`
}

type certificateJSON struct {
	Subject           string    `json:"subject"`
	Issuer            string    `json:"issuer"`
	SANs              []string  `json:"sans"`
	NotBefore         time.Time `json:"not_before"`
	NotAfter          time.Time `json:"not_after"`
	SHA256Fingerprint string    `json:"sha256_fingerprint"`
	PEM               string    `json:"pem"`
}

type lookupRequest struct {
	Username string  `json:"username"`
	Password *string `json:"password"`
}

func (req *lookupRequest) validate() error {
	return requireFields(map[string]string{"username": req.Username})
}

type lookupJSON struct {
	Found      bool                `json:"found"`
	DN         string              `json:"dn"`
	Attributes map[string][]string `json:"attributes"`
	Groups     []string            `json:"groups"`
	Role       string              `json:"role"`
	SiteIDs    []int64             `json:"site_ids"`
	PasswordOK *bool               `json:"password_ok"`
}

type syncJSON struct {
	Checked  int      `json:"checked"`
	Disabled []string `json:"disabled"`
}

type directorySiteJSON struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
	Slug string `json:"slug"`
}

type directoryCacheRequest struct {
	Enabled *bool `json:"enabled"`
}

func (req *directoryCacheRequest) validate() error {
	if req.Enabled == nil {
		return cairn.Invalid("enabled", "is required (true or false)")
	}
	return nil
}

type directoryCacheJSON struct {
	Username string `json:"username"`
	Enabled  bool   `json:"enabled"`
}

func orEmptyMap(m map[string][]string) map[string][]string {
	if m == nil {
		return map[string][]string{}
	}
	return m
}

func orEmptyList(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

func orEmptyIDs(l []int64) []int64 {
	if l == nil {
		return []int64{}
	}
	return l
}

type providerListJSON struct {
	Providers []providerJSON `json:"providers"`
}

type directorySiteListJSON struct {
	Sites []directorySiteJSON `json:"sites"`
}
