package devicetrust

// Device access and refresh tokens (docs/api.md "Device tokens"). Access
// tokens are EdDSA JWTs bound to the device key (cnf.jkt) and carrying the
// device's token version, so a trust change (which bumps the version)
// stops every token minted before it. Refresh tokens are random, stored
// hashed and rotated on every use; presenting a used one (with the device's
// key, outside the retry grace) revokes its whole family, because only a
// thief or a replay would do that.

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/aegis"
)

// Token lifetimes.
const (
	AccessTokenTTL  = 15 * time.Minute
	RefreshTokenTTL = 30 * 24 * time.Hour
	tokenAudience   = "cairn-agent"
	signingKeyName  = "device-token-ed25519"
)

// Error codes of device authentication (the agent acts on them; see
// agent/proto).
const (
	ECodeInvalidAccessToken  = "invalid_access_token"
	ECodeTokenExpired        = "token_expired"
	ECodeTokenVersion        = "token_version_mismatch"
	ECodeTokenRevoked        = "token_revoked"
	ECodeInvalidRefreshToken = "invalid_refresh_token"
	ECodeDeviceNotFound      = "device_not_found"
	ECodeDevicePurged        = "device_purged"
	ECodeDeviceRevoked       = "device_revoked"
	ECodeDeviceQuarantined   = "device_quarantined"
	ECodeFingerprint         = "fingerprint_mismatch"
)

// Trust states (SPEC "Device trust state"); purged devices have no row.
const (
	TrustActive      = "active"
	TrustQuarantined = "quarantined"
	TrustRevoked     = "revoked"
)

// AccessClaims are an access token's claims.
type AccessClaims struct {
	CNF struct {
		JKT string `json:"jkt"`
	} `json:"cnf"`
	TokenVersion int32        `json:"tv"`
	SiteID       cairn.SiteID `json:"site_id"`
	jwt.RegisteredClaims
}

// Tokens issues and checks device tokens. The signing key's seed is
// sealed by the master cipher (issue 13 item 14), so minting needs an
// unlocked cipher; its public half is stored in the clear, so a process
// whose cipher is locked (a site worker) still checks tokens.
type Tokens struct {
	store  *db.Store
	key    *aegis.Ed25519Key
	issuer string
	now    func() time.Time
}

// NewTokens returns the token service; the signing key is created on
// first use, once for all replicas. issuer is the Engine's public URL.
func NewTokens(store *db.Store, cipher *aegis.Cipher, issuer string, now func() time.Time) *Tokens {
	if now == nil {
		now = time.Now
	}
	return &Tokens{store: store, key: aegis.NewEd25519Key(store.Queries, cipher, signingKeyName), issuer: issuer, now: now}
}

// Issued is a fresh token pair.
type Issued struct {
	AccessToken  string
	ExpiresAt    time.Time
	RefreshToken string
}

// Wire is a pair as the agent receives it (agent/proto), with expires_in
// counted on the Engine's clock.
func (t *Tokens) Wire(i Issued) proto.Tokens {
	return proto.Tokens{
		AccessToken: i.AccessToken, TokenType: proto.AuthScheme, ExpiresAt: i.ExpiresAt,
		ExpiresIn: int(i.ExpiresAt.Sub(t.now()).Round(time.Second).Seconds()), RefreshToken: i.RefreshToken,
	}
}

// Now is the clock tokens are minted and checked on.
func (t *Tokens) Now() time.Time { return t.now() }

// AccessValidUntil is when the newest access token issued to a device
// expires, given the expiry of its newest live refresh token: Issue and
// Refresh mint the two together, so the refresh token dates the pair. A
// socket opened with an access token outlives that token only while this
// moves on, that is while the device keeps refreshing.
func AccessValidUntil(refreshExpiresAt time.Time) time.Time {
	return refreshExpiresAt.Add(AccessTokenTTL - RefreshTokenTTL)
}

