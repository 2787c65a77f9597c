package auth

import (
	"context"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
)

// APITokenPrefix starts every personal API token, so the API tells a
// token from a session token without a database lookup (and secret
// scanners recognise a leaked one).
const APITokenPrefix = "cairn_pat_"

// API token limits: an expiry of 1 to 365 days (no token lives forever),
// and at most MaxAPITokensPerUser tokens per operator, expired ones
// included until they are swept a week after expiry.
const (
	MinAPITokenDays     = 1
	MaxAPITokenDays     = 365
	MaxAPITokensPerUser = 50
	maxAPITokenName     = 100
	// apiTokenKeep is how long an expired token stays listed (as expired)
	// before the maintenance sweep deletes it.
	apiTokenKeep = 7 * 24 * time.Hour
)

// Token access levels.
const (
	AccessRead  = "read"
	AccessWrite = "write"
)

// ScopeReadDeviceContent lets a read token read device content: file
// text, registry values, process command lines and transferred files
// (docs/api.md "API tokens"). Without it a read token sees devices but not
// what is on them. A write token needs no scope: it can run scripts on its
// devices, which read anything, so it may not carry one.
const ScopeReadDeviceContent = "read:device-content"

// APITokenScopes are the scopes a token may carry (the api_tokens.scopes
// CHECK constraint allows the same).
var APITokenScopes = []string{ScopeReadDeviceContent}

var (
	errBadAPIToken    = cairn.Errorf(cairn.ECodeUnauthorized, "the API token is not valid (unknown, revoked or expired)")
	errTokenMintToken = cairn.Errorf(cairn.ECodeForbidden, "an API token cannot create API tokens; sign in to the console")
)

// APIToken is a token as listed: never its text.
type APIToken struct {
	ID     int64
	Name   string
	Access string
	// Scopes are the token's extra scopes (APITokenScopes), never nil.
	Scopes     []string
	Username   string
	CreatedBy  string
	CreatedAt  time.Time
	ExpiresAt  time.Time
	LastUsedAt *time.Time
	// Expired: past ExpiresAt (listed until the sweep a week later).
	Expired bool
}

// NewAPIToken is a created token; Token is its text, shown once.
type NewAPIToken struct {
	APIToken
	Token string
}

// APITokenRequest asks for a token. Username names the owner when an
// administrator makes one for another operator (a service account); empty
// is the caller.
type APITokenRequest struct {
	Username      string
	Name          string
	ExpiresInDays int
	Access        string
	// Scopes: extra scopes of a read token (APITokenScopes).
	Scopes []string
}

// Validate checks the request's fields.
func (req APITokenRequest) Validate() error {
	var v cairn.Validation
	name := strings.TrimSpace(req.Name)
	switch {
	case name == "":
		v.Add("name", "is required")
	case len(name) > maxAPITokenName || strings.ContainsFunc(name, unicode.IsControl):
		v.Add("name", "must be at most 100 characters without control characters")
	}
	if req.ExpiresInDays < MinAPITokenDays || req.ExpiresInDays > MaxAPITokenDays {
		v.Add("expires_in_days", "must be between 1 and 365")
	}
	if req.Access != AccessRead && req.Access != AccessWrite {
		v.Add("access", "must be read or write")
	}
	for _, sc := range req.Scopes {
		if !slices.Contains(APITokenScopes, sc) {
			v.Add("scopes", "may hold only "+strings.Join(APITokenScopes, ", "))
			break
		}
	}
	if len(req.Scopes) > 0 && req.Access == AccessWrite {
		// A write token reads device content anyway (it can run scripts);
		// a stored scope would suggest it is needed or could be withheld.
		v.Add("scopes", "are for read tokens only: a write token reads device content without "+ScopeReadDeviceContent)
	}
	return v.Err()
}

// CreateAPIToken makes a token for the caller, or, for an administrator,
// for the named operator. Only a signed-in session may: a token that could
// mint tokens would let a leaked one outlive its own revocation.
func (s *Service) CreateAPIToken(ctx context.Context, p *Principal, req APITokenRequest) (NewAPIToken, error) {
	if p.APITokenID != 0 {
		return NewAPIToken{}, errTokenMintToken
	}
	if err := req.Validate(); err != nil {
		return NewAPIToken{}, err
	}
	owner, err := s.tokenOwner(ctx, p, req.Username)
	if err != nil {
		return NewAPIToken{}, err
	}
	var out NewAPIToken
	err = s.store.InTx(ctx, func(q *db.Queries) error {
		n, err := q.APITokenCountByUser(ctx, owner.ID)
		if err != nil {
			return err
		}
		if n >= MaxAPITokensPerUser {
			return cairn.Errorf(cairn.ECodeConflict, "%s already has %d API tokens; revoke one first", owner.Username, n)
		}
		secret, _ := newToken()
		text := APITokenPrefix + secret
		creator := p.UserID
		row, err := q.APITokenInsert(ctx, db.APITokenInsertParams{UserID: owner.ID, CreatedBy: &creator,
			Name: strings.TrimSpace(req.Name), TokenHash: HashToken(text), Access: req.Access, Scopes: normalScopes(req.Scopes),
			ExpiresAt: s.cfg.Now().Add(time.Duration(req.ExpiresInDays) * 24 * time.Hour)})
		if err != nil {
			return err
		}
		out = NewAPIToken{Token: text, APIToken: APIToken{ID: row.ID, Name: row.Name, Access: row.Access, Scopes: normalScopes(row.Scopes),
			Username: owner.Username, CreatedBy: p.Username, CreatedAt: row.CreatedAt, ExpiresAt: row.ExpiresAt}}
		return nil
	})
	return out, err
}

