package enrollment

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base32"
	"encoding/base64"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
	"github.com/cairn-rmm/cairn/internal/ratelimit"
)

// Rate limits of enrollment requests (docs/api.md "Enrollment").
// RequestsPerFingerprint counts per fingerprint AND key: machines made
// from one image share every hardware value (machine-id, SMBIOS UUID), so
// a fingerprint alone would stop a VDI pool at its tenth machine, while
// one agent (one key) retrying in a loop is still stopped. A script that
// makes a new key per request is bounded by RequestsPerAddress and by the
// enrollment code's own use limit (max_uses, 25 by default).
var (
	RequestsPerAddress     = ratelimit.Rule{Limit: 30, Window: 10 * time.Minute}
	RequestsPerFingerprint = ratelimit.Rule{Limit: 10, Window: 10 * time.Minute}
)

// Field limits.
const (
	maxHostname    = 253
	maxFingerprint = 128
	maxShortField  = 200
)

// Nonce issues a nonce for an enrollment request (aegis_locked while the
// cipher is: the nonce key is sealed).
func (s *Service) Nonce(ctx context.Context) (proto.EnrollNonce, error) {
	n, exp, err := s.nonces.Issue(ctx)
	return proto.EnrollNonce{Nonce: n, ExpiresAt: exp}, err
}

// Request records a signed enrollment request: pending, or approved at
// once while the site's auto-approval is on. Asking again with the same
// key while a request is open returns that request.
func (s *Service) Request(ctx context.Context, req proto.EnrollRequest, remoteAddr string) (proto.EnrollResponse, error) {
	pub, err := validateRequest(req)
	if err != nil {
		return proto.EnrollResponse{}, err
	}
	limiter := ratelimit.New(s.store.Queries)
	if err := limiter.Hit(ctx, "enroll-addr:"+remoteAddr, s.cfg.RequestsPerAddress); err != nil {
		return proto.EnrollResponse{}, err
	}
	if err := limiter.Hit(ctx, "enroll-fp:"+req.Fingerprint+":"+devicetrust.Thumbprint(pub), RequestsPerFingerprint); err != nil {
		return proto.EnrollResponse{}, err
	}
	sig, _ := base64.StdEncoding.DecodeString(req.Signature)
	if !ed25519.Verify(pub, proto.EnrollSigningMessage(req.Nonce, req.Code+req.CloneTicket, req.Hostname, req.Fingerprint, req.PublicKey), sig) {
		return proto.EnrollResponse{}, cairn.Invalid("signature", "does not verify with public_key over the nonce")
	}
	if err := s.nonces.Use(ctx, req.Nonce); err != nil {
		return proto.EnrollResponse{}, err
	}
	jkt := devicetrust.Thumbprint(pub)
	now := s.now()
	if open, err := s.store.ApprovalOpenByJKT(ctx, db.ApprovalOpenByJKTParams{Jkt: jkt, Now: now}); err == nil {
		return s.response(open), nil
	} else if !db.IsNoRows(err) {
		return proto.EnrollResponse{}, err
	}

	readmission, err := NeedsAdmin(ctx, s.store.Queries, jkt)
	if err != nil {
		return proto.EnrollResponse{}, err
	}
	var row db.DeviceApproval
	if req.CloneTicket != "" {
		row, err = s.requestClone(ctx, req, pub, jkt, remoteAddr, readmission, now)
		if err != nil {
			return proto.EnrollResponse{}, err
		}
		return s.response(row), nil
	}
	err = s.store.InTx(ctx, func(q *db.Queries) error {
		code, err := q.EnrollmentCodeConsume(ctx, db.EnrollmentCodeConsumeParams{CodeHash: hashCode(req.Code), Now: now})
		if db.IsNoRows(err) {
			return cairn.Invalid("code", "is unknown, expired or used up")
		}
		if err != nil {
			return err
		}
		site, err := q.SiteGet(ctx, code.SiteID)
		if err != nil {
			return err
		}
		p := db.ApprovalInsertParams{
			ID: uuid.NewString(), SiteID: code.SiteID, EnrollmentCodeID: &code.ID, Hostname: req.Hostname,
			OperatingSystem: req.OS, AgentVersion: req.AgentVersion, Fingerprint: req.Fingerprint,
			PublicKey: pub, Jkt: jkt, RemoteAddr: remoteAddr, Status: proto.ApprovalPending,
			ExpiresAt: now.Add(s.cfg.ApprovalTTL), Readmission: readmission,
		}
		// A revoked, quarantined or purged key is never let back in by
		// auto-approval: that is an administrator's decision.
		if !readmission && site.AutoApproveUntil != nil && site.AutoApproveUntil.After(now) {
			by := "auto-approval"
			p.Status, p.AutoApproved, p.DecidedAt, p.DecidedBy = proto.ApprovalApproved, true, &now, &by
		}
		// A redeploy's code was asked for by an operator for exactly this
		// device: its own key (still trusted) is in at once.
		if ok, err := redeployOf(ctx, q, code, jkt, readmission); err != nil {
			return err
		} else if ok {
			by := "redeploy"
			p.Status, p.AutoApproved, p.DecidedAt, p.DecidedBy = proto.ApprovalApproved, true, &now, &by
		}
		row, err = q.ApprovalInsert(ctx, p)
		return err
	})
	if err != nil {
		return proto.EnrollResponse{}, err
	}
	if row.Status == proto.ApprovalPending && s.cfg.Starter != nil {
		if err := s.cfg.Starter.StartApproval(ctx, row.ID, row.ExpiresAt); err != nil {
			// Without its workflow nobody could decide the request: undo it
			// so the agent's retry starts clean.
			_, _ = s.store.ApprovalDecide(context.WithoutCancel(ctx), db.ApprovalDecideParams{ID: row.ID, Status: proto.ApprovalExpired, Now: &now})
			_ = s.store.EnrollmentCodeRelease(context.WithoutCancel(ctx), *row.EnrollmentCodeID)
			return proto.EnrollResponse{}, fmt.Errorf("enrollment: start approval: %w", err)
		}
	}
	return s.response(row), nil
}