// Access mints an access token for the device.
func (t *Tokens) Access(ctx context.Context, guid, jkt string, version int32, siteID cairn.SiteID) (string, time.Time, error) {
	priv, err := t.key.Signer(ctx)
	if err != nil {
		return "", time.Time{}, err
	}
	now := t.now()
	exp := now.Add(AccessTokenTTL)
	c := AccessClaims{TokenVersion: version, SiteID: siteID}
	c.CNF.JKT = jkt
	c.RegisteredClaims = jwt.RegisteredClaims{
		Issuer: t.issuer, Subject: guid, Audience: jwt.ClaimStrings{tokenAudience},
		IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now.Add(-30 * time.Second)),
		ExpiresAt: jwt.NewNumericDate(exp), ID: randomToken(12),
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodEdDSA, c).SignedString(priv)
	return s, exp, err
}

// ParseAccess checks an access token's signature, issuer, audience and
// expiry. The device's state (version, trust) is the caller's to check.
func (t *Tokens) ParseAccess(ctx context.Context, token string) (*AccessClaims, error) {
	c, err, keyErr := t.parseAccess(ctx, token, false)
	if errors.Is(err, jwt.ErrTokenSignatureInvalid) {
		c, err, keyErr = t.parseAccess(ctx, token, true)
	}
	if keyErr != nil {
		return nil, keyErr
	}
	switch {
	case err == nil:
	case errors.Is(err, jwt.ErrTokenExpired):
		return nil, cairn.Errorf(ECodeTokenExpired, "the access token has expired; refresh it")
	default:
		return nil, cairn.Errorf(ECodeInvalidAccessToken, "the access token is not valid")
	}
	if c.Subject == "" || c.CNF.JKT == "" {
		return nil, cairn.Errorf(ECodeInvalidAccessToken, "the access token is not valid")
	}
	return c, nil
}

// parseAccess returns the token's verification error apart from a failure
// to read the key.
func (t *Tokens) parseAccess(ctx context.Context, token string, stale bool) (*AccessClaims, error, error) {
	pub, err := t.key.Verifier(ctx, stale)
	if err != nil {
		return nil, nil, err
	}
	if pub == nil {
		return nil, jwt.ErrTokenSignatureInvalid, nil
	}
	var c AccessClaims
	_, err = jwt.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return pub, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodEdDSA.Alg()}), jwt.WithIssuer(t.issuer),
		jwt.WithAudience(tokenAudience), jwt.WithTimeFunc(t.now), jwt.WithExpirationRequired())
	return &c, err, nil
}

// NewRefresh stores and returns a new refresh token of family (a new
// family when empty). The token names its device so a refresh after a
// purge can say device_purged even though the token rows are gone.
func (t *Tokens) NewRefresh(ctx context.Context, q *db.Queries, guid, family string) (string, error) {
	return t.newRefresh(ctx, q, guid, family, nil)
}

// newRefresh is NewRefresh recording the token it replaces (parent, the
// hash of the used token; nil for a new family).
func (t *Tokens) newRefresh(ctx context.Context, q *db.Queries, guid, family string, parent []byte) (string, error) {
	if family == "" {
		family = randomToken(16)
	}
	tok := guid + "." + randomToken(32)
	err := q.RefreshTokenInsert(ctx, db.RefreshTokenInsertParams{
		TokenHash: hashToken(tok), DeviceGuid: cairn.DeviceGUID(guid), FamilyID: family, ExpiresAt: t.now().Add(RefreshTokenTTL),
		ParentHash: parent,
	})
	return tok, err
}

// Issue mints a token pair for an enrolled device, starting a new refresh
// family (enrollment, re-enrollment).
func (t *Tokens) Issue(ctx context.Context, q *db.Queries, d db.Device) (Issued, error) {
	access, exp, err := t.Access(ctx, string(d.Guid), d.Jkt, d.TokenVersion, d.SiteID)
	if err != nil {
		return Issued{}, err
	}
	refresh, err := t.NewRefresh(ctx, q, string(d.Guid), "")
	if err != nil {
		return Issued{}, err
	}
	return Issued{AccessToken: access, ExpiresAt: exp, RefreshToken: refresh}, nil
}

