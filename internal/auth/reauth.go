package auth

import (
	"context"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/ratelimit"
)

// ECodeReauthRequired answers a sensitive action (a cipher rotation or
// forced reset, registering a passkey) sent without a fresh proof of the
// operator's identity, or with a wrong one (HTTP 403). A stolen session
// alone cannot do these things.
const ECodeReauthRequired = "reauthentication_required"

// Budgets for sensitive actions, shared by all replicas: re-authentication
// guesses per operator, and master-passphrase guesses (each one costs the
// server 64 MiB of Argon2) per operator and per client address.
var (
	ReauthPerUser     = ratelimit.Rule{Limit: 10, Window: 5 * time.Minute}
	PassphrasePerUser = ratelimit.Rule{Limit: 10, Window: 5 * time.Minute}
)

// ReauthWindow is how long a proof given at POST /api/auth/reauth lets the
// session administer accounts and directories (RequireRecentReauth), the
// way a "sudo mode" works elsewhere: one prompt for a batch of changes,
// and a session cookie taken later is not enough.
const ReauthWindow = 15 * time.Minute

func errReauth(why string) error {
	return cairn.Errorf(ECodeReauthRequired, "confirm it is you: %s", why)
}

// Reauthenticate checks the signed-in operator's password again and, when
// the account signs in with MFA, a TOTP code not used before (a passkey
// assertion is the other way: passkeys.Service.Reauthenticate). Directory
// accounts prove their password to the directory, as at sign-in.
func (s *Service) Reauthenticate(ctx context.Context, p *Principal, password, totpCode string) error {
	if password == "" {
		return errReauth("enter your password and a code from your authenticator, or use a passkey")
	}
	key := "reauth:user:" + p.Username
	if err := s.limiter.Hit(ctx, key, ReauthPerUser); err != nil {
		return err
	}
	u, err := s.store.UserGetByID(ctx, p.UserID)
	if err != nil {
		return db.NotFound(err, "account not found")
	}
	switch {
	case u.AuthSource == "directory" && s.cfg.Directory != nil:
		if u, err = s.cfg.Directory.SignIn(ctx, u.Username, password); err != nil {
			if cairn.IsCode(err, cairn.ECodeInvalidCredentials) {
				return errReauth("the password is not correct")
			}
			return err
		}
	case u.AuthSource != "local":
		return errReauth("the password is not correct")
	default:
		if err := s.checkPassword(u, password); err != nil {
			if cairn.IsCode(err, cairn.ECodeInvalidCredentials) {
				return errReauth("the password is not correct")
			}
			return err
		}
	}
	if u.MfaRequired {
		if !u.MfaConfirmed || u.TotpSealed == nil {
			return errReauth("set up your authenticator first")
		}
		if err := s.acceptFreshCode(ctx, u, totpCode); err != nil {
			return err
		}
	}
	_ = s.limiter.Reset(ctx, key)
	return nil
}

// MarkReauthenticated opens the session's re-authentication window after
// a proof passed (Reauthenticate or a passkey assertion) and returns when
// it closes. An API token has no session to mark.
func (s *Service) MarkReauthenticated(ctx context.Context, p *Principal) (time.Time, error) {
	if p.SessionID == 0 {
		return time.Time{}, errReauth("sign in at the console; an API token cannot re-authenticate")
	}
	now := s.cfg.Now()
	n, err := s.store.SessionSetReauthenticated(ctx, db.SessionSetReauthenticatedParams{ID: p.SessionID, At: &now})
	if err != nil {
		return time.Time{}, err
	}
	if n == 0 {
		return time.Time{}, cairn.Errorf(cairn.ECodeUnauthorized, "the session ended")
	}
	return now.Add(ReauthWindow), nil
}

// RequireRecentReauth admits a session whose operator re-authenticated
// within ReauthWindow; anything else answers reauthentication_required.
func (s *Service) RequireRecentReauth(ctx context.Context, p *Principal) error {
	if p.SessionID == 0 {
		return errReauth("sign in at the console; an API token cannot do this")
	}
	at, err := s.store.SessionGetReauthenticatedAt(ctx, p.SessionID)
	if err != nil {
		return db.NotFound(err, "the session ended")
	}
	if at == nil || s.cfg.Now().After(at.Add(ReauthWindow)) {
		return errReauth("enter your password and authenticator code (or use a passkey) to administer accounts and directories")
	}
	return nil
}

// acceptFreshCode verifies a TOTP code and records its step, so neither
// this code nor an earlier one works again (on any replica).
func (s *Service) acceptFreshCode(ctx context.Context, u db.User, code string) error {
	secret, err := s.cipher.Open(u.TotpSealed, totpAAD(u.Username))
	if err != nil {
		return err
	}
	step := matchTOTP(string(secret), code, s.cfg.Now())
	if step == 0 {
		return errReauth("the authenticator code is not correct")
	}
	n, err := s.store.UserConfirmTOTP(ctx, db.UserConfirmTOTPParams{ID: u.ID, Step: step})
	if err != nil {
		return err
	}
	if n == 0 {
		return errReauth("this authenticator code was already used; wait for the next one")
	}
	return nil
}

// UnlockCipher unlocks this process's master cipher for a signed-in
// administrator. Each try is a passphrase guess that costs the server an
// Argon2 derivation, so tries are budgeted per operator and per address.
func (s *Service) UnlockCipher(ctx context.Context, p *Principal, passphrase string, meta ClientMeta) error {
	if err := s.passphraseBudget(ctx, p, meta); err != nil {
		return err
	}
	return s.cipher.Unlock(ctx, passphrase)
}

// RotateCipher rewraps the master cipher's data key under a new
// passphrase; the caller has re-authenticated the administrator.
func (s *Service) RotateCipher(ctx context.Context, p *Principal, current, next string, meta ClientMeta) error {
	if err := s.passphraseBudget(ctx, p, meta); err != nil {
		return err
	}
	return s.cipher.Rotate(ctx, current, next)
}

// passphraseBudget admits administrators only, within the passphrase
// budgets (the per-address one is shared with the bootstrap unlock).
func (s *Service) passphraseBudget(ctx context.Context, p *Principal, meta ClientMeta) error {
	if !p.IsAdmin() {
		return cairn.Errorf(cairn.ECodeForbidden, "administrators only")
	}
	if err := s.limiter.Hit(ctx, "unlock:addr:"+meta.Addr, UnlockPerAddress); err != nil {
		return err
	}
	return s.limiter.Hit(ctx, "unlock:user:"+p.Username, PassphrasePerUser)
}
