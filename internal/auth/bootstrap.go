package auth

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net/url"
	"time"

	"github.com/pquerna/otp"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/aegis"
	"github.com/cairn-rmm/cairn/internal/ratelimit"
)

// Bootstrap phases (SPEC "Bootstrap phases").
const (
	PhaseAegisSetup    = "aegis_setup_required"
	PhaseAegisUnlock   = "aegis_unlock_required"
	PhaseAdminSetup    = "admin_setup_required"
	PhaseAdminRecovery = "admin_recovery_required"
	PhaseLogin         = "login_required"
)

// UnlockPerAddress bounds passphrase and recovery-code guessing.
var UnlockPerAddress = ratelimit.Rule{Limit: 10, Window: 5 * time.Minute}

// Phase derives the bootstrap phase from the cipher and the accounts. The
// cipher's lock is per process: each replica is unlocked on its own.
func (s *Service) Phase(ctx context.Context) (string, error) {
	st, err := s.cipher.Status(ctx)
	if err != nil {
		return "", err
	}
	if !st.Configured {
		return PhaseAegisSetup, nil
	}
	if !st.Unlocked {
		return PhaseAegisUnlock, nil
	}
	c, err := s.store.UserCounts(ctx)
	if err != nil {
		return "", err
	}
	switch {
	case c.ReadyAdmins > 0:
		return PhaseLogin, nil
	case c.FlaggedAdmins > 0:
		return PhaseAdminRecovery, nil
	default:
		return PhaseAdminSetup, nil
	}
}

// inPhase fails with bootstrap_finished after bootstrap, or wrong_phase when
// the step belongs to another phase.
func (s *Service) inPhase(ctx context.Context, want ...string) (string, error) {
	phase, err := s.Phase(ctx)
	if err != nil {
		return "", err
	}
	if phase == PhaseLogin {
		return "", cairn.Errorf(cairn.ECodeBootstrapFinished, "setup is already finished")
	}
	for _, w := range want {
		if phase == w {
			return phase, nil
		}
	}
	return "", cairn.Errorf(cairn.ECodeWrongPhase, "this step is not part of the current phase (%s)", phase)
}

// BootstrapAegisSetup configures the master cipher of a fresh deployment
// (or of one whose cipher was force-reset); the caller must hold a setup
// code. After a forced reset setup ends here (the administrators recover
// with the recovery code), so the setup codes end too.
func (s *Service) BootstrapAegisSetup(ctx context.Context, passphrase, setupCode string) (string, error) {
	if _, err := s.inPhase(ctx, PhaseAegisSetup); err != nil {
		return "", err
	}
	if err := s.checkSetupCode(ctx, setupCode); err != nil {
		return "", err
	}
	if err := aegis.CheckPassphrase("passphrase", passphrase); err != nil {
		return "", err
	}
	if err := s.cipher.Setup(ctx, passphrase); err != nil {
		return "", err
	}
	phase, err := s.Phase(ctx)
	if err != nil {
		return "", err
	}
	if phase != PhaseAdminSetup {
		if err := spendSetupCodes(ctx, s.store.Queries); err != nil {
			return "", err
		}
	}
	return phase, nil
}

// BootstrapAegisUnlock unlocks this process's cipher after a restart.
func (s *Service) BootstrapAegisUnlock(ctx context.Context, passphrase string, meta ClientMeta) (string, error) {
	if _, err := s.inPhase(ctx, PhaseAegisUnlock); err != nil {
		return "", err
	}
	if err := s.limiter.Hit(ctx, "unlock:addr:"+meta.Addr, UnlockPerAddress); err != nil {
		return "", err
	}
	if err := s.cipher.Unlock(ctx, passphrase); err != nil {
		return "", err
	}
	return s.Phase(ctx)
}

// Enrollment is the answer of admin setup and recovery: the pending token
// for the MFA step and the new authenticator.
type Enrollment struct {
	Phase        string
	PendingToken string
	MFA          MFASetup
}

