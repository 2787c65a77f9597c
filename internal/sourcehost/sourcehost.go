// Package sourcehost talks to the source-hosting service (GitHub's API or
// one compatible with it): the Engine's sealed token, its rate-limit status,
// and branch heads for /api/repo/current_hash, cached in PostgreSQL so
// every replica shares one answer per (repo, branch).
package sourcehost

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/aegis"
)

// Token sources, in the order current_hash tries them (SPEC rule 7).
const (
	SourceStored      = "stored"
	SourceHeader      = "header"
	SourceEnvironment = "environment"
)

const (
	// DefaultAPIURL is GitHub's public API.
	DefaultAPIURL = "https://api.github.com"
	// DefaultTTL and MaxTTL bound how long a branch head is reused.
	DefaultTTL = 60 * time.Second
	MaxTTL     = 86400 * time.Second
	maxToken   = 255
	// rateCacheFor keeps the console's status page from spending a call on
	// every refresh.
	rateCacheFor = 30 * time.Second
)

var tokenAAD = []byte("cairn:source-token")

// Config configures the service.
type Config struct {
	// APIURL is the API base URL without a trailing slash.
	APIURL string
	// EnvToken is the token from the Engine's environment, if any.
	EnvToken string
	HTTP     *http.Client
	Now      func() time.Time
}

// Service implements the source-hosting token and branch heads.
type Service struct {
	store  *db.Store
	cipher *aegis.Cipher
	cfg    Config

	mu    sync.Mutex
	rates map[[32]byte]rateEntry
}

type rateEntry struct {
	rate RateLimit
	at   time.Time
}

// NewService returns the service.
func NewService(store *db.Store, cipher *aegis.Cipher, cfg Config) *Service {
	cfg.APIURL = strings.TrimRight(cfg.APIURL, "/")
	if cfg.APIURL == "" {
		cfg.APIURL = DefaultAPIURL
	}
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Service{store: store, cipher: cipher, cfg: cfg, rates: map[[32]byte]rateEntry{}}
}

// Status is what GET /api/github/token reports. Source is "" without a
// token; Unreadable marks a stored token sealed by a since-reset cipher
// (unusable until set again); RateLimit is nil when the source host did
// not answer.
type Status struct {
	HasToken   bool
	Source     string
	Unreadable bool
	RateLimit  *RateLimit
}

// Status reports which token the Engine would use and its rate limit.
func (s *Service) Status(ctx context.Context) (Status, error) {
	stored, unreadable, err := s.storedToken(ctx)
	if err != nil {
		return Status{}, err
	}
	st := Status{Unreadable: unreadable}
	token := stored
	switch {
	case stored != "" || unreadable:
		st.HasToken, st.Source = true, SourceStored
	case s.cfg.EnvToken != "":
		st.HasToken, st.Source, token = true, SourceEnvironment, s.cfg.EnvToken
	}
	if token != "" {
		if rate, err := s.cachedRate(ctx, token); err == nil {
			st.RateLimit = &rate
		}
	}
	return st, nil
}

// SetToken checks token against the source host and stores it sealed; an
// empty token clears the stored one.
func (s *Service) SetToken(ctx context.Context, token, by string) error {
	if token == "" {
		return s.store.SourceTokenDelete(ctx)
	}
	switch {
	case len(token) > maxToken:
		return cairn.Invalid("token", fmt.Sprintf("must be at most %d characters", maxToken))
	case strings.ContainsFunc(token, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }):
		return cairn.Invalid("token", "must not contain spaces or control characters")
	}
	rate, err := s.rateLimit(ctx, token)
	if errors.Is(err, errUnauthorized) {
		return cairn.Invalid("token", "was refused by the source host")
	} else if err != nil {
		return err
	}
	key := s.cipher.KeyID()
	sealed, err := s.cipher.Seal([]byte(token), tokenAAD)
	if err != nil {
		return err
	}
	if err := s.store.SourceTokenUpsert(ctx, db.SourceTokenUpsertParams{TokenSealed: sealed, KeyID: key, UpdatedBy: by}); err != nil {
		return err
	}
	s.remember(token, rate)
	return nil
}

// storedToken opens the stored token. A token sealed by a since-reset
// cipher is reported as unreadable rather than failing: it is then treated
// as absent until an administrator sets it again.
func (s *Service) storedToken(ctx context.Context) (token string, unreadable bool, err error) {
	if !s.cipher.Unlocked() {
		return "", false, aegis.ErrLocked
	}
	row, err := s.store.SourceTokenGet(ctx)
	if db.IsNoRows(err) {
		return "", false, nil
	} else if err != nil {
		return "", false, err
	}
	if !bytes.Equal(row.KeyID, s.cipher.KeyID()) {
		return "", true, nil
	}
	plain, err := s.cipher.Open(row.TokenSealed, tokenAAD)
	if errors.Is(err, aegis.ErrForeignKey) {
		return "", true, nil
	} else if err != nil {
		return "", false, err
	}
	return string(plain), false, nil
}

func (s *Service) cachedRate(ctx context.Context, token string) (RateLimit, error) {
	key := sha256.Sum256([]byte(token))
	s.mu.Lock()
	e, ok := s.rates[key]
	s.mu.Unlock()
	if ok && s.cfg.Now().Sub(e.at) < rateCacheFor {
		return e.rate, nil
	}
	rate, err := s.rateLimit(ctx, token)
	if err != nil {
		return RateLimit{}, err
	}
	s.remember(token, rate)
	return rate, nil
}

