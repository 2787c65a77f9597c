package api

import (
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/credentials"
)

// CredentialsArea are the routes of Credentials, over the services only they use.
type CredentialsArea struct {
	// Credentials are the stored remote-session credentials.
	Credentials *credentials.Service
}

type credentialsAPI struct {
	*Server
	CredentialsArea
}

func (d CredentialsArea) routes(s *Server) []Route {
	a := &credentialsAPI{Server: s, CredentialsArea: d}
	return slices.Concat(a.credentialRoutes())
}

func (s *credentialsAPI) credentialRoutes() []Route {
	return []Route{
		{"GET", "/api/credentials", AuthToken, getAction(s.Server, func(r *http.Request) (credentialListJSON, error) {
			var siteID *int64
			if raw := r.URL.Query().Get("site_id"); raw != "" {
				id, err := strconv.ParseInt(raw, 10, 64)
				if err != nil || id <= 0 {
					return credentialListJSON{}, cairn.Invalid("site_id", "must be a positive site ID")
				}
				siteID = &id
			}
			list, err := s.Credentials.List(r.Context(), credentialScope(r), siteID)
			out := make([]credentialJSON, len(list))
			for i, c := range list {
				out[i] = toCredentialJSON(c)
			}
			return credentialListJSON{Credentials: out}, err
		}).Query(queryInteger("site_id", "only this site's credentials")), "List credentials"},
		{"GET", "/api/credentials/{credential_id}", AuthToken, getAction(s.Server, func(r *http.Request) (credentialJSON, error) {
			id, err := credentialID(r)
			if err != nil {
				return credentialJSON{}, err
			}
			c, err := s.Credentials.Get(r.Context(), credentialScope(r), id)
			return toCredentialJSON(c), err
		}).Errors(cairn.ECodeNotFound), "Get a credential"},
		{"POST", "/api/credentials", AuthAdmin, jsonAction(s.Server, http.StatusCreated, false, func(r *http.Request, req credentialRequest) (credentialJSON, error) {
			c, err := s.Credentials.Create(r.Context(), req.input())
			return toCredentialJSON(c), err
		}).Errors(cairn.ECodeConflict), "Create a credential"},
		{"PUT", "/api/credentials/{credential_id}", AuthAdmin, jsonAction(s.Server, http.StatusOK, false, func(r *http.Request, req credentialRequest) (credentialJSON, error) {
			id, err := credentialID(r)
			if err != nil {
				return credentialJSON{}, err
			}
			c, err := s.Credentials.Update(r.Context(), id, req.input())
			return toCredentialJSON(c), err
		}).Errors(cairn.ECodeNotFound, cairn.ECodeConflict), "Update a credential"},
		{"DELETE", "/api/credentials/{credential_id}", AuthAdmin, getAction(s.Server, func(r *http.Request) (deletedIDJSON, error) {
			id, err := credentialID(r)
			if err != nil {
				return deletedIDJSON{}, err
			}
			return deletedIDJSON{Deleted: id}, s.Credentials.Delete(r.Context(), id)
		}).Errors(cairn.ECodeNotFound, cairn.ECodeConflict), "Delete a credential"},
	}
}

func credentialScope(r *http.Request) credentials.Scope {
	p := principal(r.Context())
	return credentials.Scope{UserID: p.UserID, AllSites: p.IsAdmin()}
}

func credentialID(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(chi.URLParam(r, "credential_id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, cairn.Invalid("credential_id", "must be a positive integer")
	}
	return id, nil
}

// credentialJSON never carries the password: has_password and
// secret_status say what an operator needs to know about it.
type credentialJSON struct {
	CredentialID   int64         `json:"credential_id"`
	Name           string        `json:"name"`
	ConnectionType string        `json:"connection_type" openapi:"enum=Windows|WinRM"`
	CredentialType string        `json:"credential_type" openapi:"enum=Machine|Domain"`
	Username       string        `json:"username"`
	Domain         *string       `json:"domain"`
	SiteID         *cairn.SiteID `json:"site_id"`
	HasPassword    bool          `json:"has_password"`
	SecretStatus   string        `json:"secret_status"`
	CreatedAt      time.Time     `json:"created_at"`
	UpdatedAt      time.Time     `json:"updated_at"`
}

func toCredentialJSON(c credentials.Credential) credentialJSON {
	var domain *string
	if c.Domain != "" {
		domain = &c.Domain
	}
	return credentialJSON{CredentialID: c.ID, Name: c.Name, ConnectionType: c.ConnectionType, CredentialType: c.CredentialType,
		Username: c.Username, Domain: domain, SiteID: c.SiteID, HasPassword: c.HasPassword, SecretStatus: c.SecretStatus,
		CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
}

// credentialRequest is the body of create and update; a missing or null
// password on update keeps the stored one.
type credentialRequest struct {
	Name           string        `json:"name" limit:"max=100"`
	ConnectionType string        `json:"connection_type"`
	CredentialType string        `json:"credential_type"`
	Username       string        `json:"username" limit:"max=256"`
	Domain         *string       `json:"domain" limit:"max=255"`
	Password       *string       `json:"password" limit:"max=256"`
	SiteID         *cairn.SiteID `json:"site_id"`
}

func (req credentialRequest) input() credentials.Input {
	in := credentials.Input{Name: req.Name, ConnectionType: req.ConnectionType, CredentialType: req.CredentialType,
		Username: req.Username, Password: req.Password, SiteID: req.SiteID}
	if req.Domain != nil {
		in.Domain = *req.Domain
	}
	return in
}

type credentialListJSON struct {
	Credentials []credentialJSON `json:"credentials"`
}

// deletedIDJSON answers a DELETE that names what it removed.
type deletedIDJSON struct {
	// Deleted is the removed entity's ID.
	Deleted int64 `json:"deleted"`
}
