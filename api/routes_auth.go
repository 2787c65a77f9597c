package api

import (
	"net/http"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/auth"
)

// authRoutes: what changes how the operator signs in answers only to a
// session (sessionOnly), never to an API token.
func (s *Server) authRoutes() []Route {
	return []Route{
		// conflict: a directory's stored service-account password is
		// unreadable after a cipher reset, until an administrator enters it.
		{"POST", "/api/auth/login", AuthNone, raw(s.login).In(loginRequest{}, false).Out(http.StatusOK, loginResponse{}).
			Errors(append(signInErrors, cairn.ECodeInvalidCredentials, cairn.ECodeUnavailable, cairn.ECodeConflict)...), "Sign in with a password"},
		{"POST", "/api/auth/mfa/verify", AuthMFAPending, raw(s.mfaVerify).In(mfaVerifyRequest{}, false).Out(http.StatusOK, sessionResponse{}).
			Errors(append(signInErrors, cairn.ECodeInvalidPending, cairn.ECodeInvalidMFACode)...), "Verify the MFA code of a sign-in"},
		{"POST", "/api/auth/logout", AuthToken, s.sessionOnly(raw(s.logout).In(logoutRequest{}, true).Out(http.StatusNoContent, nil)), "Sign out"},
		// A reset also revokes every API token of the account; the answer
		// says how many (tokensRevokedJSON).
		{"POST", "/api/auth/password/reset", AuthToken, s.sessionOnly(jsonAction(s, http.StatusOK, false, func(r *http.Request, req passwordResetRequest) (tokensRevokedJSON, error) {
			n, err := s.Auth.ChangePassword(r.Context(), principal(r.Context()), req.CurrentPassword, req.NewPassword)
			return tokensRevokedJSON{n}, err
		})).Errors(cairn.ECodeNotFound, cairn.ECodeRateLimited), "Change the password"},
		{"POST", "/api/auth/mfa/reset", AuthToken, s.sessionOnly(jsonAction(s, http.StatusOK, false, func(r *http.Request, req mfaResetRequest) (tokensRevokedJSON, error) {
			n, err := s.Auth.ResetOwnMFA(r.Context(), principal(r.Context()), req.Password)
			return tokensRevokedJSON{n}, err
		})).Errors(cairn.ECodeNotFound, cairn.ECodeRateLimited), "Reset the MFA authenticator"},
		s.reauthRoute(),
		{"GET", "/api/auth/me", AuthToken, getAction(s, func(r *http.Request) (userJSON, error) {
			a, err := s.Auth.Me(r.Context(), principal(r.Context()))
			return accountJSON(a), err
		}), "Get the signed-in account"},
	}
}

// signInErrors are what every sign-in step may answer: setup unfinished
// or the cipher locked (auth.Service.requireLoginPhase), the budget of
// failures spent, the account disabled in its directory or to be
// recovered, the database too busy.
var signInErrors = []string{cairn.ECodeBootstrapRequired, cairn.ECodeAegisLocked, cairn.ECodeRateLimited,
	cairn.ECodeForbidden, cairn.ECodeRecoveryRequired, db.ECodeServiceUnavailable}

type userJSON struct {
	Username         string    `json:"username"`
	Role             string    `json:"role"`
	AuthSource       string    `json:"auth_source"`
	MFAEnabled       bool      `json:"mfa_enabled"`
	MFAConfigured    bool      `json:"mfa_configured"`
	PasskeyCount     int       `json:"passkey_count"`
	RecoveryRequired bool      `json:"recovery_required"`
	CreatedAt        time.Time `json:"created_at"`
}

func accountJSON(a auth.Account) userJSON {
	return userJSON{Username: a.Username, Role: a.Role, AuthSource: a.AuthSource, MFAEnabled: a.MFAEnabled,
		MFAConfigured: a.MFAConfigured, PasskeyCount: a.PasskeyCount, RecoveryRequired: a.RecoveryRequired, CreatedAt: a.CreatedAt}
}

type loginRequest struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

func (req *loginRequest) validate() error {
	return requireFields(map[string]string{"username": req.Username, "password": req.Password})
}

type loginResponse struct {
	MFARequired  bool          `json:"mfa_required"`
	PendingToken string        `json:"pending_token,omitempty"`
	MFASetup     *mfaSetupJSON `json:"mfa_setup"`
	*sessionResponse
}

