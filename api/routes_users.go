package api

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/auth"
)

func (s *Server) userRoutes() []Route {
	return []Route{
		{"GET", "/api/users", AuthAdmin, getAction(s, func(r *http.Request) (accountListJSON, error) {
			list, err := s.Auth.ListAccounts(r.Context())
			out := make([]accountEntryJSON, len(list))
			for i, a := range list {
				out[i] = accountEntryOf(a)
			}
			return accountListJSON{Users: out}, err
		}), "List users"},
		// Every change below is sudo: a session that re-authenticated
		// recently, never an API token (issue 21 item 5).
		{"POST", "/api/users", AuthAdmin, s.sudo(jsonAction(s, http.StatusCreated, false, func(r *http.Request, req userCreateRequest) (accountEntryJSON, error) {
			if _, err := s.Auth.CreateLocalUser(r.Context(), req.Username, req.Password, req.Role); err != nil {
				return accountEntryJSON{}, err
			}
			a, err := s.Auth.Account(r.Context(), req.Username)
			return accountEntryOf(a), err
		})).Errors(cairn.ECodeConflict), "Create a user"},
		{"DELETE", "/api/users/{username}", AuthAdmin, s.sudo(raw(func(w http.ResponseWriter, r *http.Request) {
			if err := s.Auth.DeleteAccount(r.Context(), chi.URLParam(r, "username")); err != nil {
				writeError(w, r, s.Log, err)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		}).Out(http.StatusNoContent, nil)).Errors(cairn.ECodeNotFound, cairn.ECodeLastAdmin), "Delete a user"},
		{"POST", "/api/users/{username}/reset_password", AuthAdmin, s.sudo(jsonAction(s, http.StatusOK, false, func(r *http.Request, req adminPasswordRequest) (tokensRevokedJSON, error) {
			n, err := s.Auth.ResetPassword(r.Context(), chi.URLParam(r, "username"), req.Password)
			return tokensRevokedJSON{n}, err
		})).Errors(cairn.ECodeNotFound), "Reset a user's password"},
		{"POST", "/api/users/{username}/role", AuthAdmin, s.sudo(jsonAction(s, http.StatusOK, false, func(r *http.Request, req roleRequest) (accountEntryJSON, error) {
			a, err := s.Auth.SetRole(r.Context(), chi.URLParam(r, "username"), req.Role)
			return accountEntryOf(a), err
		})).Errors(cairn.ECodeNotFound, cairn.ECodeLastAdmin), "Change a user's role"},
		{"POST", "/api/users/{username}/mfa", AuthAdmin, s.sudo(jsonAction(s, http.StatusOK, false, func(r *http.Request, req mfaActionRequest) (mfaResultJSON, error) {
			a, n, err := s.Auth.SetMFA(r.Context(), chi.URLParam(r, "username"), req.Action)
			return mfaResultJSON{accountEntryOf(a), n}, err
		})).Errors(cairn.ECodeNotFound), "Reset or require a user's MFA"},
		{"POST", "/api/user_site_assignments/selection", AuthAdmin, jsonAction(s, http.StatusOK, false, func(r *http.Request, req assignmentSelectionRequest) (assignmentsResponse, error) {
			m, err := s.Auth.SiteAssignments(r.Context(), req.Usernames)
			return assignmentsResponse{m}, err
		}), "Get users' site assignments"},
		{"POST", "/api/user_site_assignments/assign", AuthAdmin, s.sudo(jsonAction(s, http.StatusOK, false, func(r *http.Request, req assignRequest) (assignmentsResponse, error) {
			m, err := s.Auth.AssignSites(r.Context(), req.Usernames, req.SiteIDs)
			return assignmentsResponse{m}, err
		})).Errors(cairn.ECodeNotFound), "Assign users to sites"},
	}
}

type accountEntryJSON struct {
	userJSON
	SiteIDs     []int64    `json:"site_ids"`
	LastLoginAt *time.Time `json:"last_login_at"`
}

func accountEntryOf(a auth.AccountEntry) accountEntryJSON {
	ids := a.SiteIDs
	if ids == nil {
		ids = []int64{}
	}
	return accountEntryJSON{userJSON: accountJSON(a.Account), SiteIDs: ids, LastLoginAt: a.LastLoginAt}
}

// tokensRevokedJSON answers a password or MFA reset: the reset revoked
// this many of the account's API tokens.
type tokensRevokedJSON struct {
	APITokensRevoked int64 `json:"api_tokens_revoked"`
}

// mfaResultJSON is the account after an MFA action; a reset revokes its
// API tokens (api_tokens_revoked, 0 for enable and disable).
type mfaResultJSON struct {
	accountEntryJSON
	APITokensRevoked int64 `json:"api_tokens_revoked"`
}

type userCreateRequest struct {
	Username string `json:"username"`
	Password string `json:"password" limit:"max=256"`
	Role     string `json:"role"`
}

type adminPasswordRequest struct {
	Password string `json:"password" limit:"max=256"`
}

func (req *adminPasswordRequest) validate() error {
	return auth.CheckPassword("password", req.Password)
}

type roleRequest struct {
	Role string `json:"role"`
}

func (req *roleRequest) validate() error { return requireFields(map[string]string{"role": req.Role}) }

type mfaActionRequest struct {
	Action string `json:"action"`
}

func (req *mfaActionRequest) validate() error {
	switch req.Action {
	case auth.MFAEnable, auth.MFADisable, auth.MFAReset:
		return nil
	}
	return cairn.Invalid("action", "must be enable, disable or reset")
}

type assignmentSelectionRequest struct {
	Usernames []string `json:"usernames"`
}

func (req *assignmentSelectionRequest) validate() error {
	if len(req.Usernames) == 0 {
		return cairn.Invalid("usernames", "must name at least one operator")
	}
	return nil
}

type assignRequest struct {
	Usernames []string `json:"usernames"`
	SiteIDs   []int64  `json:"site_ids"`
}

func (req *assignRequest) validate() error {
	var v cairn.Validation
	if len(req.Usernames) == 0 {
		v.Add("usernames", "must name at least one operator")
	}
	if req.SiteIDs == nil {
		v.Add("site_ids", "is required (an empty list removes every assignment)")
	}
	return v.Err()
}

type assignmentsResponse struct {
	Assignments map[string][]int64 `json:"assignments"`
}

type accountListJSON struct {
	Users []accountEntryJSON `json:"users"`
}