// RefreshRetryGrace is how long after a refresh token's use a retry with it
// (signed by the device's key) still gets a pair: the answer to the first
// use may have been lost (a dropped connection, an Engine restart), and an
// agent that retries then must not lose its token family. It covers the
// agent's request timeout and a few of its backoff steps.
const RefreshRetryGrace = 5 * time.Minute

// Refresh rotates a refresh token presented with a DPoP proof made by the
// key with thumbprint jkt, and returns a new pair. The refusals follow
// SPEC "Agent-side behavior" item 8: unknown tokens and devices are
// recoverable (a restored or blank Engine), everything else is final.
//
// The key is checked before anything else: a token presented without the
// device's key changes nothing, so a stolen old refresh token alone cannot
// revoke the device's family. A used token presented again by the key
// holder within RefreshRetryGrace, while its successor is still unused, is
// a retry after a lost answer: the unused successor is retired and a new
// pair issued. A used token presented again by the key holder from another boot
// than the one that used it, or with another fingerprint than the
// device's, is a copy of the agent (a cloned disk): the copy is answered
// device_cloned with a clone ticket and the family stays with the holder
// that used the token (docs/architecture.md "Device identity and
// clones"). Any other reuse revokes the whole family.
func (t *Tokens) Refresh(ctx context.Context, token, fingerprint, bootID, jkt string) (string, Issued, error) {
	guid, _, ok := strings.Cut(token, ".")
	if !ok || guid == "" {
		return "", Issued{}, cairn.Errorf(ECodeInvalidRefreshToken, "the refresh token is not known")
	}
	now := t.now()
	var out Issued
	err := t.store.InTx(ctx, func(q *db.Queries) error {
		row, err := q.RefreshTokenGetForUpdate(ctx, hashToken(token))
		if db.IsNoRows(err) {
			return t.unknownRefresh(ctx, q, cairn.DeviceGUID(guid))
		}
		if err != nil {
			return err
		}
		d, err := q.DeviceGetByGUID(ctx, row.DeviceGuid)
		if db.IsNoRows(err) {
			return cairn.Errorf(ECodeDeviceNotFound, "the device is not enrolled here")
		}
		if err != nil {
			return err
		}
		if subtle.ConstantTimeCompare([]byte(d.Jkt), []byte(jkt)) != 1 {
			return cairn.Errorf(cairn.ECodeInvalidDPoPProof, "DPoP proof key does not belong to this device")
		}
		retry := false
		switch {
		case row.RevokedAt != nil:
			return cairn.Errorf(ECodeTokenRevoked, "the refresh token was revoked")
		case row.UsedAt != nil:
			later, err := q.RefreshTokenSuccessorUsed(ctx, row.TokenHash)
			if err != nil {
				return err
			}
			if forked(row, d, fingerprint, bootID) {
				return cloneError{guid: d.Guid, siteID: d.SiteID, bootID: bootID, usedBy: row.UsedBootID,
					fingerprint: d.Fingerprint != "" && fingerprint != d.Fingerprint}
			}
			if later || now.Sub(*row.UsedAt) > RefreshRetryGrace {
				// A used token again, by the key holder, after its answer
				// was evidently received (or long after): two holders of
				// the device's key and family. The family is revoked after
				// this transaction (which rolls back on any refusal).
				return reuseError{family: row.FamilyID}
			}
			retry = true
		case !row.ExpiresAt.After(now):
			return cairn.Errorf(ECodeTokenExpired, "the refresh token has expired")
		}
		switch {
		case d.Fingerprint != "" && fingerprint != d.Fingerprint:
			return cairn.Errorf(ECodeFingerprint, "the device fingerprint does not match its enrollment")
		case d.TrustState == TrustRevoked:
			return cairn.Errorf(ECodeDeviceRevoked, "the device was revoked")
		case d.TrustState == TrustQuarantined:
			return cairn.Errorf(ECodeDeviceQuarantined, "the device is quarantined")
		}
		if retry {
			// The lost answer's successor is never used: retire it.
			if err := q.RefreshTokenRetireSuccessors(ctx, db.RefreshTokenRetireSuccessorsParams{Now: &now, TokenHash: row.TokenHash}); err != nil {
				return err
			}
		} else {
			n, err := q.RefreshTokenMarkUsed(ctx, db.RefreshTokenMarkUsedParams{Now: &now, UsedBootID: bootID, TokenHash: row.TokenHash})
			if err != nil {
				return err
			}
			if n == 0 {
				return cairn.Errorf(ECodeTokenRevoked, "the refresh token was used concurrently")
			}
		}
		access, exp, err := t.Access(ctx, string(d.Guid), d.Jkt, d.TokenVersion, d.SiteID)
		if err != nil {
			return err
		}
		refresh, err := t.newRefresh(ctx, q, string(d.Guid), row.FamilyID, row.TokenHash)
		if err != nil {
			return err
		}
		out = Issued{AccessToken: access, ExpiresAt: exp, RefreshToken: refresh}
		return nil
	})
	var clone cloneError
	if errors.As(err, &clone) {
		detail := fmt.Sprintf("used_by_boot_id=%s fingerprint_differs=%t", clone.usedBy, clone.fingerprint)
		return guid, Issued{}, IssueClone(ctx, t.store, Clone{Device: clone.guid, SiteID: clone.siteID,
			BootID: clone.bootID, Reason: CloneReasonRefresh, Detail: detail}, now)
	}
	var reuse reuseError
	if errors.As(err, &reuse) {
		if err := t.store.RefreshTokenRevokeFamily(ctx, db.RefreshTokenRevokeFamilyParams{Now: &now, FamilyID: reuse.family}); err != nil {
			return guid, Issued{}, err
		}
		return guid, Issued{}, cairn.Errorf(ECodeTokenRevoked, "the refresh token was already used; every token of its family is revoked")
	}
	if err != nil {
		return guid, Issued{}, err
	}
	return guid, out, nil
}

