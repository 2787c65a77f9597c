package api

import (
	"net/http"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/aegis"
	"github.com/cairn-rmm/cairn/internal/auth"
	"github.com/cairn-rmm/cairn/internal/events"
)

// forceResetPhrase must be typed to reset the master cipher.
const forceResetPhrase = "FORCE RESET"

// passphraseErrors are what a passphrase try may answer
// (auth.Service.passphraseBudget, aegis.Cipher): the budget spent, the
// passphrase wrong, no cipher configured, a rotation under way, the
// stored cipher parameters damaged.
var passphraseErrors = []string{cairn.ECodeRateLimited, cairn.ECodeInvalidPassphrase, cairn.ECodeWrongPhase,
	cairn.ECodeConflict, cairn.ECodeUnavailable}

func (s *Server) aegisRoutes() []Route {
	return []Route{
		{"GET", "/api/aegis/status", AuthToken, getAction(s, func(r *http.Request) (aegisStatusJSON, error) {
			return s.aegisStatus(r)
		}), "Get the Aegis cipher status"},
		{"POST", "/api/aegis/setup", AuthToken, jsonAction(s, http.StatusOK, false, func(r *http.Request, req passphraseRequest) (aegisStatusJSON, error) {
			// A signed-in operator always has a configured cipher, so this
			// answers aegis_already_configured; fresh deployments use the
			// bootstrap route.
			if err := s.Cipher.Setup(r.Context(), req.Passphrase); err != nil {
				return aegisStatusJSON{}, err
			}
			return s.aegisStatus(r)
		}).Errors(cairn.ECodeAegisConfigured), "Set up the Aegis cipher"},
		// Unlock, rotate and reset are for administrators, and each
		// passphrase try is budgeted (auth.Service.UnlockCipher): they are
		// passphrase oracles that cost the server an Argon2 derivation.
		{"POST", "/api/aegis/unlock", AuthToken, jsonAction(s, http.StatusOK, false, func(r *http.Request, req passphraseRequest) (aegisStatusJSON, error) {
			if err := s.Auth.UnlockCipher(r.Context(), principal(r.Context()), req.Passphrase, s.clientMeta(r)); err != nil {
				return aegisStatusJSON{}, err
			}
			return s.aegisStatus(r)
		}).Errors(passphraseErrors...), "Unlock the Aegis cipher"},
		{"POST", "/api/aegis/rotate", AuthToken, jsonAction(s, http.StatusOK, false, func(r *http.Request, req rotateRequest) (aegisStatusJSON, error) {
			if err := requireAdmin(r); err != nil {
				return aegisStatusJSON{}, err
			}
			if err := s.reauthenticate(r, req.reauthRequest); err != nil {
				return aegisStatusJSON{}, err
			}
			if err := s.Auth.RotateCipher(r.Context(), principal(r.Context()), req.CurrentPassphrase, req.NewPassphrase, s.clientMeta(r)); err != nil {
				return aegisStatusJSON{}, err
			}
			// The data key changed: replicas holding the old one lock.
			if err := s.Bus.Signal(r.Context(), events.ControlAegis); err != nil {
				s.reqLog(r).Error("tell replicas about the cipher rotation", "err", err)
			}
			return s.aegisStatus(r)
		}).Errors(append(passphraseErrors, reauthErrors...)...), "Rotate the Aegis passphrase"},
		{"POST", "/api/aegis/force_reset", AuthToken, jsonAction(s, http.StatusOK, false, func(r *http.Request, req forceResetRequest) (forceResetResponse, error) {
			if err := requireAdmin(r); err != nil {
				return forceResetResponse{}, err
			}
			if err := s.reauthenticate(r, req.reauthRequest); err != nil {
				return forceResetResponse{}, err
			}
			codes, err := s.Auth.ForceReset(r.Context(), principal(r.Context()))
			if err != nil {
				return forceResetResponse{}, err
			}
			if err := s.Bus.Signal(r.Context(), events.ControlAegis); err != nil {
				s.reqLog(r).Error("tell replicas about the cipher reset", "err", err)
			}
			return forceResetResponse{Phase: auth.PhaseAegisSetup, RecoveryCode: codes.Recovery, SetupCode: codes.Setup}, nil
		}).Errors(reauthErrors...), "Force-reset the Aegis cipher"},
	}
}

type aegisKDFJSON struct {
	Algorithm string `json:"algorithm"`
	Time      uint32 `json:"time"`
	MemoryKiB uint32 `json:"memory_kib"`
	Threads   uint8  `json:"threads"`
}

type aegisStatusJSON struct {
	Configured bool          `json:"configured"`
	Unlocked   bool          `json:"unlocked"`
	Algorithm  string        `json:"algorithm"`
	KDF        *aegisKDFJSON `json:"kdf"`
	CreatedAt  *time.Time    `json:"created_at"`
	RotatedAt  *time.Time    `json:"rotated_at"`
}

func (s *Server) aegisStatus(r *http.Request) (aegisStatusJSON, error) {
	st, err := s.Cipher.Status(r.Context())
	if err != nil {
		return aegisStatusJSON{}, err
	}
	out := aegisStatusJSON{Configured: st.Configured, Unlocked: st.Unlocked, Algorithm: "AES-256-GCM", CreatedAt: st.CreatedAt, RotatedAt: st.RotatedAt}
	if st.Configured {
		out.KDF = &aegisKDFJSON{Algorithm: "argon2id", Time: st.KDF.Time, MemoryKiB: st.KDF.MemoryKiB, Threads: st.KDF.Threads}
	}
	return out, nil
}

type rotateRequest struct {
	CurrentPassphrase string `json:"current_passphrase"`
	NewPassphrase     string `json:"new_passphrase" limit:"max=1024"`
	reauthRequest
}

func (req *rotateRequest) validate() error {
	if err := requireFields(map[string]string{"current_passphrase": req.CurrentPassphrase}); err != nil {
		return err
	}
	return aegis.CheckPassphrase("new_passphrase", req.NewPassphrase)
}

type forceResetRequest struct {
	Confirm string `json:"confirm"`
	reauthRequest
}

func (req *forceResetRequest) validate() error {
	if req.Confirm != forceResetPhrase {
		return cairn.Invalid("confirm", "type "+forceResetPhrase+" to confirm")
	}
	return nil
}

type forceResetResponse struct {
	Phase        string `json:"phase"`
	RecoveryCode string `json:"recovery_code"`
	// SetupCode lets the administrator who reset the cipher set up the
	// new one (the next phase needs a setup code).
	SetupCode string `json:"setup_code"`
}

func requireAdmin(r *http.Request) error {
	if p := principal(r.Context()); p == nil || !p.IsAdmin() {
		return cairn.Errorf(cairn.ECodeForbidden, "administrators only")
	}
	return nil
}
