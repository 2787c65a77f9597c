// Package enrollment is how a device joins: per-site enrollment codes, the
// signed enrollment request, the approval decision and the poll that hands
// out the device's first tokens (docs/api.md "Enrollment").
package enrollment

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/aegis"
	"github.com/cairn-rmm/cairn/internal/ratelimit"
)

// Code limits and defaults (docs/api.md "Enrollment codes").
const (
	DefaultCodeTTL  = 7 * 24 * time.Hour
	MaxCodeTTL      = 365 * 24 * time.Hour
	DefaultMaxUses  = 25
	MaxUsesLimit    = 100000
	minCodeTTL      = time.Minute
	codeRandomBytes = 20
)

// Code is an enrollment code as operators see it.
type Code struct {
	ID       int64        `json:"id"`
	Code     *string      `json:"code"`
	SiteID   cairn.SiteID `json:"site_id"`
	SiteName string       `json:"site_name,omitempty"`
	Expires  time.Time    `json:"expires_at"`
	MaxUses  int32        `json:"max_uses"`
	Uses     int32        `json:"uses"`
	// Status is active, expired or used_up.
	Status     string     `json:"status"`
	CreatedBy  string     `json:"created_by"`
	CreatedAt  time.Time  `json:"created_at"`
	RotatedAt  *time.Time `json:"rotated_at"`
	CodeStatus string     `json:"code_status"` // ok, or unreadable after a cipher reset
}

// CodeInput creates a code; zero values take the defaults.
type CodeInput struct {
	SiteID           cairn.SiteID
	ExpiresInSeconds *int64
	MaxUses          *int64
}

// Service holds enrollment's dependencies.
type Service struct {
	store  *db.Store
	cipher *aegis.Cipher
	now    func() time.Time
	cfg    Config
	nonces *nonces
}

// Config tunes enrollment.
type Config struct {
	// ApprovalTTL is how long a request waits for a decision (default 72 h).
	ApprovalTTL time.Duration
	// PollAfter is what the Engine tells agents to wait between polls.
	PollAfter time.Duration
	// RequestsPerAddress overrides the per-address request budget
	// (RequestsPerAddress); benchmarks enrolling thousands of simulated
	// agents from one address raise it.
	RequestsPerAddress ratelimit.Rule
	// Starter starts the approval workflow of a pending request.
	Starter ApprovalStarter
	Now     func() time.Time
}

// ApprovalStarter starts the durable approval of a pending request; the
// Temporal client implementation lives with the workflows.
type ApprovalStarter interface {
	StartApproval(ctx context.Context, approvalID string, expiresAt time.Time) error
}

