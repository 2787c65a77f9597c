// Package auth signs operators in: first-run bootstrap of the first
// administrator, password + TOTP login with signed pending-MFA tokens,
// opaque sessions stored hashed, and account self-service. Password hashes
// and TOTP secrets are sealed with the master cipher, so nothing here works
// while the cipher is locked.
package auth

import (
	"context"
	"crypto/subtle"
	"slices"
	"sync/atomic"
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

// Session lifetimes by default (CAIRN_SESSION_IDLE_TIMEOUT and
// CAIRN_SESSION_MAX_AGE): an unattended console signs out within half an
// hour, and nobody stays signed in past a working day.
const (
	DefaultSessionIdle = 30 * time.Minute
	DefaultSessionMax  = 12 * time.Hour
)

// Config tunes the service; zero values take the defaults.
type Config struct {
	Password *PasswordParams
	// SessionIdle ends a session unused this long; SessionMax ends every
	// session this long after sign-in, used or not.
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

// Budgets for guessing, shared by all replicas through PostgreSQL. Only
// failures count, and they earn increasing delays rather than a lock, so
// whoever knows a username can slow its owner down but not lock them out
// (docs/architecture.md, "Sign-in throttling").
var (
	// PasswordFailuresPerUser bounds guesses at one username from any
	// number of addresses: after a minute's delay per failure, about 60 an
	// hour (ASVS 2.2.1 asks for at most 100).
	PasswordFailuresPerUser = ratelimit.Backoff{Free: 5, Base: time.Second, Max: time.Minute, Decay: 15 * time.Minute}
	// FailuresPerAddress bounds one client address across usernames.
	FailuresPerAddress = ratelimit.Backoff{Free: 20, Base: time.Second, Max: 15 * time.Minute, Decay: time.Hour}
	// MFAFailuresPerAccount counts wrong codes per account whatever
	// pending token carried them: a correct password does not reset it.
	MFAFailuresPerAccount = ratelimit.Backoff{Free: 5, Base: time.Second, Max: 15 * time.Minute, Decay: 24 * time.Hour}
	// DirectoryFailuresPerUser keeps the binds Cairn makes for one
	// username below a directory's lockout threshold: three in 15 minutes,
	// then one per 15 minutes.
	DirectoryFailuresPerUser = ratelimit.Backoff{Free: 3, Base: 15 * time.Minute, Max: 15 * time.Minute, Decay: 15 * time.Minute}

	// LoginPerAddress is the fixed-window budget of passkey sign-in
	// ceremonies per address.
	LoginPerAddress = ratelimit.Rule{Limit: 30, Window: 5 * time.Minute}
	CodePerPending  = ratelimit.Rule{Limit: 5, Window: pendingTTL}
)

// Service implements sign-in and bootstrap.
type Service struct {
	store      *db.Store
	cipher     *aegis.Cipher
	limiter    *ratelimit.Limiter
	throttle   *ratelimit.Throttle
	pendingKey *aegis.ServerKey // HS256, sealed (issue 13 item 14)
	cfg        Config
	dummyHash  string
	// hashChecks counts password hash verifications, so a test can show
	// that unknown and known usernames take the same path.
	hashChecks atomic.Int64
}

// NewService prepares the service. The pending-token signing key is
// sealed by cipher and created on first use (once, shared by replicas).
func NewService(ctx context.Context, store *db.Store, cipher *aegis.Cipher, cfg Config) (*Service, error) {
	if cfg.Password == nil {
		cfg.Password = &DefaultPasswordParams
	}
	if cfg.SessionIdle == 0 {
		cfg.SessionIdle = DefaultSessionIdle
	}
	if cfg.SessionMax == 0 {
		cfg.SessionMax = DefaultSessionMax
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
	return &Service{store: store, cipher: cipher, limiter: ratelimit.New(store.Queries), throttle: ratelimit.NewThrottle(store, cfg.Now),
		pendingKey: aegis.NewServerKey(store.Queries, cipher, aegis.KeySpec{Name: "pending-mfa-hs256", Size: 32}), cfg: cfg, dummyHash: dummy}, nil
}

// Principal is a signed-in operator, resolved from a session or from a
// personal API token (then SessionID is 0 and APITokenID names the token).
type Principal struct {
	SessionID int64
	UserID    int64
	Username  string
	Role      string
	CSRFHash  []byte
	siteIDs   []int64
	// APITokenID, TokenAccess (read or write) and TokenScopes are set for
	// requests made with an API token.
	APITokenID  int64
	TokenAccess string
	TokenScopes []string
}

// IsAdmin reports the admin role.
func (p *Principal) IsAdmin() bool { return p.Role == RoleAdmin }

// ReadOnly reports a read-only API token: it may not change anything.
func (p *Principal) ReadOnly() bool { return p.APITokenID != 0 && p.TokenAccess != AccessWrite }

// CanReadDeviceContent reports whether the caller may read what is on a
// device (file text, registry values, process command lines, transferred
// files): a session and a write token may (a write token can run scripts
// on the device anyway), a read token only with ScopeReadDeviceContent.
// The one check every such route uses (api: deviceContent).
func (p *Principal) CanReadDeviceContent() bool {
	return !p.ReadOnly() || slices.Contains(p.TokenScopes, ScopeReadDeviceContent)
}

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
	// RequestID ties audit-trail alerts to the request that raised them.
	RequestID string
}

// LoginResult answers the password step.
type LoginResult struct {
	MFARequired  bool
	PendingToken string
	MFASetup     *MFASetup
	Session      *Session // set when MFA is disabled for the operator
}

// Login checks username and password. Nothing about the account's state
// is answered before the password is known to be right.
func (s *Service) Login(ctx context.Context, username, password string, meta ClientMeta) (LoginResult, error) {
	if err := s.requireLoginPhase(ctx); err != nil {
		return LoginResult{}, err
	}
	username = NormalizeUsername(username)
	u, err := s.store.UserGetByUsername(ctx, username)
	if err != nil && !db.IsNoRows(err) {
		return LoginResult{}, err
	}
	local := err == nil && u.AuthSource == "local"
	keys, err := s.loginKeys(ctx, username, local, meta)
	if err != nil {
		return LoginResult{}, err
	}
	if _, err := s.admit(ctx, keys); err != nil {
		return LoginResult{}, err
	}
	if u, err = s.checkCredentials(ctx, u, local, username, password); err != nil {
		return LoginResult{}, err
	}
	_ = s.throttle.Succeeded(ctx, keyNames(keys)...)
	if u.RecoveryRequired {
		return LoginResult{}, errRecoveryRequired
	}
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

// checkCredentials verifies the password of a local account, or asks the
// directory about any other name. Every refusal costs one password hash
// verification, a throwaway one where there is no hash, so that unknown
// names, directory names and wrong passwords take the same time.
func (s *Service) checkCredentials(ctx context.Context, u db.User, local bool, username, password string) (db.User, error) {
	switch {
	case local:
		return u, s.checkPassword(u, password)
	case s.cfg.Directory != nil:
		du, err := s.cfg.Directory.SignIn(ctx, username, password)
		if cairn.IsCode(err, cairn.ECodeInvalidCredentials) {
			_, _ = s.verify(password, s.dummyHash)
		}
		return du, err
	default:
		_, _ = s.verify(password, s.dummyHash)
		return db.User{}, errInvalidCredentials
	}
}

// VerifyMFA completes a login with a TOTP code and creates the session.
func (s *Service) VerifyMFA(ctx context.Context, pendingToken, code string, meta ClientMeta) (Session, error) {
	if err := s.requireLoginPhase(ctx); err != nil {
		return Session{}, err
	}
	// The pending token proves the password, so the account's state may
	// be answered from here on.
	p, u, err := s.pendingUser(ctx, pendingToken, purposeLogin)
	if err != nil {
		return Session{}, err
	}
	if u.RecoveryRequired {
		return Session{}, errRecoveryRequired
	}
	// Disabled between the password step and the code step.
	if u.DirectoryDisabled {
		return Session{}, errDirectoryDisabled
	}
	// Wrong codes count against the account, not the pending token: with
	// the password, anyone can fetch a fresh pending token at will.
	keys := []throttleKey{{"login:addr:" + meta.Addr, FailuresPerAddress}, {mfaKey(u.ID), MFAFailuresPerAccount}}
	counts, err := s.admit(ctx, keys)
	if err != nil {
		return Session{}, err
	}
	var sess Session
	err = s.store.InTx(ctx, func(q *db.Queries) error {
		if err := s.acceptCode(ctx, q, p, u, code); err != nil {
			return err
		}
		sess, err = s.newSession(ctx, q, u, meta)
		return err
	})
	switch {
	case err == nil:
		_ = s.throttle.Succeeded(ctx, keyNames(keys)...)
	case cairn.IsCode(err, cairn.ECodeInvalidMFACode) && counts[1] >= MFAFailuresPerAccount.Free:
		s.alertMFAGuessing(ctx, u, counts[1], meta)
	}
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
	if s.ended(ctx, row.ID, row.LastSeenAt, row.ExpiresAt, row.RecoveryRequired) {
		return nil, errUnauthorized
	}
	// One write a minute at most keeps idle tracking cheap.
	if now.Sub(row.LastSeenAt) > time.Minute {
		if err := s.store.SessionTouch(ctx, db.SessionTouchParams{ID: row.ID, SeenAt: now}); err != nil {
			return nil, err
		}
	}
	return s.principal(ctx, row.ID, row.UserID, row.Username, row.Role, row.CsrfHash)
}

// Recheck resolves an authenticated principal's session again, without
// counting as activity: open event streams call it on each keep-alive, so
// a stream ends with its session and notices a change of role or sites.
func (s *Service) Recheck(ctx context.Context, p *Principal) (*Principal, error) {
	if p.APITokenID != 0 {
		return s.recheckAPIToken(ctx, p)
	}
	row, err := s.store.SessionGetByID(ctx, p.SessionID)
	if db.IsNoRows(err) {
		return nil, errUnauthorized
	} else if err != nil {
		return nil, err
	}
	if s.ended(ctx, row.ID, row.LastSeenAt, row.ExpiresAt, row.RecoveryRequired) {
		return nil, errUnauthorized
	}
	return s.principal(ctx, row.ID, row.UserID, row.Username, row.Role, row.CsrfHash)
}

// ended reports a session past its absolute or idle lifetime, or of an
// account flagged for recovery, and removes it.
func (s *Service) ended(ctx context.Context, id int64, lastSeen, expires time.Time, recovery bool) bool {
	now := s.cfg.Now()
	if now.After(expires) || now.After(lastSeen.Add(s.cfg.SessionIdle)) || recovery {
		_ = s.store.SessionDelete(ctx, id)
		return true
	}
	return false
}

func (s *Service) principal(ctx context.Context, sessionID, userID int64, username, role string, csrfHash []byte) (*Principal, error) {
	p := &Principal{SessionID: sessionID, UserID: userID, Username: username, Role: role, CSRFHash: csrfHash}
	if !p.IsAdmin() {
		ids, err := s.store.UserSiteIDs(ctx, userID)
		if err != nil {
			return nil, err
		}
		p.siteIDs = cairn.SiteIDInts(ids)
	}
	return p, nil
}

// SameScope reports whether q sees exactly what p sees (role, sites and
// a token's access and scopes).
func (p *Principal) SameScope(q *Principal) bool {
	return p.Role == q.Role && slices.Equal(p.siteIDs, q.siteIDs) && p.TokenAccess == q.TokenAccess &&
		slices.Equal(p.TokenScopes, q.TokenScopes)
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

// ChangePassword verifies the current password, sets the new one, ends
// every other session of the operator and revokes their API tokens.
func (s *Service) ChangePassword(ctx context.Context, p *Principal, current, next string) (revoked int64, err error) {
	if err := CheckPassword("new_password", next); err != nil {
		return 0, err
	}
	u, err := s.verifiedUser(ctx, p, current, "current_password")
	if err != nil {
		return 0, err
	}
	sealed, err := s.sealPassword(u.Username, next)
	if err != nil {
		return 0, err
	}
	err = s.store.InTx(ctx, func(q *db.Queries) error {
		if err := q.UserSetPassword(ctx, db.UserSetPasswordParams{ID: u.ID, PasswordSealed: sealed}); err != nil {
			return err
		}
		revoked, err = endOtherAccess(ctx, q, u.ID, p.SessionID)
		return err
	})
	return revoked, err
}

// ResetOwnMFA clears the operator's authenticator after checking the
// password; the next password login asks for a new one. Every other
// session of the operator ends: a reset is what an operator does who fears
// the old authenticator (and so a session opened with it) is compromised.
func (s *Service) ResetOwnMFA(ctx context.Context, p *Principal, password string) (revoked int64, err error) {
	u, err := s.verifiedUser(ctx, p, password, "password")
	if err != nil {
		return 0, err
	}
	err = s.store.InTx(ctx, func(q *db.Queries) error {
		if err := q.UserClearTOTP(ctx, u.ID); err != nil {
			return err
		}
		revoked, err = endOtherAccess(ctx, q, u.ID, p.SessionID)
		return err
	})
	return revoked, err
}

// endOtherAccess ends every way into the account but the session making
// the change: its other sessions and all its API tokens (a password or
// MFA reset is what an operator does who fears either leaked). It returns
// how many tokens it revoked.
func endOtherAccess(ctx context.Context, q *db.Queries, userID, keepSession int64) (int64, error) {
	if err := q.SessionDeleteByUserExcept(ctx, db.SessionDeleteByUserExceptParams{UserID: userID, KeepID: keepSession}); err != nil {
		return 0, err
	}
	return q.APITokenDeleteByUser(ctx, userID)
}

// verifiedUser checks a signed-in operator's password again. Its failures
// share the username's sign-in budget: guesses through either door count.
func (s *Service) verifiedUser(ctx context.Context, p *Principal, password, field string) (db.User, error) {
	u, err := s.store.UserGetByID(ctx, p.UserID)
	if err != nil {
		return db.User{}, db.NotFound(err, "account not found")
	}
	if u.AuthSource != "local" {
		return db.User{}, cairn.Errorf(cairn.ECodeForbidden, "directory accounts are managed by their directory")
	}
	keys := []throttleKey{{"login:user:" + p.Username, PasswordFailuresPerUser}}
	if _, err := s.admit(ctx, keys); err != nil {
		return db.User{}, err
	}
	if err := s.checkPassword(u, password); err != nil {
		if cairn.IsCode(err, cairn.ECodeInvalidCredentials) {
			return db.User{}, cairn.Invalid(field, "is not correct")
		}
		return db.User{}, err
	}
	_ = s.throttle.Succeeded(ctx, keyNames(keys)...)
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
		_, _ = s.verify(password, s.dummyHash)
		return errInvalidCredentials
	}
	hash, err := s.cipher.Open(u.PasswordSealed, passwordAAD(u.Username))
	if err != nil {
		return err
	}
	ok, err := s.verify(password, string(hash))
	if err != nil {
		return err
	}
	if !ok {
		return errInvalidCredentials
	}
	return nil
}

// verify is the one place sign-in compares a password with a hash.
func (s *Service) verify(password, hash string) (bool, error) {
	s.hashChecks.Add(1)
	return verifyPassword(password, hash)
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
	now := s.cfg.Now()
	expires := now.Add(s.cfg.SessionMax)
	_, err := q.SessionInsert(ctx, db.SessionInsertParams{TokenHash: tokenHash, CsrfHash: csrfHash, UserID: u.ID,
		ClientAddr: meta.Addr, UserAgent: truncate(meta.UserAgent, 512), LastSeenAt: now, ExpiresAt: expires})
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
	errRecoveryRequired   = cairn.Errorf(cairn.ECodeRecoveryRequired, "this account must be recovered by an administrator")
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
		return Session{}, errRecoveryRequired
	}
	if u.DirectoryDisabled {
		return Session{}, errDirectoryDisabled
	}
	return s.newSession(ctx, s.store.Queries, u, meta)
}