// remember caches a rate limit under the token's hash (never the token).
func (s *Service) remember(token string, rate RateLimit) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rates[sha256.Sum256([]byte(token))] = rateEntry{rate: rate, at: s.cfg.Now()}
}

// HashQuery asks for the head of a branch. HeaderToken is the caller's
// X-GitHub-Token, used only when the Engine has no stored token.
type HashQuery struct {
	Repo        string
	Branch      string
	TTL         time.Duration
	Force       bool
	HeaderToken string
}

// Hash is a branch head; Cached says it came from the shared cache.
type Hash struct {
	Repo      string
	Branch    string
	Hash      string
	FetchedAt time.Time
	Cached    bool
}

var (
	ownerPattern = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,38})$`)
	namePattern  = regexp.MustCompile(`^[A-Za-z0-9._-]{1,100}$`)
)

// CheckHashQuery validates repo, branch and ttl, naming each bad field.
func CheckHashQuery(q HashQuery) error {
	var v cairn.Validation
	owner, name, ok := strings.Cut(q.Repo, "/")
	if !ok || !ownerPattern.MatchString(owner) || !namePattern.MatchString(name) || name == "." || name == ".." {
		v.Add("repo", "must be owner/name: letters, digits and '-' for the owner; letters, digits, '.', '_' and '-' for the name")
	}
	if p := BranchProblem(q.Branch); p != "" {
		v.Add("branch", p)
	}
	if q.TTL < 0 || q.TTL > MaxTTL {
		v.Add("ttl", fmt.Sprintf("must be from 0 to %d seconds", int(MaxTTL.Seconds())))
	}
	return v.Err()
}

// BranchProblem applies git's ref-name rules (git check-ref-format) to a
// branch name and says what is wrong, or "".
func BranchProblem(b string) string {
	switch {
	case b == "":
		return "is required"
	case len(b) > 255:
		return "must be at most 255 characters"
	case b == "@" || strings.HasPrefix(b, "-"):
		return "is not a valid branch name"
	case strings.Contains(b, "..") || strings.Contains(b, "@{") || strings.Contains(b, "//"):
		return "must not contain '..', '@{' or '//'"
	case strings.ContainsAny(b, " ~^:?*[\\"):
		return "must not contain spaces or any of ~ ^ : ? * [ \\"
	case strings.ContainsFunc(b, unicode.IsControl):
		return "must not contain control characters"
	case strings.HasPrefix(b, "/") || strings.HasSuffix(b, "/") || strings.HasSuffix(b, "."):
		return "must not start or end with '/' or end with '.'"
	}
	for _, seg := range strings.Split(b, "/") {
		if strings.HasPrefix(seg, ".") || strings.HasSuffix(seg, ".lock") {
			return "no path component may start with '.' or end with '.lock'"
		}
	}
	return ""
}

// CurrentHash answers the head commit of a branch, from the shared cache
// when it is younger than TTL (unless Force), else from the source host.
func (s *Service) CurrentHash(ctx context.Context, q HashQuery) (Hash, error) {
	if err := CheckHashQuery(q); err != nil {
		return Hash{}, err
	}
	now := s.cfg.Now()
	if !q.Force && q.TTL > 0 {
		row, err := s.store.RepoHashCacheGet(ctx, db.RepoHashCacheGetParams{Repo: q.Repo, Branch: q.Branch})
		if err == nil && now.Sub(row.FetchedAt) < q.TTL {
			return Hash{Repo: q.Repo, Branch: q.Branch, Hash: row.Hash, FetchedAt: row.FetchedAt, Cached: true}, nil
		} else if err != nil && !db.IsNoRows(err) {
			return Hash{}, err
		}
	}
	token, source, err := s.tokenFor(ctx, q.HeaderToken)
	if err != nil {
		return Hash{}, err
	}
	hash, err := s.branchHead(ctx, q.Repo, q.Branch, token)
	if errors.Is(err, errUnauthorized) {
		return Hash{}, refused(source)
	} else if err != nil {
		return Hash{}, err
	}
	if err := s.store.RepoHashCacheUpsert(ctx, db.RepoHashCacheUpsertParams{Repo: q.Repo, Branch: q.Branch, Hash: hash, FetchedAt: now}); err != nil {
		return Hash{}, err
	}
	return Hash{Repo: q.Repo, Branch: q.Branch, Hash: hash, FetchedAt: now}, nil
}

// tokenFor picks the token for a source-host call: the stored Engine
// token, else the caller's header token, else the environment's, else none.
func (s *Service) tokenFor(ctx context.Context, header string) (string, string, error) {
	stored, _, err := s.storedToken(ctx)
	switch {
	case err != nil:
		return "", "", err
	case stored != "":
		return stored, SourceStored, nil
	case header != "":
		return header, SourceHeader, nil
	case s.cfg.EnvToken != "":
		return s.cfg.EnvToken, SourceEnvironment, nil
	}
	return "", "", nil
}

func refused(source string) error {
	switch source {
	case SourceHeader:
		return cairn.Invalid("X-GitHub-Token", "was refused by the source host")
	case "":
		return unavailable("the source host requires a token; an administrator can store one")
	}
	return unavailable("the source host refused the Engine's %s token; an administrator must replace it", source)
}
