// Package installlinks is the signed install links (SPEC "Signed URL"
// auth class): one active link per site and platform through which an
// installer downloads the current agent artifact without any other
// credential. A link is an HMAC-SHA256, under a server key kept sealed in
// server_keys (so links are issued and checked only while the cipher is
// unlocked), over the artifact ID, platform, site ID, expiry, the link's
// nonce and a digest of the site's enrollment codes; nothing about it is
// stored but the nonce, the expiry it is listed with and its counter.
// Revoking replaces the nonce (and zeroes the counter); rotating, adding
// or deleting a site's enrollment code changes the digest. Either way the
// URLs handed out before stop verifying, and every refused link answers
// the one code install_link_invalid, never which check failed.
package installlinks

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/aegis"
	"github.com/cairn-rmm/cairn/internal/agentartifacts"
)

// ECodeInvalid answers every refused install link.
const ECodeInvalid = "install_link_invalid"

const (
	// TTL is how long a newly listed link's URL stays valid.
	TTL = 7 * 24 * time.Hour
	// RenewWithin: a link whose expiry is nearer than this is listed with
	// a fresh expiry (same nonce, same counter), so the console always
	// shows a URL valid for at least RenewWithin while older URLs keep
	// working until their own expiry.
	RenewWithin = 2 * 24 * time.Hour

	keyName  = "agent_install_links"
	nonceLen = 16
	// PathPrefix is the install download route's prefix.
	PathPrefix = "/api/agent/install/download/"
)

// ErrInvalid is the one answer to a bad, expired, tampered, revoked or
// outdated link.
var ErrInvalid = cairn.Errorf(ECodeInvalid, "this install link is not valid (expired, revoked or altered); copy a current one from the console")

// Link is one site's active link for a platform.
type Link struct {
	SiteID   cairn.SiteID
	Platform string
	// URL is the query form, TokenURL the token form of the same link.
	URL           string
	TokenURL      string
	ExpiresAt     time.Time
	DownloadCount int64
	ArtifactID    string
	BuildID       string
	// InstallCommand downloads the binary through URL and runs
	// `cairn-agent install` with the server and an enrollment code;
	// CodePlaceholder stands for the code.
	InstallCommand string
	CreatedAt      time.Time
}

// CodePlaceholder stands for the enrollment code in InstallCommand.
const CodePlaceholder = "<enrollment-code>"

// Service issues, lists, revokes and checks install links.
type Service struct {
	store   *db.Store
	catalog *agentartifacts.Catalog
	key     *aegis.ServerKey
	now     func() time.Time
	log     *slog.Logger
}

// New returns the service. The link signing key is sealed by cipher and
// created on first use (once, shared by replicas).
func New(store *db.Store, cipher *aegis.Cipher, catalog *agentartifacts.Catalog, now func() time.Time, log *slog.Logger) *Service {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	key := aegis.NewServerKey(store.Queries, cipher, aegis.KeySpec{Name: keyName, Size: 32})
	return &Service{store: store, catalog: catalog, key: key, now: now, log: log}
}

// ForSites returns each site's links, one per platform with a current
// artifact (none without artifacts), creating missing links and moving
// expiries that are due. baseURL is the sites' public base URL.
func (s *Service) ForSites(ctx context.Context, baseURL string, siteIDs []int64) (map[int64]map[string]Link, error) {
	out := make(map[int64]map[string]Link, len(siteIDs))
	artifacts := s.catalog.List()
	if len(siteIDs) == 0 || len(artifacts) == 0 {
		return out, nil
	}
	rows, err := s.store.InstallLinksBySites(ctx, siteIDs)
	if err != nil {
		return nil, err
	}
	have := map[[2]string]db.AgentInstallLink{}
	for _, r := range rows {
		have[[2]string{strconv.FormatInt(int64(r.SiteID), 10), r.Platform}] = r
	}
	digests, err := s.digests(ctx, siteIDs)
	if err != nil {
		return nil, err
	}
	key, err := s.key.Secret(ctx)
	if err != nil {
		return nil, err
	}
	now := s.now()
	for _, site := range siteIDs {
		links := map[string]Link{}
		for _, a := range artifacts {
			if !agentartifacts.ValidPlatform(a.Platform) {
				continue
			}
			row, ok := have[[2]string{strconv.FormatInt(site, 10), a.Platform}]
			if !ok {
				if row, err = s.ensure(ctx, site, a.Platform, now); err != nil {
					return nil, err
				}
			}
			if row.ExpiresAt.Before(now.Add(RenewWithin)) {
				if row, err = s.extend(ctx, row, now); err != nil {
					return nil, err
				}
			}
			links[a.Platform] = s.link(key, baseURL, row, a, digests[site])
		}
		out[site] = links
	}
	return out, nil
}