func (s *Service) response(a db.DeviceApproval) proto.EnrollResponse {
	return proto.EnrollResponse{ApprovalID: a.ID, Status: a.Status, PollAfterSeconds: int(s.cfg.PollAfter.Seconds())}
}

func validateRequest(req proto.EnrollRequest) (ed25519.PublicKey, error) {
	var v cairn.Validation
	pub, err := base64.StdEncoding.DecodeString(req.PublicKey)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		v.Add("public_key", "must be a base64 Ed25519 public key")
	}
	switch {
	case req.CloneTicket != "" && req.Code != "":
		v.Add("clone_ticket", "must not come with a code")
	case req.CloneTicket != "" && (!strings.HasPrefix(req.CloneTicket, devicetrust.CloneTicketPrefix) || len(req.CloneTicket) > maxShortField):
		v.Add("clone_ticket", "is not a clone ticket")
	case req.CloneTicket == "" && NormalizeCode(req.Code) == "":
		v.Add("code", "is required")
	}
	checkText(&v, "hostname", req.Hostname, maxHostname, true)
	checkText(&v, "fingerprint", req.Fingerprint, maxFingerprint, true)
	checkText(&v, "os", req.OS, maxShortField, false)
	checkText(&v, "agent_version", req.AgentVersion, maxShortField, false)
	if req.Nonce == "" {
		v.Add("nonce", "is required")
	}
	if sig, err := base64.StdEncoding.DecodeString(req.Signature); err != nil || len(sig) != ed25519.SignatureSize {
		v.Add("signature", "must be a base64 Ed25519 signature")
	}
	return pub, v.Err()
}

func checkText(v *cairn.Validation, field, val string, max int, required bool) {
	switch {
	case required && strings.TrimSpace(val) == "":
		v.Add(field, "is required")
	case len(val) > max:
		v.Add(field, fmt.Sprintf("must be at most %d characters", max))
	case strings.ContainsFunc(val, unicode.IsControl):
		v.Add(field, "must not contain control characters")
	}
}

