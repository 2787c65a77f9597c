package api

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/auth"
)

// reauthRequest is the proof of identity that sensitive actions (cipher
// rotation and forced reset, passkey registration) carry in their body:
// the password and a TOTP code, or an assertion of a passkey ceremony
// started at POST /api/auth/reauth/passkey/options. A stolen session
// cookie or token alone is not enough for them.
type reauthRequest struct {
	Password string            `json:"password"`
	TOTPCode string            `json:"totp_code"`
	Passkey  *passkeyAssertion `json:"passkey"`
}

type passkeyAssertion struct {
	CeremonyID string          `json:"ceremony_id"`
	Credential json.RawMessage `json:"credential" openapi:"types=object|null"`
}

// reauthErrors are what reauthenticate may answer: the proof refused or
// missing, the budget of tries spent, the account gone, the directory
// that checks the password out of reach, passkeys not set up here.
var reauthErrors = []string{auth.ECodeReauthRequired, cairn.ECodeRateLimited, cairn.ECodeNotFound,
	cairn.ECodeUnavailable, cairn.ECodePasskeysUnavailable, cairn.ECodeValidation}

// reauthenticate checks the proof; anything missing or wrong answers 403
// reauthentication_required.
// An API token never passes: these actions need the operator at a
// console, not whatever holds their token.
func (s *Server) reauthenticate(r *http.Request, req reauthRequest) error {
	p := principal(r.Context())
	if p.APITokenID != 0 {
		return errSessionOnly
	}
	if req.Passkey != nil {
		return s.Passkeys.Reauthenticate(r.Context(), p, req.Passkey.CeremonyID, req.Passkey.Credential)
	}
	return s.Auth.Reauthenticate(r.Context(), p, req.Password, req.TOTPCode)
}

// sudo guards account and directory administration (issue 21 item 5):
// a signed-in session only, whose operator proved who they are at
// POST /api/auth/reauth within auth.ReauthWindow. An administrator's API
// token, or a session cookie taken from a browser, cannot mint accounts,
// reset credentials or repoint sign-in at another directory.
func (s *Server) sudo(e Endpoint) Endpoint {
	inner := e.serve
	e.serve = func(w http.ResponseWriter, r *http.Request) {
		if err := s.Auth.RequireRecentReauth(r.Context(), principal(r.Context())); err != nil {
			writeError(w, r, s.Log, err)
			return
		}
		inner(w, r)
	}
	return s.sessionOnly(e).Errors(auth.ECodeReauthRequired)
}

// reauthResponse says until when the session may administer accounts and
// directories without another proof.
type reauthResponse struct {
	ReauthenticatedUntil time.Time `json:"reauthenticated_until"`
}

// reauthRoute opens the session's re-authentication window.
func (s *Server) reauthRoute() Route {
	return Route{"POST", "/api/auth/reauth", AuthToken, s.sessionOnly(jsonAction(s, http.StatusOK, false, func(r *http.Request, req reauthRequest) (reauthResponse, error) {
		if err := s.reauthenticate(r, req); err != nil {
			return reauthResponse{}, err
		}
		until, err := s.Auth.MarkReauthenticated(r.Context(), principal(r.Context()))
		return reauthResponse{ReauthenticatedUntil: until.UTC()}, err
	})).Errors(reauthErrors...), "Re-authenticate the session"}
}