func (s *Service) ensure(ctx context.Context, site int64, platform string, now time.Time) (db.AgentInstallLink, error) {
	nonce, err := newNonce()
	if err != nil {
		return db.AgentInstallLink{}, err
	}
	r, err := s.store.InstallLinkEnsure(ctx, db.InstallLinkEnsureParams{SiteID: cairn.SiteID(site), Platform: platform, Nonce: nonce, ExpiresAt: expiry(now)})
	if err != nil {
		return db.AgentInstallLink{}, err
	}
	// The CTE's row is the table's, but sqlc types its site ID as int64.
	return db.AgentInstallLink{SiteID: cairn.SiteID(r.SiteID), Platform: r.Platform, Nonce: r.Nonce, ExpiresAt: r.ExpiresAt,
		DownloadCount: r.DownloadCount, CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt}, nil
}

func (s *Service) extend(ctx context.Context, row db.AgentInstallLink, now time.Time) (db.AgentInstallLink, error) {
	r, err := s.store.InstallLinkExtend(ctx, db.InstallLinkExtendParams{SiteID: row.SiteID, Platform: row.Platform, Nonce: row.Nonce,
		ExpiresAt: expiry(now), DueBefore: now.Add(RenewWithin)})
	if errors.Is(err, pgx.ErrNoRows) {
		// Another replica extended or revoked it meanwhile: list what is there.
		return s.store.InstallLinkGet(ctx, db.InstallLinkGetParams{SiteID: row.SiteID, Platform: row.Platform})
	}
	return r, err
}

// expiry is now plus TTL, whole seconds (the URL carries seconds).
func expiry(now time.Time) time.Time { return now.Add(TTL).UTC().Truncate(time.Second) }

// Revoke replaces the site's link for platform: a new nonce, a fresh
// expiry and a zeroed counter. Every URL of the old link stops working.
func (s *Service) Revoke(ctx context.Context, baseURL string, site int64, platform, by string) (Link, error) {
	if !agentartifacts.ValidPlatform(platform) {
		return Link{}, cairn.Invalid("platform", "must be "+strings.Join(agentartifacts.Platforms, " or "))
	}
	if _, err := s.store.SiteGet(ctx, cairn.SiteID(site)); err != nil {
		return Link{}, db.NotFound(err, "no such site")
	}
	a, err := s.catalog.Current(platform)
	if err != nil {
		return Link{}, err
	}
	now := s.now()
	if _, err := s.ensure(ctx, site, platform, now); err != nil {
		return Link{}, err
	}
	nonce, err := newNonce()
	if err != nil {
		return Link{}, err
	}
	row, err := s.store.InstallLinkReplace(ctx, db.InstallLinkReplaceParams{SiteID: cairn.SiteID(site), Platform: platform, Nonce: nonce,
		ExpiresAt: expiry(now), CreatedBy: by})
	if err != nil {
		return Link{}, err
	}
	digests, err := s.digests(ctx, []int64{site})
	if err != nil {
		return Link{}, err
	}
	key, err := s.key.Secret(ctx)
	if err != nil {
		return Link{}, err
	}
	return s.link(key, baseURL, row, a, digests[site]), nil
}

func (s *Service) link(key []byte, baseURL string, row db.AgentInstallLink, a agentartifacts.Artifact, digest []byte) Link {
	base := strings.TrimRight(baseURL, "/")
	exp := row.ExpiresAt.UTC().Truncate(time.Second)
	sig := sign(key, a.ID, row.Platform, int64(row.SiteID), exp, row.Nonce, digest)
	q := url.Values{}
	q.Set("site_id", strconv.FormatInt(int64(row.SiteID), 10))
	q.Set("artifact", a.ID)
	q.Set("expires", exp.Format(time.RFC3339))
	q.Set("download_signature", sig)
	l := Link{SiteID: row.SiteID, Platform: row.Platform, ExpiresAt: exp, DownloadCount: row.DownloadCount,
		ArtifactID: a.ID, BuildID: a.BuildID, CreatedAt: row.CreatedAt,
		URL:      base + PathPrefix + row.Platform + "?" + q.Encode(),
		TokenURL: base + PathPrefix + Token(int64(row.SiteID), exp, a.ID, sig) + "/" + row.Platform,
	}
	l.InstallCommand = Command(row.Platform, l.URL, base, CodePlaceholder)
	return l
}

// sign is the link signature: base64url HMAC-SHA256 over every bound value.
func sign(key []byte, artifactID, platform string, site int64, expires time.Time, nonce, digest []byte) string {
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "cairn-install-link-v1\n%s\n%s\n%d\n%s\n%s\n%s", artifactID, platform, site,
		expires.UTC().Format(time.RFC3339), hex.EncodeToString(nonce), hex.EncodeToString(digest))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// digests is, per site, the SHA-256 of its enrollment codes (ID and code