// ListAPITokens lists the caller's tokens, or an administrator's pick.
func (s *Service) ListAPITokens(ctx context.Context, p *Principal, username string) ([]APIToken, error) {
	owner, err := s.tokenOwner(ctx, p, username)
	if err != nil {
		return nil, err
	}
	rows, err := s.store.APITokenListByUser(ctx, owner.ID)
	if err != nil {
		return nil, err
	}
	now := s.cfg.Now()
	out := make([]APIToken, len(rows))
	for i, r := range rows {
		out[i] = APIToken{ID: r.ID, Name: r.Name, Access: r.Access, Scopes: normalScopes(r.Scopes), Username: r.Username, CreatedBy: r.CreatedBy,
			CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt, LastUsedAt: r.LastUsedAt, Expired: !now.Before(r.ExpiresAt)}
	}
	return out, nil
}

// RevokeAPIToken deletes one of the caller's tokens (an administrator's:
// of the named operator). It stops working at once.
func (s *Service) RevokeAPIToken(ctx context.Context, p *Principal, username string, id int64) error {
	owner, err := s.tokenOwner(ctx, p, username)
	if err != nil {
		return err
	}
	n, err := s.store.APITokenDelete(ctx, db.APITokenDeleteParams{ID: id, UserID: owner.ID})
	if err != nil {
		return err
	}
	if n == 0 {
		return cairn.Errorf(cairn.ECodeNotFound, "API token %d not found", id)
	}
	return nil
}

// tokenOwner is the operator whose tokens a request is about: the caller,
// or for an administrator any named operator.
func (s *Service) tokenOwner(ctx context.Context, p *Principal, username string) (db.User, error) {
	username = NormalizeUsername(username)
	if username == "" || username == p.Username {
		u, err := s.store.UserGetByID(ctx, p.UserID)
		return u, db.NotFound(err, "account not found")
	}
	if !p.IsAdmin() {
		return db.User{}, cairn.Errorf(cairn.ECodeForbidden, "only administrators manage other operators' API tokens")
	}
	u, err := s.store.UserGetByUsername(ctx, username)
	return u, db.NotFound(err, "operator %s not found", username)
}

// AuthenticateAPIToken resolves a presented API token to its owner's
// current role and sites, with the token's access. Last use is recorded at
// most once a minute per token.
func (s *Service) AuthenticateAPIToken(ctx context.Context, token string) (*Principal, error) {
	row, err := s.store.APITokenGetByHash(ctx, HashToken(token))
	if db.IsNoRows(err) {
		return nil, errBadAPIToken
	} else if err != nil {
		return nil, err
	}
	now := s.cfg.Now()
	if err := tokenUsable(now, row.ExpiresAt, row.RecoveryRequired, row.DirectoryDisabled); err != nil {
		return nil, err
	}
	if row.LastUsedAt == nil || now.Sub(*row.LastUsedAt) > time.Minute {
		stale := now.Add(-time.Minute)
		if err := s.store.APITokenTouch(ctx, db.APITokenTouchParams{ID: row.ID, UsedAt: &now, StaleBefore: &stale}); err != nil {
			return nil, err
		}
	}
	return s.tokenPrincipal(ctx, row.ID, row.Access, row.Scopes, row.UserID, row.Username, row.Role)
}

// recheckAPIToken is Recheck for a token's principal.
func (s *Service) recheckAPIToken(ctx context.Context, p *Principal) (*Principal, error) {
	row, err := s.store.APITokenGetByID(ctx, p.APITokenID)
	if db.IsNoRows(err) {
		return nil, errBadAPIToken
	} else if err != nil {
		return nil, err
	}
	if err := tokenUsable(s.cfg.Now(), row.ExpiresAt, row.RecoveryRequired, row.DirectoryDisabled); err != nil {
		return nil, err
	}
	return s.tokenPrincipal(ctx, row.ID, row.Access, row.Scopes, row.UserID, row.Username, row.Role)
}

// tokenUsable refuses an expired token and the tokens of an account
// disabled in its directory or flagged for recovery, as sign-in would.
func tokenUsable(now, expires time.Time, recovery, disabled bool) error {
	switch {
	case !now.Before(expires):
		return errBadAPIToken
	case recovery:
		return errRecoveryRequired
	case disabled:
		return errDirectoryDisabled
	}
	return nil
}

func (s *Service) tokenPrincipal(ctx context.Context, id int64, access string, scopes []string, userID int64, username, role string) (*Principal, error) {
	p, err := s.principal(ctx, 0, userID, username, role, nil)
	if err != nil {
		return nil, err
	}
	p.APITokenID, p.TokenAccess, p.TokenScopes = id, access, normalScopes(scopes)
	return p, nil
}

// normalScopes is a sorted set of scopes, empty rather than nil (the list
// is always an array in answers).
func normalScopes(in []string) []string {
	out := slices.Clone(in)
	if out == nil {
		out = []string{}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// DeleteExpiredAPITokens removes tokens expired more than a week ago
// (AuthenticateAPIToken already refuses them from their expiry on).
func (s *Service) DeleteExpiredAPITokens(ctx context.Context) (int64, error) {
	return s.store.APITokenDeleteExpired(ctx, s.cfg.Now().Add(-apiTokenKeep))
}
