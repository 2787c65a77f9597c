package api

import (
	"net/http"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/auth"
)

// errSessionOnly refuses an API token on the routes that manage how the
// operator signs in (password, MFA, passkeys, sign-out) or that need a
// fresh proof of identity: a leaked token must not take over the account.
var errSessionOnly = cairn.Errorf(cairn.ECodeForbidden, "this action needs a signed-in session, not an API token")

// sessionOnly refuses requests made with an API token.
func (s *Server) sessionOnly(e Endpoint) Endpoint {
	inner := e.serve
	e.serve = func(w http.ResponseWriter, r *http.Request) {
		if p := principal(r.Context()); p != nil && p.APITokenID != 0 {
			writeError(w, r, s.Log, errSessionOnly)
			return
		}
		inner(w, r)
	}
	return e
}

// apiTokenRoutes: personal API tokens (docs/api.md "API tokens"). Creating
// one needs a session (auth.Service.CreateAPIToken); listing and revoking
// work with a token too (a read token cannot revoke: DELETE changes state).
// ?username= lets an administrator manage another operator's tokens.
func (s *Server) apiTokenRoutes() []Route {
	return []Route{
		{"POST", "/api/auth/tokens", AuthToken, jsonAction(s, http.StatusCreated, false, func(r *http.Request, req apiTokenCreateRequest) (apiTokenCreatedJSON, error) {
			t, err := s.Auth.CreateAPIToken(r.Context(), principal(r.Context()), auth.APITokenRequest{Username: req.Username,
				Name: req.Name, ExpiresInDays: req.ExpiresInDays, Access: req.Access, Scopes: req.Scopes})
			if err != nil {
				return apiTokenCreatedJSON{}, err
			}
			return apiTokenCreatedJSON{ID: t.ID, Token: t.Token, Name: t.Name, Access: t.Access, Scopes: t.Scopes, Username: t.Username,
				CreatedAt: t.CreatedAt.UTC(), ExpiresAt: t.ExpiresAt.UTC()}, nil
		}), "Create an API token"},
		{"GET", "/api/auth/tokens", AuthToken, getAction(s, func(r *http.Request) (apiTokenListJSON, error) {
			list, err := s.Auth.ListAPITokens(r.Context(), principal(r.Context()), r.URL.Query().Get("username"))
			if err != nil {
				return apiTokenListJSON{}, err
			}
			out := apiTokenListJSON{Tokens: make([]apiTokenJSON, len(list))}
			for i, t := range list {
				out.Tokens[i] = apiTokenJSON{ID: t.ID, Name: t.Name, Access: t.Access, Scopes: t.Scopes, Username: t.Username, CreatedBy: t.CreatedBy,
					CreatedAt: t.CreatedAt.UTC(), ExpiresAt: t.ExpiresAt.UTC(), LastUsedAt: t.LastUsedAt, Expired: t.Expired}
			}
			return out, nil
		}).Query(queryString("username", "an administrator lists another operator's tokens")).Errors(cairn.ECodeNotFound), "List API tokens"},
		{"DELETE", "/api/auth/tokens/{id}", AuthToken, jsonAction(s, http.StatusNoContent, true, func(r *http.Request, _ struct{}) (struct{}, error) {
			id, err := pathID(r, "id")
			if err != nil {
				return struct{}{}, err
			}
			return struct{}{}, s.Auth.RevokeAPIToken(r.Context(), principal(r.Context()), r.URL.Query().Get("username"), id)
		}).Query(queryString("username", "an administrator revokes another operator's token")).Errors(cairn.ECodeNotFound), "Revoke an API token"},
	}
}

// apiTokenCreateRequest asks for a token: expires_in_days from 1 to 365,
// access read or write; scopes (read tokens only) adds read:device-content;
// username (administrators only) makes it for another operator, e.g. a
// service account.
type apiTokenCreateRequest struct {
	Name          string   `json:"name" limit:"max=100"`
	ExpiresInDays int      `json:"expires_in_days"`
	Access        string   `json:"access" openapi:"enum=read|write"`
	Scopes        []string `json:"scopes,omitempty" openapi:"enum=read:device-content"`
	Username      string   `json:"username,omitempty"`
}

// apiTokenCreatedJSON is the one answer that carries the token's text.
type apiTokenCreatedJSON struct {
	ID        int64     `json:"id"`
	Token     string    `json:"token"`
	Name      string    `json:"name"`
	Access    string    `json:"access" openapi:"enum=read|write"`
	Scopes    []string  `json:"scopes" openapi:"enum=read:device-content"`
	Username  string    `json:"username"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

type apiTokenJSON struct {
	ID         int64      `json:"id"`
	Name       string     `json:"name"`
	Access     string     `json:"access" openapi:"enum=read|write"`
	Scopes     []string   `json:"scopes" openapi:"enum=read:device-content"`
	Username   string     `json:"username"`
	CreatedBy  string     `json:"created_by"`
	CreatedAt  time.Time  `json:"created_at"`
	ExpiresAt  time.Time  `json:"expires_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	Expired    bool       `json:"expired"`
}

type apiTokenListJSON struct {
	Tokens []apiTokenJSON `json:"tokens"`
}