// hash each, by ID): a rotated, added or deleted code changes it.
func (s *Service) digests(ctx context.Context, siteIDs []int64) (map[int64][]byte, error) {
	rows, err := s.store.EnrollmentCodeHashesBySites(ctx, siteIDs)
	if err != nil {
		return nil, err
	}
	hs := map[int64][]byte{}
	acc := map[int64]*strings.Builder{}
	for _, id := range siteIDs {
		acc[id] = &strings.Builder{}
	}
	for _, r := range rows {
		if b := acc[int64(r.SiteID)]; b != nil {
			fmt.Fprintf(b, "%d:%x\n", r.ID, r.CodeHash)
		}
	}
	for id, b := range acc {
		sum := sha256.Sum256([]byte(b.String()))
		hs[id] = sum[:]
	}
	return hs, nil
}

func newNonce() ([]byte, error) {
	n := make([]byte, nonceLen)
	_, err := rand.Read(n)
	return n, err
}

// Request is a download's claimed link, straight from the URL.
type Request struct {
	Platform   string
	SiteID     string
	ArtifactID string
	// Expires is RFC 3339 (query form) or Unix seconds (token form).
	Expires   string
	Signature string
}

// Grant is a verified link: what to serve and which link to count.
type Grant struct {
	SiteID   cairn.SiteID
	Platform string
	Artifact agentartifacts.Artifact
	nonce    []byte
}

// Verify checks a claimed link against the active one. Every failure is
// ErrInvalid; the reason goes to the debug log only.
func (s *Service) Verify(ctx context.Context, req Request) (Grant, error) {
	g, reason, err := s.verify(ctx, req)
	if err != nil {
		return Grant{}, err
	}
	if reason != "" {
		s.log.DebugContext(ctx, "install link refused", "platform", req.Platform, "site_id", req.SiteID, "reason", reason)
		return Grant{}, ErrInvalid
	}
	return g, nil
}

func (s *Service) verify(ctx context.Context, req Request) (Grant, string, error) {
	site, err := strconv.ParseInt(req.SiteID, 10, 64)
	if err != nil || site <= 0 {
		return Grant{}, "site_id", nil
	}
	exp, ok := parseExpiry(req.Expires)
	if !ok {
		return Grant{}, "expires format", nil
	}
	if !agentartifacts.ValidPlatform(req.Platform) {
		return Grant{}, "platform", nil
	}
	sig, err := base64.RawURLEncoding.DecodeString(req.Signature)
	if err != nil || len(sig) != sha256.Size {
		return Grant{}, "signature format", nil
	}
	row, err := s.store.InstallLinkGet(ctx, db.InstallLinkGetParams{SiteID: cairn.SiteID(site), Platform: req.Platform})
	if errors.Is(err, pgx.ErrNoRows) {
		return Grant{}, "no link", nil
	} else if err != nil {
		return Grant{}, "", err
	}
	digests, err := s.digests(ctx, []int64{site})
	if err != nil {
		return Grant{}, "", err
	}
	key, err := s.key.Secret(ctx)
	if err != nil {
		return Grant{}, "", err
	}
	want, _ := base64.RawURLEncoding.DecodeString(sign(key, req.ArtifactID, req.Platform, site, exp, row.Nonce, digests[site]))
	if !hmac.Equal(sig, want) {
		return Grant{}, "signature", nil
	}
	if !s.now().Before(exp) {
		return Grant{}, "expired", nil
	}
	a, err := s.catalog.Current(req.Platform)
	if err != nil || a.ID != req.ArtifactID {
		// Signed for an artifact the Engine no longer serves.
		return Grant{}, "artifact", nil
	}
	return Grant{SiteID: cairn.SiteID(site), Platform: req.Platform, Artifact: a, nonce: row.Nonce}, "", nil
}

// Counted records one complete download through the granted link (not
// counted when the link was revoked while the download ran).
func (s *Service) Counted(ctx context.Context, g Grant) error {
	_, err := s.store.InstallLinkCountDownload(ctx, db.InstallLinkCountDownloadParams{SiteID: g.SiteID, Platform: g.Platform, Nonce: g.nonce})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	return err
}

func parseExpiry(s string) (time.Time, bool) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC().Truncate(time.Second), true
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 0 {
		return time.Unix(n, 0).UTC(), true
	}
	return time.Time{}, false
}

// Token is the token form's path segment:
// <site_id>.<expires, Unix seconds>.<artifact_id>.<signature>.
func Token(site int64, expires time.Time, artifactID, signature string) string {
	return fmt.Sprintf("%d.%d.%s.%s", site, expires.Unix(), artifactID, signature)
}

// ParseToken splits a token-form segment into a Request for platform.
func ParseToken(token, platform string) Request {
	parts := strings.Split(token, ".")
	if len(parts) != 4 {
		return Request{Platform: platform}
	}
	return Request{Platform: platform, SiteID: parts[0], Expires: parts[1], ArtifactID: parts[2], Signature: parts[3]}
}
