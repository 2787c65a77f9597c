// Package auth signs operators in: first-run bootstrap of the first
// administrator, password + TOTP login with signed pending-MFA tokens,
// opaque sessions stored hashed, and account self-service. Password hashes
// and TOTP secrets are sealed with the master cipher, so nothing here works
// while the cipher is locked.
package auth

import (
	"context"
	"crypto/subtle"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/aegis"
	"github.com/cairn-rmm/cairn/internal/ratelimit"
)

// Roles.
const (
	RoleAdmin    = "admin"
	RoleOperator = "operator"
)

// Config tunes the service; zero values take the defaults.
type Config struct {
	Password    *PasswordParams
	SessionIdle time.Duration
	SessionMax  time.Duration
	Now         func() time.Time
	// Directory signs in operators without a local account (nil: no
	// directory sign-in).
	Directory Directory
}

// Directory authenticates operators against an external directory. It is
// asked about usernames with no local account and about cached directory
// accounts, and returns the cached account (created or refreshed, role and
// sites set from the directory) or a domain error. Login then runs the
// same MFA flow as for local accounts.
type Directory interface {
	SignIn(ctx context.Context, username, password string) (db.User, error)
}

// Budgets for guessing: per username and per client address, shared by all
// replicas through PostgreSQL.
var (
	LoginPerUser    = ratelimit.Rule{Limit: 10, Window: 5 * time.Minute}
	LoginPerAddress = ratelimit.Rule{Limit: 30, Window: 5 * time.Minute}
	CodePerPending  = ratelimit.Rule{Limit: 5, Window: pendingTTL}
)

// Service implements sign-in and bootstrap.
type Service struct {
	store      *db.Store
	cipher     *aegis.Cipher
	limiter    *ratelimit.Limiter
	pendingKey *aegis.ServerKey // HS256, sealed (issue 13 item 14)
	cfg        Config
	dummyHash  string
}

