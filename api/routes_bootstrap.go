package api

import (
	"net/http"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/auth"
	"github.com/cairn-rmm/cairn/internal/events"
)

func (s *Server) bootstrapRoutes() []Route {
	return []Route{
		{"GET", "/api/bootstrap/state", AuthBootstrap, getAction(s, func(r *http.Request) (phaseResponse, error) {
			phase, err := s.Auth.Phase(r.Context())
			return phaseResponse{phase}, err
		}), "Get the bootstrap phase"},
		{"POST", "/api/bootstrap/aegis/setup", AuthBootstrap, jsonAction(s, http.StatusOK, false, func(r *http.Request, req aegisSetupRequest) (phaseResponse, error) {
			phase, err := s.Auth.BootstrapAegisSetup(r.Context(), req.Passphrase, req.SetupCode)
			if err == nil && phase != auth.PhaseAdminSetup {
				s.setupFinished(r)
			}
			return phaseResponse{phase}, err
		}).Errors(cairn.ECodeWrongPhase, auth.ECodeSetupCodeRequired, cairn.ECodeAegisConfigured), "Bootstrap: set up the Aegis cipher"},
		{"POST", "/api/bootstrap/aegis/unlock", AuthBootstrap, jsonAction(s, http.StatusOK, false, func(r *http.Request, req passphraseRequest) (phaseResponse, error) {
			phase, err := s.Auth.BootstrapAegisUnlock(r.Context(), req.Passphrase, s.clientMeta(r))
			return phaseResponse{phase}, err
		}).Errors(passphraseErrors...), "Bootstrap: unlock the Aegis cipher"},
		{"POST", "/api/bootstrap/admin/setup", AuthBootstrap, jsonAction(s, http.StatusOK, false, func(r *http.Request, req adminSetupRequest) (enrollmentResponse, error) {
			e, err := s.Auth.BootstrapAdminSetup(r.Context(), req.Username, req.Password, req.SetupCode)
			return enrollmentJSON(e), err
		}).Errors(cairn.ECodeWrongPhase, auth.ECodeSetupCodeRequired), "Bootstrap: create the first administrator"},
		{"POST", "/api/bootstrap/admin/recover", AuthBootstrap, jsonAction(s, http.StatusOK, false, func(r *http.Request, req adminRecoverRequest) (enrollmentResponse, error) {
			e, err := s.Auth.BootstrapAdminRecover(r.Context(), req.Username, req.Password, req.RecoveryCode, s.clientMeta(r))
			return enrollmentJSON(e), err
		}).Errors(cairn.ECodeWrongPhase, cairn.ECodeRateLimited), "Bootstrap: recover the administrator"},
		{"POST", "/api/bootstrap/admin/mfa/verify", AuthBootstrap, jsonAction(s, http.StatusOK, false, func(r *http.Request, req mfaVerifyRequest) (phaseResponse, error) {
			phase, err := s.Auth.BootstrapVerifyMFA(r.Context(), req.PendingToken, req.Code)
			if err == nil && phase == auth.PhaseLogin {
				s.setupFinished(r)
			}
			return phaseResponse{phase}, err
		}).Errors(cairn.ECodeWrongPhase, cairn.ECodeInvalidPending, cairn.ECodeInvalidMFACode, cairn.ECodeRateLimited), "Bootstrap: verify the administrator's MFA"},
	}
}

// setupFinished tells every replica that first-run setup ended, so each
// `cairn serve` removes the setup code it printed.
func (s *Server) setupFinished(r *http.Request) {
	if err := s.Bus.Signal(r.Context(), events.ControlSetup); err != nil {
		s.reqLog(r).Error("tell replicas setup finished", "err", err)
	}
}

type phaseResponse struct {
	// Phase is one of SPEC "Bootstrap"'s phases (auth.Phase*).
	Phase string `json:"phase" openapi:"enum=aegis_setup_required|aegis_unlock_required|admin_setup_required|admin_recovery_required|login_required"`
}

type passphraseRequest struct {
	Passphrase string `json:"passphrase"`
}

func (req *passphraseRequest) validate() error {
	return requireFields(map[string]string{"passphrase": req.Passphrase})
}

// aegisSetupRequest is validated by the service, after the setup code:
// callers without the code learn nothing else.
type aegisSetupRequest struct {
	Passphrase string `json:"passphrase" limit:"max=1024"`
	SetupCode  string `json:"setup_code"`
}

type adminSetupRequest struct {
	Username  string `json:"username"`
	Password  string `json:"password"`
	SetupCode string `json:"setup_code"`
}

type adminRecoverRequest struct {
	Username     string `json:"username"`
	Password     string `json:"password"`
	RecoveryCode string `json:"recovery_code"`
}

type mfaVerifyRequest struct {
	PendingToken string `json:"pending_token"`
	Code         string `json:"code"`
}

func (req *mfaVerifyRequest) validate() error {
	return requireFields(map[string]string{"pending_token": req.PendingToken, "code": req.Code})
}

type mfaSetupJSON struct {
	Secret     string `json:"secret"`
	OTPAuthURL string `json:"otpauth_url"`
}

type enrollmentResponse struct {
	Phase        string       `json:"phase"`
	PendingToken string       `json:"pending_token"`
	MFA          mfaSetupJSON `json:"mfa"`
}

func enrollmentJSON(e auth.Enrollment) enrollmentResponse {
	return enrollmentResponse{Phase: e.Phase, PendingToken: e.PendingToken,
		MFA: mfaSetupJSON{Secret: e.MFA.Secret, OTPAuthURL: e.MFA.OTPAuthURL}}
}