// NeedsAdmin reports whether the key with thumbprint jkt belongs to a
// device that is not active (revoked or quarantined) or was purged: such a
// key comes back only through an administrator's explicit approval.
func NeedsAdmin(ctx context.Context, q *db.Queries, jkt string) (bool, error) {
	d, err := q.DeviceGetByJKT(ctx, jkt)
	if err == nil {
		return d.TrustState != devicetrust.TrustActive, nil
	}
	if !db.IsNoRows(err) {
		return false, err
	}
	if _, err := q.DevicePurgeGetByJKT(ctx, jkt); err == nil {
		return true, nil
	} else if !db.IsNoRows(err) {
		return false, err
	}
	return false, nil
}

// Decide moves a pending request to approved, denied or expired. It is the
// approval workflow's activity; a request no longer pending is left as it
// is and returned. admin says the decision is an administrator's.
func (s *Service) Decide(ctx context.Context, approvalID, status, actor string, admin bool) (db.DeviceApproval, error) {
	switch status {
	case proto.ApprovalApproved, proto.ApprovalDenied, proto.ApprovalExpired:
	default:
		return db.DeviceApproval{}, fmt.Errorf("enrollment: cannot decide %q", status)
	}
	now := s.now()
	row, err := s.store.ApprovalDecide(ctx, db.ApprovalDecideParams{ID: approvalID, Status: status, Now: &now, DecidedBy: &actor,
		AdminApproved: admin && status == proto.ApprovalApproved})
	if db.IsNoRows(err) {
		row, err = s.store.ApprovalGet(ctx, approvalID)
	}
	return row, db.NotFound(err, "approval %s not found", approvalID)
}

// Approval is a request as operators see it.
type Approval struct {
	ID              string       `json:"id"`
	Hostname        string       `json:"hostname"`
	SiteID          cairn.SiteID `json:"site_id"`
	SiteName        string       `json:"site_name,omitempty"`
	Status          string       `json:"status"`
	Fingerprint     string       `json:"fingerprint"`
	KeyThumbprint   string       `json:"key_thumbprint"`
	OperatingSystem string       `json:"operating_system"`
	AgentVersion    string       `json:"agent_version"`
	RemoteAddr      string       `json:"remote_addr"`
	AutoApproved    bool         `json:"auto_approved"`
	// Readmission: the key belongs to a revoked, quarantined or purged
	// device, so only an administrator may approve it.
	Readmission bool              `json:"readmission"`
	RequestedAt time.Time         `json:"requested_at"`
	ExpiresAt   time.Time         `json:"expires_at"`
	DecidedAt   *time.Time        `json:"decided_at"`
	DecidedBy   *string           `json:"decided_by"`
	DeviceGUID  *cairn.DeviceGUID `json:"device_guid"`
}

// ApprovalView converts a row.
func ApprovalView(a db.DeviceApproval, siteName string) Approval {
	return Approval{
		ID: a.ID, Hostname: a.Hostname, SiteID: a.SiteID, SiteName: siteName, Status: a.Status, Fingerprint: a.Fingerprint,
		KeyThumbprint: a.Jkt, OperatingSystem: a.OperatingSystem, AgentVersion: a.AgentVersion, RemoteAddr: a.RemoteAddr,
		AutoApproved: a.AutoApproved, Readmission: a.Readmission, RequestedAt: a.RequestedAt, ExpiresAt: a.ExpiresAt,
		DecidedAt: a.DecidedAt, DecidedBy: a.DecidedBy, DeviceGUID: a.DeviceGuid,
	}
}