// BootstrapAdminSetup creates the first administrator. Until its MFA is
// verified it can be replaced by repeating this step, which needs the
// setup code like the first time.
func (s *Service) BootstrapAdminSetup(ctx context.Context, username, password, setupCode string) (Enrollment, error) {
	username = NormalizeUsername(username)
	phase, err := s.inPhase(ctx, PhaseAdminSetup)
	if err != nil {
		return Enrollment{}, err
	}
	if err := s.checkSetupCode(ctx, setupCode); err != nil {
		return Enrollment{}, err
	}
	if err := checkNewAccount(username, password, RoleAdmin); err != nil {
		return Enrollment{}, err
	}
	sealedPw, err := s.sealPassword(username, password)
	if err != nil {
		return Enrollment{}, err
	}
	setup, err := newTOTP(username)
	if err != nil {
		return Enrollment{}, err
	}
	sealedTOTP, err := s.cipher.Seal([]byte(setup.Secret), totpAAD(username))
	if err != nil {
		return Enrollment{}, err
	}
	var u db.User
	err = s.store.InTx(ctx, func(q *db.Queries) error {
		if err := q.UserDeleteUnconfirmedAdmins(ctx); err != nil {
			return err
		}
		u, err = q.UserInsert(ctx, db.UserInsertParams{Username: username, Role: RoleAdmin, PasswordSealed: sealedPw, TotpSealed: sealedTOTP, Activated: false})
		if db.IsUniqueViolation(err, "") {
			return cairn.Invalid("username", "is already taken")
		}
		return err
	})
	if err != nil {
		return Enrollment{}, err
	}
	tok, err := signPending(ctx, s.pendingKey, u.ID, purposeBootstrap, s.cfg.Now())
	return Enrollment{Phase: phase, PendingToken: tok, MFA: setup}, err
}

// BootstrapAdminRecover gives a flagged administrator a new password and
// authenticator after a forced cipher reset. The one-time recovery code
// proves the caller is the operator who reset the cipher (or has shell
// access to the server).
func (s *Service) BootstrapAdminRecover(ctx context.Context, username, password, code string, meta ClientMeta) (Enrollment, error) {
	username = NormalizeUsername(username)
	var v cairn.Validation
	if username == "" {
		v.Add("username", "is required")
	}
	if pr := PasswordProblem(password); pr != "" {
		v.Add("password", pr)
	}
	if code == "" {
		v.Add("recovery_code", "is required")
	}
	if err := v.Err(); err != nil {
		return Enrollment{}, err
	}
	phase, err := s.inPhase(ctx, PhaseAdminRecovery)
	if err != nil {
		return Enrollment{}, err
	}
	if err := s.limiter.Hit(ctx, "unlock:addr:"+meta.Addr, UnlockPerAddress); err != nil {
		return Enrollment{}, err
	}
	rec, err := s.store.AdminRecoveryGet(ctx)
	if err != nil && !db.IsNoRows(err) {
		return Enrollment{}, err
	}
	if db.IsNoRows(err) || subtle.ConstantTimeCompare(HashToken(code), rec.CodeHash) != 1 {
		return Enrollment{}, cairn.Invalid("recovery_code", "is not correct")
	}
	u, err := s.store.UserGetByUsername(ctx, username)
	if db.IsNoRows(err) || (err == nil && (u.Role != RoleAdmin || !u.RecoveryRequired)) {
		return Enrollment{}, cairn.Invalid("username", "is not an administrator awaiting recovery")
	} else if err != nil {
		return Enrollment{}, err
	}
	sealedPw, err := s.sealPassword(username, password)
	if err != nil {
		return Enrollment{}, err
	}
	setup, err := newTOTP(username)
	if err != nil {
		return Enrollment{}, err
	}
	sealedTOTP, err := s.cipher.Seal([]byte(setup.Secret), totpAAD(username))
	if err != nil {
		return Enrollment{}, err
	}
	// Recovery clears every earlier sign-in factor (SPEC Authentication
	// rule 2): the new password and authenticator, and no passkeys.
	err = s.store.InTx(ctx, func(q *db.Queries) error {
		if err := q.UserRecover(ctx, db.UserRecoverParams{ID: u.ID, PasswordSealed: sealedPw, TotpSealed: sealedTOTP}); err != nil {
			return err
		}
		return q.PasskeyDeleteByUser(ctx, u.ID)
	})
	if err != nil {
		return Enrollment{}, err
	}
	tok, err := signPending(ctx, s.pendingKey, u.ID, purposeBootstrap, s.cfg.Now())
	return Enrollment{Phase: phase, PendingToken: tok, MFA: setup}, err
}