// NewService prepares the service. The pending-token signing key is
// sealed by cipher and created on first use (once, shared by replicas).
func NewService(ctx context.Context, store *db.Store, cipher *aegis.Cipher, cfg Config) (*Service, error) {
	if cfg.Password == nil {
		cfg.Password = &DefaultPasswordParams
	}
	if cfg.SessionIdle == 0 {
		cfg.SessionIdle = 12 * time.Hour
	}
	if cfg.SessionMax == 0 {
		cfg.SessionMax = 7 * 24 * time.Hour
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	// Verifying against a throwaway hash when a username is unknown keeps
	// the answer time the same, so timing does not reveal accounts.
	dummy, err := hashPassword("cairn-timing-equalizer", cfg.Password)
	if err != nil {
		return nil, err
	}
	return &Service{store: store, cipher: cipher, limiter: ratelimit.New(store.Queries), pendingKey: aegis.NewServerKey(store.Queries, cipher, aegis.KeySpec{Name: "pending-mfa-hs256", Size: 32}), cfg: cfg, dummyHash: dummy}, nil
}

// Principal is a signed-in operator, resolved from a session.
type Principal struct {
	SessionID int64
	UserID    int64
	Username  string
	Role      string
	CSRFHash  []byte
	siteIDs   []int64
}

// IsAdmin reports the admin role.
func (p *Principal) IsAdmin() bool { return p.Role == RoleAdmin }

// SiteScope is what the operator may see: every site for administrators,
// the assigned sites for everyone else (read when the session was resolved,
// so a change of assignments applies from the next request).
func (p *Principal) SiteScope() cairn.SiteScope {
	if p.IsAdmin() {
		return cairn.AllSites
	}
	return cairn.SiteScope{SiteIDs: p.siteIDs}
}

// CheckCSRF compares a presented CSRF token with the session's.
func (p *Principal) CheckCSRF(token string) bool {
	return token != "" && subtle.ConstantTimeCompare(HashToken(token), p.CSRFHash) == 1
}

// Session is a newly created session; Token and CSRF are shown once.
type Session struct {
	Token   string
	CSRF    string
	Expires time.Time
	User    Account
}

// Account is an operator as the API shows it.
type Account struct {
	Username         string
	Role             string
	AuthSource       string
	MFAEnabled       bool
	MFAConfigured    bool
	PasskeyCount     int
	RecoveryRequired bool
	CreatedAt        time.Time
}

func accountOf(u db.User) Account {
	return Account{Username: u.Username, Role: u.Role, AuthSource: u.AuthSource, MFAEnabled: u.MfaRequired,
		MFAConfigured: u.MfaConfirmed, RecoveryRequired: u.RecoveryRequired, CreatedAt: u.CreatedAt}
}

// ClientMeta describes where a request came from.
type ClientMeta struct {
	Addr      string
	UserAgent string
}

// LoginResult answers the password step.
type LoginResult struct {
	MFARequired  bool
	PendingToken string
	MFASetup     *MFASetup
	Session      *Session // set when MFA is disabled for the operator
}

// Login checks username and password.
func (s *Service) Login(ctx context.Context, username, password string, meta ClientMeta) (LoginResult, error) {
	if err := s.requireLoginPhase(ctx); err != nil {
		return LoginResult{}, err
	}
	username = NormalizeUsername(username)
	if err := s.limiter.Hit(ctx, "login:addr:"+meta.Addr, LoginPerAddress); err != nil {
		return LoginResult{}, err
	}
	if err := s.limiter.Hit(ctx, "login:user:"+username, LoginPerUser); err != nil {
		return LoginResult{}, err
	}
	u, err := s.store.UserGetByUsername(ctx, username)
	switch {
	case s.cfg.Directory != nil && (db.IsNoRows(err) || err == nil && u.AuthSource == "directory"):
		if u, err = s.cfg.Directory.SignIn(ctx, username, password); err != nil {
			if cairn.IsCode(err, cairn.ECodeInvalidCredentials) {
				// As for unknown local names: answering without the hash
				// work would tell local accounts apart by timing.
				_, _ = verifyPassword(password, s.dummyHash)
			}
			return LoginResult{}, err
		}
	case db.IsNoRows(err) || err == nil && u.AuthSource != "local":
		_, _ = verifyPassword(password, s.dummyHash)
		return LoginResult{}, errInvalidCredentials
	case err != nil:
		return LoginResult{}, err
	default:
		if u.RecoveryRequired {
			return LoginResult{}, cairn.Errorf(cairn.ECodeRecoveryRequired, "this account must be recovered by an administrator")
		}
		if err := s.checkPassword(u, password); err != nil {
			return LoginResult{}, err
		}
	}
	_ = s.limiter.Reset(ctx, "login:user:"+username)
	if !u.MfaRequired {
		sess, err := s.newSession(ctx, s.store.Queries, u, meta)
		if err != nil {
			return LoginResult{}, err
		}
		return LoginResult{Session: &sess}, nil
	}
	res := LoginResult{MFARequired: true}
	if !u.MfaConfirmed {
		setup, err := s.pendingSetup(ctx, u)
		if err != nil {
			return LoginResult{}, err
		}
		res.MFASetup = &setup
	}
	res.PendingToken, err = signPending(ctx, s.pendingKey, u.ID, purposeLogin, s.cfg.Now())
	return res, err
}

// VerifyMFA completes a login with a TOTP code and creates the session.
func (s *Service) VerifyMFA(ctx context.Context, pendingToken, code string, meta ClientMeta) (Session, error) {
	if err := s.requireLoginPhase(ctx); err != nil {
		return Session{}, err
	}
	if err := s.limiter.Hit(ctx, "login:addr:"+meta.Addr, LoginPerAddress); err != nil {
		return Session{}, err
	}
	p, u, err := s.pendingUser(ctx, pendingToken, purposeLogin)
	if err != nil {
		return Session{}, err
	}
	if u.RecoveryRequired {
		return Session{}, cairn.Errorf(cairn.ECodeRecoveryRequired, "this account must be recovered by an administrator")
	}
	// Disabled between the password step and the code step.
	if u.DirectoryDisabled {
		return Session{}, errDirectoryDisabled
	}
	var sess Session
	err = s.store.InTx(ctx, func(q *db.Queries) error {
		if err := s.acceptCode(ctx, q, p, u, code); err != nil {
			return err
		}
		sess, err = s.newSession(ctx, q, u, meta)
		return err
	})
	return sess, err
}

// Authenticate resolves a session token. Expired sessions are removed.
func (s *Service) Authenticate(ctx context.Context, token string) (*Principal, error) {
	if token == "" {
		return nil, errUnauthorized
	}
	row, err := s.store.SessionGetByTokenHash(ctx, HashToken(token))
	if db.IsNoRows(err) {
		return nil, errUnauthorized
	} else if err != nil {
		return nil, err
	}
	now := s.cfg.Now()
	if now.After(row.ExpiresAt) || now.After(row.LastSeenAt.Add(s.cfg.SessionIdle)) || row.RecoveryRequired {
		_ = s.store.SessionDelete(ctx, row.ID)
		return nil, errUnauthorized
	}
	// One write a minute at most keeps idle tracking cheap.
	if now.Sub(row.LastSeenAt) > time.Minute {
		if err := s.store.SessionTouch(ctx, row.ID); err != nil {
			return nil, err
		}
	}
	p := &Principal{SessionID: row.ID, UserID: row.UserID, Username: row.Username, Role: row.Role, CSRFHash: row.CsrfHash}
	if !p.IsAdmin() {
		if p.siteIDs, err = s.store.UserSiteIDs(ctx, row.UserID); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Logout ends the session, or every session of the operator with all.
func (s *Service) Logout(ctx context.Context, p *Principal, all bool) error {
	if all {
		return s.store.SessionDeleteByUser(ctx, p.UserID)
	}
	return s.store.SessionDelete(ctx, p.SessionID)
}

// Me returns the signed-in operator's account.
func (s *Service) Me(ctx context.Context, p *Principal) (Account, error) {
	u, err := s.store.UserGetByID(ctx, p.UserID)
	if err != nil {
		return Account{}, db.NotFound(err, "account not found")
	}
	return s.account(ctx, s.store.Queries, u)
}

// account is accountOf plus the operator's passkey count.
func (s *Service) account(ctx context.Context, q *db.Queries, u db.User) (Account, error) {
	n, err := q.PasskeyCountByUser(ctx, u.ID)
	if err != nil {
		return Account{}, err
	}
	a := accountOf(u)
	a.PasskeyCount = int(n)
	return a, nil
}

// ChangePassword verifies the current password, sets the new one and ends
// every other session of the operator.
func (s *Service) ChangePassword(ctx context.Context, p *Principal, current, next string) error {
	if err := CheckPassword("new_password", next); err != nil {
		return err
	}
	u, err := s.verifiedUser(ctx, p, current, "current_password")
	if err != nil {
		return err
	}
	sealed, err := s.sealPassword(u.Username, next)
	if err != nil {
		return err
	}
	return s.store.InTx(ctx, func(q *db.Queries) error {
		if err := q.UserSetPassword(ctx, db.UserSetPasswordParams{ID: u.ID, PasswordSealed: sealed}); err != nil {
			return err
		}
		return q.SessionDeleteByUserExcept(ctx, db.SessionDeleteByUserExceptParams{UserID: u.ID, KeepID: p.SessionID})
	})
}

// ResetOwnMFA clears the operator's authenticator after checking the
// password; the next password login asks for a new one.
func (s *Service) ResetOwnMFA(ctx context.Context, p *Principal, password string) error {
	u, err := s.verifiedUser(ctx, p, password, "password")
	if err != nil {
		return err
	}
	return s.store.UserClearTOTP(ctx, u.ID)
}

func (s *Service) verifiedUser(ctx context.Context, p *Principal, password, field string) (db.User, error) {
	if err := s.limiter.Hit(ctx, "login:user:"+p.Username, LoginPerUser); err != nil {
		return db.User{}, err
	}
	u, err := s.store.UserGetByID(ctx, p.UserID)
	if err != nil {
		return db.User{}, db.NotFound(err, "account not found")
	}
	if u.AuthSource != "local" {
		return db.User{}, cairn.Errorf(cairn.ECodeForbidden, "directory accounts are managed by their directory")
	}
	if err := s.checkPassword(u, password); err != nil {
		if cairn.IsCode(err, cairn.ECodeInvalidCredentials) {
			return db.User{}, cairn.Invalid(field, "is not correct")
		}
		return db.User{}, err
	}
	_ = s.limiter.Reset(ctx, "login:user:"+p.Username)
	return u, nil
}

// requireLoginPhase refuses sign-in until bootstrap is finished; a locked
// cipher answers aegis_locked (HTTP 423) as the spec asks.
func (s *Service) requireLoginPhase(ctx context.Context) error {
	phase, err := s.Phase(ctx)
	if err != nil {
		return err
	}
	switch phase {
	case PhaseLogin:
		return nil
	case PhaseAegisUnlock:
		return aegis.ErrLocked
	default:
		return cairn.Errorf(cairn.ECodeBootstrapRequired, "setup is not finished (phase %s)", phase)
	}
}

func (s *Service) checkPassword(u db.User, password string) error {
	if u.PasswordSealed == nil {
		_, _ = verifyPassword(password, s.dummyHash)
		return errInvalidCredentials
	}
	hash, err := s.cipher.Open(u.PasswordSealed, passwordAAD(u.Username))
	if err != nil {
		return err
	}
	ok, err := verifyPassword(password, string(hash))
	if err != nil {
		return err
	}
	if !ok {
		return errInvalidCredentials
	}
	return nil
}

func (s *Service) sealPassword(username, password string) ([]byte, error) {
	hash, err := hashPassword(password, s.cfg.Password)
	if err != nil {
		return nil, err
	}
	return s.cipher.Seal([]byte(hash), passwordAAD(username))
}

// pendingSetup returns the operator's unverified authenticator secret,
// creating one the first time, so retrying a login shows the same QR code.
func (s *Service) pendingSetup(ctx context.Context, u db.User) (MFASetup, error) {
	if u.TotpSealed != nil {
		secret, err := s.cipher.Open(u.TotpSealed, totpAAD(u.Username))
		if err != nil {
			return MFASetup{}, err
		}
		return setupFromSecret(u.Username, string(secret))
	}
	setup, err := newTOTP(u.Username)
	if err != nil {
		return MFASetup{}, err
	}
	sealed, err := s.cipher.Seal([]byte(setup.Secret), totpAAD(u.Username))
	if err != nil {
		return MFASetup{}, err
	}
	return setup, s.store.UserSetTOTP(ctx, db.UserSetTOTPParams{ID: u.ID, TotpSealed: sealed})
}

func (s *Service) pendingUser(ctx context.Context, token, purpose string) (pending, db.User, error) {
	p, err := parsePending(ctx, s.pendingKey, token, s.cfg.Now())
	if err != nil || p.Purpose != purpose {
		return pending{}, db.User{}, errInvalidPending
	}
	if err := s.limiter.Hit(ctx, "mfa:pending:"+p.JTI, CodePerPending); err != nil {
		return pending{}, db.User{}, err
	}
	u, err := s.store.UserGetByID(ctx, p.UserID)
	if db.IsNoRows(err) {
		return pending{}, db.User{}, errInvalidPending
	}
	return p, u, err
}

// acceptCode verifies a TOTP code, refuses a replayed step and spends the
// pending token, all inside the caller's transaction.
func (s *Service) acceptCode(ctx context.Context, q *db.Queries, p pending, u db.User, code string) error {
	if u.TotpSealed == nil {
		return errInvalidPending
	}
	secret, err := s.cipher.Open(u.TotpSealed, totpAAD(u.Username))
	if err != nil {
		return err
	}
	step := matchTOTP(string(secret), code, s.cfg.Now())
	if step == 0 {
		return errInvalidCode
	}
	n, err := q.UserConfirmTOTP(ctx, db.UserConfirmTOTPParams{ID: u.ID, Step: step})
	if err != nil {
		return err
	}
	if n == 0 {
		return cairn.Errorf(cairn.ECodeInvalidMFACode, "this code was already used; wait for the next one")
	}
	used, err := q.PendingTokenUse(ctx, db.PendingTokenUseParams{Jti: p.JTI, ExpiresAt: p.Expires})
	if err != nil {
		return err
	}
	if used == 0 {
		return errInvalidPending
	}
	return nil
}

func (s *Service) newSession(ctx context.Context, q *db.Queries, u db.User, meta ClientMeta) (Session, error) {
	token, tokenHash := newToken()
	csrf, csrfHash := newToken()
	expires := s.cfg.Now().Add(s.cfg.SessionMax)
	_, err := q.SessionInsert(ctx, db.SessionInsertParams{TokenHash: tokenHash, CsrfHash: csrfHash, UserID: u.ID,
		ClientAddr: meta.Addr, UserAgent: truncate(meta.UserAgent, 512), ExpiresAt: expires})
	if err != nil {
		return Session{}, err
	}
	a, err := s.account(ctx, q, u)
	if err != nil {
		return Session{}, err
	}
	return Session{Token: token, CSRF: csrf, Expires: expires, User: a}, nil
}

func passwordAAD(username string) []byte { return []byte("cairn:user:" + username + ":password") }
func totpAAD(username string) []byte     { return []byte("cairn:user:" + username + ":totp") }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

var (
	errUnauthorized       = cairn.Errorf(cairn.ECodeUnauthorized, "sign in first")
	errInvalidCredentials = cairn.Errorf(cairn.ECodeInvalidCredentials, "the username or password is not correct")
	errInvalidCode        = cairn.Errorf(cairn.ECodeInvalidMFACode, "the code is not correct")
	errInvalidPending     = cairn.Errorf(cairn.ECodeInvalidPending, "the sign-in step expired; start again")
	errDirectoryDisabled  = cairn.Errorf(cairn.ECodeForbidden, "this directory account is disabled; ask an administrator")
)

// CreateLocalUser adds a local operator account with a password; MFA is
// required and set up at the first sign-in.
func (s *Service) CreateLocalUser(ctx context.Context, username, password, role string) (Account, error) {
	username = NormalizeUsername(username)
	if err := checkNewAccount(username, password, role); err != nil {
		return Account{}, err
	}
	sealed, err := s.sealPassword(username, password)
	if err != nil {
		return Account{}, err
	}
	u, err := s.store.UserInsert(ctx, db.UserInsertParams{Username: username, Role: role, PasswordSealed: sealed, Activated: true})
	if db.IsUniqueViolation(err, "") {
		return Account{}, &cairn.Error{Code: cairn.ECodeConflict, Message: "that username is taken", Fields: map[string]string{"username": "is already taken"}}
	}
	if err != nil {
		return Account{}, err
	}
	return accountOf(u), nil
}

// checkNewAccount validates the fields of a new local account.
func checkNewAccount(username, password, role string) error {
	var v cairn.Validation
	if pr := UsernameProblem(username); pr != "" {
		v.Add("username", pr)
	}
	if pr := PasswordProblem(password); pr != "" {
		v.Add("password", pr)
	}
	if role != RoleAdmin && role != RoleOperator {
		v.Add("role", "must be admin or operator")
	}
	return v.Err()
}

// StartSession creates a session for an operator who proved who they are
// by other means than password + TOTP (a passkey, say). It refuses
// accounts flagged for recovery.
func (s *Service) StartSession(ctx context.Context, userID int64, meta ClientMeta) (Session, error) {
	if err := s.requireLoginPhase(ctx); err != nil {
		return Session{}, err
	}
	u, err := s.store.UserGetByID(ctx, userID)
	if err != nil {
		return Session{}, db.NotFound(err, "account not found")
	}
	if u.RecoveryRequired {
		return Session{}, cairn.Errorf(cairn.ECodeRecoveryRequired, "this account must be recovered by an administrator")
	}
	if u.DirectoryDisabled {
		return Session{}, errDirectoryDisabled
	}
	return s.newSession(ctx, s.store.Queries, u, meta)
}