// ListApprovals lists requests of sites in scope, optionally by status.
func (s *Service) ListApprovals(ctx context.Context, scope cairn.SiteScope, status string) ([]Approval, error) {
	var st *string
	if status != "" {
		switch status {
		case proto.ApprovalPending, proto.ApprovalApproved, proto.ApprovalDenied, proto.ApprovalExpired, proto.ApprovalEnrolled:
			st = &status
		default:
			return nil, cairn.Invalid("status", "must be pending, approved, denied, expired or enrolled")
		}
	}
	rows, err := s.store.ApprovalList(ctx, db.ApprovalListParams{AllSites: scope.All, SiteIds: scope.IDs(), Status: st})
	if err != nil {
		return nil, err
	}
	out := make([]Approval, 0, len(rows))
	for _, r := range rows {
		out = append(out, ApprovalView(db.DeviceApproval{
			ID: r.ID, SiteID: r.SiteID, EnrollmentCodeID: r.EnrollmentCodeID, Hostname: r.Hostname, OperatingSystem: r.OperatingSystem,
			AgentVersion: r.AgentVersion, Fingerprint: r.Fingerprint, Jkt: r.Jkt, RemoteAddr: r.RemoteAddr, Status: r.Status,
			AutoApproved: r.AutoApproved, Readmission: r.Readmission, RequestedAt: r.RequestedAt, ExpiresAt: r.ExpiresAt, DecidedAt: r.DecidedAt,
			DecidedBy: r.DecidedBy, DeviceGuid: r.DeviceGuid,
		}, r.SiteName))
	}
	return out, nil
}

// CheckApprover refuses a non-administrator's approval of a readmission:
// a request flagged as one when it was made, or whose key's device has
// since been revoked, quarantined or purged.
func (s *Service) CheckApprover(ctx context.Context, a db.DeviceApproval, admin bool) error {
	if admin {
		return nil
	}
	need := a.Readmission
	if !need {
		var err error
		if need, err = NeedsAdmin(ctx, s.store.Queries, a.Jkt); err != nil {
			return err
		}
	}
	if need {
		return cairn.Errorf(cairn.ECodeForbidden,
			"%s belongs to a revoked, quarantined or purged device; only an administrator may approve it", a.Hostname)
	}
	return nil
}

// PendingInScope returns a pending request the caller may decide.
func (s *Service) PendingInScope(ctx context.Context, scope cairn.SiteScope, id string) (db.DeviceApproval, error) {
	a, err := s.store.ApprovalGet(ctx, id)
	if err != nil {
		return a, db.NotFound(err, "approval %s not found", id)
	}
	if !scope.Allows(a.SiteID) {
		return a, cairn.Errorf(cairn.ECodeNotFound, "approval %s not found", id)
	}
	if a.Status != proto.ApprovalPending || !a.ExpiresAt.After(s.now()) {
		return a, cairn.Errorf(cairn.ECodeConflict, "approval %s is %s, not pending", id, effectiveStatus(a, s.now()))
	}
	return a, nil
}

// Get returns a request (for waiting on a decision).
func (s *Service) Get(ctx context.Context, id string) (db.DeviceApproval, error) {
	a, err := s.store.ApprovalGet(ctx, id)
	return a, db.NotFound(err, "approval %s not found", id)
}

func effectiveStatus(a db.DeviceApproval, now time.Time) string {
	if a.Status == proto.ApprovalPending && !a.ExpiresAt.After(now) {
		return proto.ApprovalExpired
	}
	return a.Status
}

// newAgentID names the agent installation (distinct from the device GUID,
// which survives re-enrollment of the same key).
func newAgentID() string {
	b := make([]byte, 10)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return "agt_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))
}

// redeployOf reports whether code is a redeploy's code and the key jkt is
// the key of the device it was made for, still trusted.
func redeployOf(ctx context.Context, q *db.Queries, code db.EnrollmentCode, jkt string, readmission bool) (bool, error) {
	if code.RedeployGuid == nil || readmission {
		return false, nil
	}
	d, err := q.DeviceGetByJKT(ctx, jkt)
	if db.IsNoRows(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return string(d.Guid) == *code.RedeployGuid && d.TrustState == devicetrust.TrustActive, nil
}