// forked reports a used token presented again by a copy of the agent: a
// boot other than the one that used it (both known), or a fingerprint
// other than the enrolled one.
func forked(row db.RefreshToken, d db.DeviceGetByGUIDRow, fingerprint, bootID string) bool {
	if d.Fingerprint != "" && fingerprint != d.Fingerprint {
		return true
	}
	return bootID != "" && row.UsedBootID != "" && bootID != row.UsedBootID
}

// cloneError reports a used refresh token presented by a copy.
type cloneError struct {
	guid        cairn.DeviceGUID
	siteID      cairn.SiteID
	bootID      string
	usedBy      string
	fingerprint bool
}

func (cloneError) Error() string { return "refresh token presented by a copy of the device" }

// reuseError reports a used refresh token presented again.
type reuseError struct{ family string }

func (reuseError) Error() string { return "refresh token reused" }

// unknownRefresh explains a token the Engine does not hold: the device was
// purged (final), or the Engine does not know the device or the token
// (recoverable: a restored or blank Engine).
func (t *Tokens) unknownRefresh(ctx context.Context, q *db.Queries, guid cairn.DeviceGUID) error {
	if _, err := q.DevicePurgeGet(ctx, guid); err == nil {
		return cairn.Errorf(ECodeDevicePurged, "the device was purged; it must enroll again")
	} else if !db.IsNoRows(err) {
		return err
	}
	if _, err := q.DeviceGetByGUID(ctx, guid); db.IsNoRows(err) {
		return cairn.Errorf(ECodeDeviceNotFound, "the device is not enrolled here")
	} else if err != nil {
		return err
	}
	return cairn.Errorf(ECodeInvalidRefreshToken, "the refresh token is not known")
}

// DeleteExpired removes refresh tokens past their expiry.
func (t *Tokens) DeleteExpired(ctx context.Context) (int64, error) {
	return t.store.RefreshTokenDeleteExpired(ctx, t.now())
}

func hashToken(tok string) []byte {
	sum := sha256.Sum256([]byte(tok))
	return sum[:]
}

func randomToken(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}