// New returns the service. The nonce key is sealed by cipher and created
// on first use (once, shared by replicas).
func New(ctx context.Context, store *db.Store, cipher *aegis.Cipher, cfg Config) (*Service, error) {
	if cfg.ApprovalTTL <= 0 {
		cfg.ApprovalTTL = 72 * time.Hour
	}
	if cfg.PollAfter <= 0 {
		cfg.PollAfter = 5 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.RequestsPerAddress.Limit <= 0 {
		cfg.RequestsPerAddress = RequestsPerAddress
	}
	n := &nonces{store: store, key: aegis.NewServerKey(store.Queries, cipher, aegis.KeySpec{Name: "enroll-nonce-hmac", Size: 32}), now: cfg.Now}
	return &Service{store: store, cipher: cipher, now: cfg.Now, cfg: cfg, nonces: n}, nil
}

// CreateCode makes a code for a site in scope; the answer carries the code.
func (s *Service) CreateCode(ctx context.Context, scope cairn.SiteScope, in CodeInput, actor string) (Code, error) {
	var v cairn.Validation
	ttl := DefaultCodeTTL
	if in.ExpiresInSeconds != nil {
		ttl = time.Duration(*in.ExpiresInSeconds) * time.Second
		if ttl < minCodeTTL || ttl > MaxCodeTTL {
			v.Add("expires_in_seconds", fmt.Sprintf("must be between %d and %d", int(minCodeTTL.Seconds()), int(MaxCodeTTL.Seconds())))
		}
	}
	uses := int64(DefaultMaxUses)
	if in.MaxUses != nil {
		uses = *in.MaxUses
		if uses < 1 || uses > MaxUsesLimit {
			v.Add("max_uses", fmt.Sprintf("must be between 1 and %d", MaxUsesLimit))
		}
	}
	if in.SiteID <= 0 {
		v.Add("site_id", "is required")
	}
	if err := v.Err(); err != nil {
		return Code{}, err
	}
	if err := s.siteInScope(ctx, scope, in.SiteID); err != nil {
		return Code{}, err
	}
	plain := newCode()
	var row db.EnrollmentCode
	err := s.store.InTx(ctx, func(q *db.Queries) error {
		var err error
		row, err = q.EnrollmentCodeInsert(ctx, db.EnrollmentCodeInsertParams{
			SiteID: in.SiteID, CodeHash: hashCode(plain), CodeSealed: []byte{}, ExpiresAt: s.now().Add(ttl),
			MaxUses: int32(uses), CreatedBy: actor,
		})
		if err != nil {
			return err
		}
		row.CodeSealed, err = s.cipher.Seal([]byte(plain), codeAAD(row.ID))
		if err != nil {
			return err
		}
		return q.EnrollmentCodeSetSealed(ctx, db.EnrollmentCodeSetSealedParams{ID: row.ID, CodeSealed: row.CodeSealed})
	})
	if err != nil {
		return Code{}, err
	}
	return s.view(row, ""), nil
}

// ListCodes lists the codes of sites in scope, optionally of one site.
func (s *Service) ListCodes(ctx context.Context, scope cairn.SiteScope, siteID *int64) ([]Code, error) {
	rows, err := s.store.EnrollmentCodeList(ctx, db.EnrollmentCodeListParams{AllSites: scope.All, SiteIds: scope.IDs(), SiteID: siteID})
	if err != nil {
		return nil, err
	}
	out := make([]Code, 0, len(rows))
	for _, r := range rows {
		out = append(out, s.view(db.EnrollmentCode{
			ID: r.ID, SiteID: r.SiteID, CodeSealed: r.CodeSealed, ExpiresAt: r.ExpiresAt, MaxUses: r.MaxUses,
			Uses: r.Uses, CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt, RotatedAt: r.RotatedAt,
		}, r.SiteName))
	}
	return out, nil
}

// DeleteCode deletes a code in scope. Requests already made keep going.
func (s *Service) DeleteCode(ctx context.Context, scope cairn.SiteScope, id int64) error {
	if _, err := s.codeInScope(ctx, scope, id); err != nil {
		return err
	}
	_, err := s.store.EnrollmentCodeDelete(ctx, id)
	return err
}

// RotateCode replaces a code's value (the old one stops working at once)
// and resets its use count; site, expiry and budget stay.
func (s *Service) RotateCode(ctx context.Context, scope cairn.SiteScope, id int64) (Code, error) {
	if _, err := s.codeInScope(ctx, scope, id); err != nil {
		return Code{}, err
	}
	plain := newCode()
	sealed, err := s.cipher.Seal([]byte(plain), codeAAD(id))
	if err != nil {
		return Code{}, err
	}
	row, err := s.store.EnrollmentCodeRotate(ctx, db.EnrollmentCodeRotateParams{ID: id, CodeHash: hashCode(plain), CodeSealed: sealed})
	if err != nil {
		return Code{}, db.NotFound(err, "enrollment code %d not found", id)
	}
	return s.view(row, ""), nil
}

func (s *Service) codeInScope(ctx context.Context, scope cairn.SiteScope, id int64) (db.EnrollmentCode, error) {
	row, err := s.store.EnrollmentCodeGet(ctx, id)
	if err != nil {
		return row, db.NotFound(err, "enrollment code %d not found", id)
	}
	if !scope.Allows(row.SiteID) {
		return row, cairn.Errorf(cairn.ECodeNotFound, "enrollment code %d not found", id)
	}
	return row, nil
}

func (s *Service) siteInScope(ctx context.Context, scope cairn.SiteScope, siteID cairn.SiteID) error {
	if !scope.Allows(siteID) {
		return cairn.Invalid("site_id", "no such site")
	}
	if _, err := s.store.SiteGet(ctx, siteID); db.IsNoRows(err) {
		return cairn.Invalid("site_id", "no such site")
	} else if err != nil {
		return err
	}
	return nil
}

func (s *Service) view(r db.EnrollmentCode, siteName string) Code {
	c := Code{
		ID: r.ID, SiteID: r.SiteID, SiteName: siteName, Expires: r.ExpiresAt, MaxUses: r.MaxUses, Uses: r.Uses,
		CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt, RotatedAt: r.RotatedAt, CodeStatus: "ok", Status: "active",
	}
	switch {
	case !r.ExpiresAt.After(s.now()):
		c.Status = "expired"
	case r.Uses >= r.MaxUses:
		c.Status = "used_up"
	}
	if plain, err := s.cipher.Open(r.CodeSealed, codeAAD(r.ID)); err == nil {
		p := string(plain)
		c.Code = &p
	} else {
		c.CodeStatus = "unreadable"
	}
	return c
}

// newCode returns a fresh code: 160 random bits in lower-case base32, in
// groups of eight so it can be read out and typed.
func newCode() string {
	b := make([]byte, codeRandomBytes)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	raw := strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))
	var parts []string
	for len(raw) > 8 {
		parts, raw = append(parts, raw[:8]), raw[8:]
	}
	return strings.Join(append(parts, raw), "-")
}

// NormalizeCode makes a typed code comparable: case, spaces and the group
// dashes do not matter.
func NormalizeCode(c string) string {
	c = strings.ToLower(strings.TrimSpace(c))
	return strings.NewReplacer("-", "", " ", "").Replace(c)
}

func hashCode(c string) []byte {
	sum := sha256.Sum256([]byte("cairn-enrollment-code\x00" + NormalizeCode(c)))
	return sum[:]
}

func codeAAD(id int64) []byte { return []byte("enrollment_codes:" + strconv.FormatInt(id, 10)) }

// CreateRedeployCode makes the one-time code of an agent redeploy (issue
// 27 item 6) in q's transaction: one use, for siteID, valid ttl, bound to
// device guid, whose own key it admits without an operator's decision
// (Request). It returns the code's ID and the code.
func (s *Service) CreateRedeployCode(ctx context.Context, q *db.Queries, siteID cairn.SiteID, guid cairn.DeviceGUID, ttl time.Duration, actor string) (int64, string, error) {
	plain := newCode()
	g := string(guid)
	row, err := q.EnrollmentCodeInsertRedeploy(ctx, db.EnrollmentCodeInsertRedeployParams{SiteID: siteID, CodeHash: hashCode(plain),
		CodeSealed: []byte{}, ExpiresAt: s.now().Add(ttl), CreatedBy: actor, RedeployGuid: &g})
	if err != nil {
		return 0, "", err
	}
	sealed, err := s.cipher.Seal([]byte(plain), codeAAD(row.ID))
	if err != nil {
		return 0, "", err
	}
	if err := q.EnrollmentCodeSetSealed(ctx, db.EnrollmentCodeSetSealedParams{ID: row.ID, CodeSealed: sealed}); err != nil {
		return 0, "", err
	}
	return row.ID, plain, nil
}
