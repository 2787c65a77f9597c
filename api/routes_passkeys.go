package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/auth"
	"github.com/cairn-rmm/cairn/internal/passkeys"
)

func (s *Server) passkeyRoutes() []Route {
	return []Route{
		// Registering a passkey adds a way in, so it needs a fresh proof
		// of identity; the ceremony it starts is bound to the operator.
		{"POST", "/api/auth/passkeys/register/options", AuthToken, s.sessionOnly(jsonAction(s, http.StatusOK, true, func(r *http.Request, req reauthRequest) (ceremonyJSON, error) {
			c, err := s.Passkeys.BeginRegistration(r.Context(), principal(r.Context()), func(context.Context) error {
				return s.reauthenticate(r, req)
			})
			return ceremonyJSON(c), err
		})).Errors(reauthErrors...), "Start a passkey registration"},
		{"POST", "/api/auth/passkeys/register/verify", AuthToken, s.sessionOnly(jsonAction(s, http.StatusCreated, false, func(r *http.Request, req passkeyRegisterRequest) (passkeyJSON, error) {
			pk, err := s.Passkeys.FinishRegistration(r.Context(), principal(r.Context()), req.CeremonyID, req.Label, req.Credential)
			return passkeyJSON(pk), err
		})).Errors(cairn.ECodePasskeysUnavailable, cairn.ECodeConflict), "Finish a passkey registration"},
		{"POST", "/api/auth/passkeys/authenticate/options", AuthNone, jsonAction(s, http.StatusOK, true, func(r *http.Request, _ struct{}) (ceremonyJSON, error) {
			c, err := s.Passkeys.BeginLogin(r.Context(), s.clientMeta(r))
			return ceremonyJSON(c), err
		}).Errors(cairn.ECodePasskeysUnavailable, cairn.ECodeRateLimited, db.ECodeServiceUnavailable), "Start a passkey sign-in"},
		{"POST", "/api/auth/passkeys/authenticate/verify", AuthNone, raw(s.passkeyLogin).In(passkeyLoginRequest{}, false).Out(http.StatusOK, sessionResponse{}).
			Errors(append(signInErrors, cairn.ECodePasskeysUnavailable, cairn.ECodeInvalidCredentials)...), "Sign in with a passkey"},
		{"POST", "/api/auth/reauth/passkey/options", AuthToken, s.sessionOnly(jsonAction(s, http.StatusOK, true, func(r *http.Request, _ struct{}) (ceremonyJSON, error) {
			c, err := s.Passkeys.BeginReauth(r.Context(), principal(r.Context()))
			return ceremonyJSON(c), err
		})).Errors(cairn.ECodePasskeysUnavailable, auth.ECodeReauthRequired), "Start a passkey re-authentication"},
		{"GET", "/api/auth/passkeys", AuthToken, getAction(s, func(r *http.Request) (passkeyListJSON, error) {
			list, err := s.Passkeys.List(r.Context(), principal(r.Context()))
			out := make([]passkeyJSON, len(list))
			for i, pk := range list {
				out[i] = passkeyJSON(pk)
			}
			return passkeyListJSON{Passkeys: out}, err
		}), "List passkeys"},
		{"PATCH", "/api/auth/passkeys/{passkey_id}", AuthToken, s.sessionOnly(raw(s.passkeyRename).In(passkeyRenameRequest{}, false).Out(http.StatusOK, passkeyJSON{})).Errors(cairn.ECodeNotFound), "Rename a passkey"},
		{"DELETE", "/api/auth/passkeys/{passkey_id}", AuthToken, s.sessionOnly(raw(s.passkeyDelete).Out(http.StatusNoContent, nil)).Errors(cairn.ECodeNotFound), "Delete a passkey"},
	}
}

type ceremonyJSON struct {
	ID      string `json:"ceremony_id"`
	Options any    `json:"options" openapi:"types=object"`
}

type passkeyJSON struct {
	ID         int64      `json:"id"`
	Label      string     `json:"label"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
}

type passkeyRegisterRequest struct {
	CeremonyID string          `json:"ceremony_id"`
	Label      string          `json:"label" limit:"max=64"`
	Credential json.RawMessage `json:"credential" openapi:"types=object"`
}

func (req *passkeyRegisterRequest) validate() error {
	var v cairn.Validation
	if req.CeremonyID == "" {
		v.Add("ceremony_id", "is required")
	}
	if err := passkeys.CheckLabel(req.Label); err != nil {
		v.Add("label", err.(*cairn.Error).Fields["label"])
	}
	if !isJSONObject(req.Credential) {
		v.Add("credential", "must be the PublicKeyCredential as a JSON object")
	}
	return v.Err()
}

type passkeyLoginRequest struct {
	CeremonyID string          `json:"ceremony_id"`
	Credential json.RawMessage `json:"credential" openapi:"types=object"`
}

func (req *passkeyLoginRequest) validate() error {
	var v cairn.Validation
	if req.CeremonyID == "" {
		v.Add("ceremony_id", "is required")
	}
	if !isJSONObject(req.Credential) {
		v.Add("credential", "must be the PublicKeyCredential as a JSON object")
	}
	return v.Err()
}

func isJSONObject(raw json.RawMessage) bool { return len(raw) > 0 && raw[0] == '{' }

type passkeyRenameRequest struct {
	Label string `json:"label" limit:"max=64"`
}

func (req *passkeyRenameRequest) validate() error { return passkeys.CheckLabel(req.Label) }

// passkeyLogin signs in with a passkey and sets the same cookies as the
// MFA step of a password login.
func (s *Server) passkeyLogin(w http.ResponseWriter, r *http.Request) {
	var req passkeyLoginRequest
	if err := decodeValid(w, r, &req); err != nil {
		writeError(w, r, s.Log, err)
		return
	}
	sess, err := s.Passkeys.FinishLogin(r.Context(), req.CeremonyID, req.Credential, s.clientMeta(r))
	if err != nil {
		writeError(w, r, s.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, s.startSession(w, r, sess))
}

func (s *Server) passkeyRename(w http.ResponseWriter, r *http.Request) {
	id, err := passkeyID(r)
	if err != nil {
		writeError(w, r, s.Log, err)
		return
	}
	jsonAction(s, http.StatusOK, false, func(r *http.Request, req passkeyRenameRequest) (passkeyJSON, error) {
		pk, err := s.Passkeys.Rename(r.Context(), principal(r.Context()), id, req.Label)
		return passkeyJSON(pk), err
	}).ServeHTTP(w, r)
}

func (s *Server) passkeyDelete(w http.ResponseWriter, r *http.Request) {
	id, err := passkeyID(r)
	if err != nil {
		writeError(w, r, s.Log, err)
		return
	}
	if err := s.Passkeys.Delete(r.Context(), principal(r.Context()), id); err != nil {
		writeError(w, r, s.Log, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func passkeyID(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(chi.URLParam(r, "passkey_id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, cairn.Invalid("passkey_id", "must be a positive integer")
	}
	return id, nil
}

type passkeyListJSON struct {
	Passkeys []passkeyJSON `json:"passkeys"`
}