type sessionResponse struct {
	Token     string   `json:"token,omitempty"`
	CSRFToken string   `json:"csrf_token"`
	User      userJSON `json:"user"`
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	var req loginRequest
	if err := decodeValid(w, r, &req); err != nil {
		writeError(w, r, s.Log, err)
		return
	}
	if e := auditFrom(r); e != nil {
		e.Username = auth.NormalizeUsername(req.Username)
	}
	res, err := s.Auth.Login(r.Context(), req.Username, req.Password, s.clientMeta(r))
	if err != nil {
		writeError(w, r, s.Log, err)
		return
	}
	out := loginResponse{MFARequired: res.MFARequired, PendingToken: res.PendingToken}
	if res.MFASetup != nil {
		out.MFASetup = &mfaSetupJSON{Secret: res.MFASetup.Secret, OTPAuthURL: res.MFASetup.OTPAuthURL}
	}
	if res.Session != nil {
		out.sessionResponse = s.startSession(w, r, *res.Session)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) mfaVerify(w http.ResponseWriter, r *http.Request) {
	var req mfaVerifyRequest
	if err := decodeValid(w, r, &req); err != nil {
		writeError(w, r, s.Log, err)
		return
	}
	sess, err := s.Auth.VerifyMFA(r.Context(), req.PendingToken, req.Code, s.clientMeta(r))
	if err != nil {
		writeError(w, r, s.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, s.startSession(w, r, sess))
}

// startSession sets the session cookie (HttpOnly) and the CSRF cookie
// (readable by the console, which echoes it in X-CSRF-Token), Secure and
// __Host- prefixed on HTTPS origins. A browser gets the session in the
// cookie only: the token stays out of the body, where any script on the
// page could read it; API clients keep it as their bearer token.
func (s *Server) startSession(w http.ResponseWriter, r *http.Request, sess auth.Session) *sessionResponse {
	secure := s.secureOrigin(r)
	http.SetCookie(w, &http.Cookie{Name: cookieName(cookieSession, secure), Value: sess.Token, Path: "/", Expires: sess.Expires,
		HttpOnly: true, Secure: secure, SameSite: http.SameSiteStrictMode})
	http.SetCookie(w, &http.Cookie{Name: cookieName(cookieCSRF, secure), Value: sess.CSRF, Path: "/", Expires: sess.Expires,
		Secure: secure, SameSite: http.SameSiteStrictMode})
	out := &sessionResponse{Token: sess.Token, CSRFToken: sess.CSRF, User: accountJSON(sess.User)}
	if fromBrowser(r) {
		out.Token = ""
	}
	return out
}

// fromBrowser reports a request a browser made: browsers add Sec-Fetch-*
// (and Origin on POST) themselves, and no script can remove them; API
// clients and the CLI send neither.
func fromBrowser(r *http.Request) bool {
	h := r.Header
	return h.Get("Sec-Fetch-Site") != "" || h.Get("Sec-Fetch-Mode") != "" || h.Get("Origin") != ""
}

type logoutRequest struct {
	All bool `json:"all"`
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	var req logoutRequest
	if err := decodeJSON(w, r, &req, true); err != nil {
		writeError(w, r, s.Log, err)
		return
	}
	if err := s.Auth.Logout(r.Context(), principal(r.Context()), req.All); err != nil {
		writeError(w, r, s.Log, err)
		return
	}
	secure := s.secureOrigin(r)
	for _, name := range []string{cookieSession, cookieCSRF} {
		http.SetCookie(w, &http.Cookie{Name: cookieName(name, secure), Value: "", Path: "/", MaxAge: -1, HttpOnly: name == cookieSession,
			Secure: secure, SameSite: http.SameSiteStrictMode})
	}
	w.WriteHeader(http.StatusNoContent)
}

type passwordResetRequest struct {
	CurrentPassword string `json:"current_password"`
	NewPassword     string `json:"new_password" limit:"max=256"`
}

func (req *passwordResetRequest) validate() error {
	if err := requireFields(map[string]string{"current_password": req.CurrentPassword}); err != nil {
		return err
	}
	return auth.CheckPassword("new_password", req.NewPassword)
}

type mfaResetRequest struct {
	Password string `json:"password"`
}

func (req *mfaResetRequest) validate() error {
	return requireFields(map[string]string{"password": req.Password})
}