// BootstrapVerifyMFA finishes admin setup or recovery with a TOTP code.
func (s *Service) BootstrapVerifyMFA(ctx context.Context, pendingToken, code string) (string, error) {
	phase, err := s.inPhase(ctx, PhaseAdminSetup, PhaseAdminRecovery)
	if err != nil {
		return "", err
	}
	p, u, err := s.pendingUser(ctx, pendingToken, purposeBootstrap)
	if err != nil {
		return "", err
	}
	err = s.store.InTx(ctx, func(q *db.Queries) error {
		if err := s.acceptCode(ctx, q, p, u, code); err != nil {
			return err
		}
		if phase == PhaseAdminRecovery {
			if err := q.UserFinishRecovery(ctx, u.ID); err != nil {
				return err
			}
			return q.AdminRecoveryDelete(ctx)
		}
		// The first administrator is ready: setup is finished.
		return spendSetupCodes(ctx, q)
	})
	if err != nil {
		return "", err
	}
	return s.Phase(ctx)
}

// ResetCodes are what a forced cipher reset hands its administrator: the
// recovery code for the accounts and a setup code for the new cipher.
type ResetCodes struct {
	Recovery string
	Setup    string
}

// ForceReset deletes the master cipher, flags every local account for
// recovery, ends every session and returns a new one-time recovery code
// and a setup code (the administrator who reset the cipher sets up the new
// one without reading the server's terminal). Only administrators may do
// it. The caller publishes the cipher change so other replicas lock
// themselves.
func (s *Service) ForceReset(ctx context.Context, p *Principal) (ResetCodes, error) {
	if !p.IsAdmin() {
		return ResetCodes{}, cairn.Errorf(cairn.ECodeForbidden, "only administrators can reset the master cipher")
	}
	code, codeHash := newToken()
	setupCode := newSetupCode()
	err := s.store.InTx(ctx, func(q *db.Queries) error {
		if err := q.AegisStateDelete(ctx); err != nil {
			return err
		}
		if err := q.UserFlagAllForRecovery(ctx); err != nil {
			return err
		}
		if err := q.PasskeyDeleteAllLocal(ctx); err != nil {
			return err
		}
		if err := q.SessionDeleteAll(ctx); err != nil {
			return err
		}
		if err := q.SetupCodeInsert(ctx, setupCodeHash(setupCode)); err != nil {
			return err
		}
		return q.AdminRecoveryUpsert(ctx, codeHash)
	})
	if err != nil {
		return ResetCodes{}, err
	}
	s.cipher.Lock()
	return ResetCodes{Recovery: code, Setup: setupCode}, nil
}

// IssueRecoveryCode replaces the recovery code; for `cairn admin
// recovery-code`, run by someone with access to the server.
func (s *Service) IssueRecoveryCode(ctx context.Context) (string, error) {
	c, err := s.store.UserCounts(ctx)
	if err != nil {
		return "", err
	}
	if c.FlaggedAdmins == 0 {
		return "", cairn.Errorf(cairn.ECodeWrongPhase, "no administrator is awaiting recovery")
	}
	code, codeHash := newToken()
	return code, s.store.AdminRecoveryUpsert(ctx, codeHash)
}

func setupFromSecret(username, secret string) (MFASetup, error) {
	v := url.Values{}
	v.Set("secret", secret)
	v.Set("issuer", totpIssuer)
	v.Set("period", fmt.Sprint(totpPeriod))
	v.Set("algorithm", "SHA1")
	v.Set("digits", "6")
	u := url.URL{Scheme: "otpauth", Host: "totp", Path: "/" + totpIssuer + ":" + username, RawQuery: v.Encode()}
	if _, err := otp.NewKeyFromURL(u.String()); err != nil {
		return MFASetup{}, err
	}
	return MFASetup{Secret: secret, OTPAuthURL: u.String()}, nil
}

// BootstrapRestoreCheck allows a backup to be analysed or restored through
// the bootstrap routes (issue 26): only onto a fresh deployment (phase
// aegis_setup_required, nothing to lose) and only by whoever holds a
// setup code, like the cipher's setup.
func (s *Service) BootstrapRestoreCheck(ctx context.Context, setupCode string) error {
	if _, err := s.inPhase(ctx, PhaseAegisSetup); err != nil {
		return err
	}
	return s.checkSetupCode(ctx, setupCode)
}
