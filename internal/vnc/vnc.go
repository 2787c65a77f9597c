// Package vnc is the Engine's remote desktop over VNC (issue 23; SPEC
// "Remote desktop, shell, tunnel", "Remote desktop rules" 1, 2, 6-8;
// docs/architecture.md "Remote desktop (VNC)"): the session records, the
// SERVICE_VNC_* settings, and the gateway that speaks RFB to the agent's
// server through the Engine's user-space tunnel and relays the desktop to
// the browser's WebSocket. The password never leaves the gateway: it is
// asked of the agent (vnc_credential_request, sealed to the session's
// one-time key) only when the browser attaches to a live session.
package vnc

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devices"
)

// Error codes (SPEC "Errors"; docs/api.md "Remote desktop").
const (
	ECodeNoRFBBanner        = "vnc_backend_no_rfb_banner"
	ECodePasswordNotEnabled = "vnc_password_not_enabled"
	ECodeAuthLockout        = "vnc_auth_lockout"
	ECodeAuthFailed         = "vnc_auth_failed"
	// ECodeBackendNotReady: the agent's tunnel or VNC role did not become
	// ready within the readiness wait.
	ECodeBackendNotReady = "vnc_backend_not_ready"
	// ECodeEstablishTimeout: the establishment passed its deadline
	// (SERVICE_VNC_ESTABLISH_DEADLINE_SECONDS).
	ECodeEstablishTimeout = "vnc_establish_timeout"
	// ECodeTokenInvalid: a browser socket whose token is wrong, spent,
	// expired or not the operator's.
	ECodeTokenInvalid = "vnc_token_invalid"
	// ECodeSessionEnded: the session is over (stop, deadline, failure).
	ECodeSessionEnded = "vnc_session_ended"
	// ECodeAuthRetryInProgress, ECodeAuthRetrySettling: another
	// vnc_auth_retry of the device is establishing (or live), or has just
	// ended and settles (rule 7); both carry retry_after_seconds.
	ECodeAuthRetryInProgress = "vnc_auth_retry_in_progress"
	ECodeAuthRetrySettling   = "vnc_auth_retry_settling"
)

// ReasonAuthRetry is establish's reason after an explicit auth failure:
// the agent rotates its credential before handing it over (rule 7).
const ReasonAuthRetry = "vnc_auth_retry"

// Session statuses.
const (
	StatusEstablishing = "establishing"
	StatusReady        = "ready"
	StatusLive         = "live"
	StatusEnded        = "ended"
)

// Protocols and qualities.
const (
	ProtocolVNC    = "vnc"
	QualitySpeed   = "speed"
	QualityQuality = "quality"
)

// MaxEstablishDeadline is the establish deadline's default and maximum
// (SPEC "Limits").
const MaxEstablishDeadline = 75 * time.Second

// Config is the SERVICE_VNC_* settings this slice honours.
type Config struct {
	// EstablishDeadline bounds an establishment (default and max 75 s).
	EstablishDeadline time.Duration
	// ReadyWait bounds the wait for the agent's tunnel and role (60 s).
	ReadyWait time.Duration
	// StartReadyWait bounds vnc_start (SERVICE_VNC_START_READY_WAIT_SECONDS).
	StartReadyWait time.Duration
	// RFBReadyWait bounds the banner probe (SERVICE_VNC_RFB_READY_WAIT_SECONDS).
	RFBReadyWait time.Duration
	// Preflight runs the security-type preflight (on unless
	// SERVICE_VNC_SECURITY_PREFLIGHT=0), within PreflightTimeout.
	Preflight        bool
	PreflightTimeout time.Duration
	// CredentialWait bounds vnc_credential_request
	// (SERVICE_VNC_LIVE_CREDENTIAL_WAIT_SECONDS).
	CredentialWait time.Duration
	// StopDebounce is how long after the browser leaves the session (and
	// the agent's server) stays for a reconnect (SERVICE_VNC_STOP_DEBOUNCE_SECONDS).
	StopDebounce time.Duration
	// TokenTTL is how long the browser's one-time token is good for.
	TokenTTL time.Duration
	// AuthRetryCooldown is how long a vnc_auth_retry settles after its
	// session ended before another may rotate the credential
	// (SERVICE_VNC_AUTH_RETRY_COOLDOWN_SECONDS; capped by the deadline).
	AuthRetryCooldown time.Duration
	// AuthProbe runs the diagnostic password-authentication probe at
	// every establish (SERVICE_VNC_AUTH_PROBE=1; rule 7), not only when
	// the request asks for it.
	AuthProbe bool
}

// DefaultConfig are the defaults.
func DefaultConfig() Config {
	return Config{EstablishDeadline: MaxEstablishDeadline, ReadyWait: 60 * time.Second, StartReadyWait: 30 * time.Second,
		RFBReadyWait: 10 * time.Second, Preflight: true, PreflightTimeout: 5 * time.Second, CredentialWait: 20 * time.Second,
		StopDebounce: 15 * time.Second, TokenTTL: 60 * time.Second, AuthRetryCooldown: 30 * time.Second}
}

// ConfigFromEnv reads the SERVICE_VNC_* settings; per-step waits are
// clipped to the establish deadline.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := DefaultConfig()
	secs := func(name string, dst *time.Duration, lo, hi int) error {
		v := getenv(name)
		if v == "" {
			return nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("%s must be whole seconds from %d to %d, got %q", name, lo, hi, v)
		}
		*dst = time.Duration(n) * time.Second
		return nil
	}
	for _, s := range []struct {
		name   string
		dst    *time.Duration
		lo, hi int
	}{
		{"SERVICE_VNC_ESTABLISH_DEADLINE_SECONDS", &c.EstablishDeadline, 5, 75},
		{"SERVICE_VNC_START_READY_WAIT_SECONDS", &c.StartReadyWait, 1, 75},
		{"SERVICE_VNC_RFB_READY_WAIT_SECONDS", &c.RFBReadyWait, 1, 75},
		{"SERVICE_VNC_SECURITY_PREFLIGHT_TIMEOUT_SECONDS", &c.PreflightTimeout, 1, 75},
		{"SERVICE_VNC_LIVE_CREDENTIAL_WAIT_SECONDS", &c.CredentialWait, 1, 75},
		{"SERVICE_VNC_STOP_DEBOUNCE_SECONDS", &c.StopDebounce, 0, 3600},
		{"SERVICE_VNC_AUTH_RETRY_COOLDOWN_SECONDS", &c.AuthRetryCooldown, 0, 75},
	} {
		if err := secs(s.name, s.dst, s.lo, s.hi); err != nil {
			return c, err
		}
	}
	switch getenv("SERVICE_VNC_SECURITY_PREFLIGHT") {
	case "", "1":
	case "0":
		c.Preflight = false
	default:
		return c, fmt.Errorf("SERVICE_VNC_SECURITY_PREFLIGHT must be 0 or 1")
	}
	switch getenv("SERVICE_VNC_AUTH_PROBE") {
	case "", "0":
	case "1":
		c.AuthProbe = true
	default:
		return c, fmt.Errorf("SERVICE_VNC_AUTH_PROBE must be 0 or 1")
	}
	for _, d := range []*time.Duration{&c.ReadyWait, &c.StartReadyWait, &c.RFBReadyWait, &c.PreflightTimeout, &c.CredentialWait, &c.AuthRetryCooldown} {
		*d = min(*d, c.EstablishDeadline)
	}
	return c, nil
}

// Service keeps remote desktop sessions.
type Service struct {
	store *db.Store
	cfg   Config

	// relays are the browser sockets this process relays, by session: a
	// handoff ends the previous browser's relay before the taker's token
	// is issued.
	mu     sync.Mutex
	relays map[string]*relay
}

type relay struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// New returns the service.
func New(store *db.Store, cfg Config) *Service {
	if cfg.EstablishDeadline == 0 {
		cfg = DefaultConfig()
	}
	return &Service{store: store, cfg: cfg, relays: map[string]*relay{}}
}

// Relaying records that this process relays a browser for session id;
// cancel ends that relay. The returned func is called once the relay has
// ended and the workflow was told (detached).
func (s *Service) Relaying(id string, cancel context.CancelFunc) (release func()) {
	r := &relay{cancel: cancel, done: make(chan struct{})}
	s.mu.Lock()
	prev := s.relays[id]
	s.relays[id] = r
	s.mu.Unlock()
	if prev != nil {
		prev.cancel()
	}
	return func() {
		s.mu.Lock()
		if s.relays[id] == r {
			delete(s.relays, id)
		}
		s.mu.Unlock()
		close(r.done)
	}
}

// evict ends the relay of session id in this process, if any, and waits
// until it has released (or ctx ends).
func (s *Service) evict(ctx context.Context, id string) error {
	s.mu.Lock()
	r := s.relays[id]
	s.mu.Unlock()
	if r == nil {
		return nil
	}
	r.cancel()
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Handoff gives a ready or live session to operator (who may be its
// owner in another browser): the session's owner becomes operator with a
// new one-time token, which only operator can redeem, then the browser
// relayed now is disconnected (its relay ends as if the browser had
// left, so the workflow's reconnect window covers the switch).
// An establishing session cannot be taken yet (vnc_backend_not_ready);
// an ended one answers vnc_session_ended.
func (s *Service) Handoff(ctx context.Context, sess Session, operator string) (Session, string, time.Time, error) {
	switch sess.Status {
	case StatusEnded:
		return Session{}, "", time.Time{}, cairn.Errorf(ECodeSessionEnded, "the remote desktop session has ended")
	case StatusEstablishing:
		return Session{}, "", time.Time{}, cairn.Errorf(ECodeBackendNotReady, "the remote desktop session is still being established; take it over once it is ready")
	}
	tok, hash, err := newToken()
	if err != nil {
		return Session{}, "", time.Time{}, err
	}
	r, err := s.store.VNCSessionHandoff(ctx, db.VNCSessionHandoffParams{ID: sess.ID, Operator: operator, TokenHash: hash,
		TtlSeconds: s.cfg.TokenTTL.Seconds()})
	if db.IsNoRows(err) {
		return Session{}, "", time.Time{}, cairn.Errorf(ECodeSessionEnded, "the remote desktop session has ended")
	}
	if err != nil {
		return Session{}, "", time.Time{}, err
	}
	// The owner changed first, so the previous browser, told of its close,
	// reads who took over; the taker gets the token only once the
	// previous relay has told the workflow it left.
	if err := s.evict(ctx, sess.ID); err != nil {
		return Session{}, "", time.Time{}, err
	}
	return fromRow(r), tok, *r.TokenExpiresAt, nil
}

func newToken() (string, []byte, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", nil, err
	}
	tok := base64.RawURLEncoding.EncodeToString(b)
	return tok, hashToken(tok), nil
}

// Config is the service's settings.
func (s *Service) Config() Config { return s.cfg }

// Session is one remote desktop session.
type Session struct {
	ID       string           `json:"session_id"`
	GUID     cairn.DeviceGUID `json:"guid"`
	Hostname string           `json:"hostname"`
	SiteID   cairn.SiteID     `json:"site_id"`
	Operator string           `json:"operator"`
	Protocol string           `json:"protocol"`
	Quality  string           `json:"quality"`
	// Reason is establish's (vnc_auth_retry, or empty).
	Reason       string     `json:"reason,omitempty"`
	Status       string     `json:"status"`
	CreatedAt    time.Time  `json:"created_at"`
	ReadyAt      *time.Time `json:"ready_at"`
	AttachedAt   *time.Time `json:"attached_at"`
	FirstFrameAt *time.Time `json:"first_frame_at"`
	EndedAt      *time.Time `json:"ended_at"`
	EndReason    string     `json:"end_reason,omitempty"`
	ErrorCode    string     `json:"error_code,omitempty"`
	ErrorMessage string     `json:"error_message,omitempty"`
	// HandedOffFrom is the owner before the last handoff, HandedOffAt
	// when, Handoffs how many there were.
	HandedOffFrom string     `json:"handed_off_from,omitempty"`
	HandedOffAt   *time.Time `json:"handed_off_at"`
	Handoffs      int32      `json:"handoffs"`
}

func fromRow(r db.VncSession) Session {
	return Session{ID: r.ID, GUID: r.DeviceGuid, Hostname: r.Hostname, SiteID: r.SiteID, Operator: r.Operator,
		Protocol: r.Protocol, Quality: r.Quality, Reason: r.Reason, Status: r.Status, CreatedAt: r.CreatedAt, ReadyAt: r.ReadyAt,
		AttachedAt: r.AttachedAt, FirstFrameAt: r.FirstFrameAt, EndedAt: r.EndedAt, EndReason: r.EndReason,
		ErrorCode: r.ErrorCode, ErrorMessage: r.ErrorMessage, HandedOffFrom: r.HandedOffFrom, HandedOffAt: r.HandedOffAt,
		Handoffs: r.Handoffs}
}

// Create records an establishing session of protocol (vnc, or rdp) on t
// for operator. A
// vnc_auth_retry claims the device's single retry in the same
// transaction, or is refused without a session.
func (s *Service) Create(ctx context.Context, t devices.OperationTarget, operator, protocol, quality, reason string) (Session, error) {
	if protocol == "" {
		protocol = ProtocolVNC
	}
	var out Session
	err := s.store.InTx(ctx, func(q *db.Queries) error {
		r, err := q.VNCSessionInsert(ctx, db.VNCSessionInsertParams{ID: uuid.NewString(), DeviceGuid: t.GUID,
			SiteID: t.SiteID, Hostname: t.Hostname, Operator: operator, Protocol: protocol, Quality: quality, Reason: reason})
		if err != nil {
			return err
		}
		out = fromRow(r)
		if reason != ReasonAuthRetry {
			return nil
		}
		_, err = q.VNCAuthRetryClaim(ctx, db.VNCAuthRetryClaimParams{DeviceGuid: t.GUID, SessionID: r.ID,
			SettleSeconds: (s.cfg.EstablishDeadline + s.cfg.AuthRetryCooldown).Seconds()})
		if !db.IsNoRows(err) {
			return err
		}
		h, err := q.VNCAuthRetryHolder(ctx, t.GUID)
		if err != nil {
			return err
		}
		after := int(math.Ceil(min(h.SettlesIn, s.cfg.EstablishDeadline.Seconds())))
		e := cairn.Errorf(ECodeAuthRetrySettling, "a credential rotation of %s has just ended; try again in %d s", t.Hostname, max(after, 1))
		switch h.Status {
		case StatusEstablishing, StatusReady, StatusLive:
			e = cairn.Errorf(ECodeAuthRetryInProgress, "a credential rotation of %s is under way; try again in %d s", t.Hostname, max(after, 1))
		}
		e.RetryAfterSeconds = max(after, 1)
		return e
	})
	return out, err
}

// Get is a session inside scope.
func (s *Service) Get(ctx context.Context, scope cairn.SiteScope, id string) (Session, error) {
	if _, err := uuid.Parse(id); err != nil {
		return Session{}, cairn.Errorf(cairn.ECodeNotFound, "no such remote desktop session")
	}
	r, err := s.store.VNCSessionGet(ctx, db.VNCSessionGetParams{ID: id, AllSites: scope.All, SiteIds: scope.SiteIDs})
	if err != nil {
		return Session{}, db.NotFound(err, "no such remote desktop session")
	}
	return fromRow(r), nil
}

// IssueToken makes the browser's one-time token once the establishment
// is ready (after vnc_start: rule 2). Only its hash is stored.
func (s *Service) IssueToken(ctx context.Context, id string) (string, time.Time, error) {
	tok, hash, err := newToken()
	if err != nil {
		return "", time.Time{}, err
	}
	r, err := s.store.VNCSessionIssueToken(ctx, db.VNCSessionIssueTokenParams{ID: id, TokenHash: hash,
		TtlSeconds: s.cfg.TokenTTL.Seconds()})
	if db.IsNoRows(err) {
		return "", time.Time{}, cairn.Errorf(ECodeSessionEnded, "the remote desktop session is no longer establishing")
	}
	if err != nil {
		return "", time.Time{}, err
	}
	return tok, *r.TokenExpiresAt, nil
}

func hashToken(t string) []byte {
	h := sha256.Sum256([]byte(t))
	return h[:]
}

// Redeem spends the browser's token: the session goes live.
func (s *Service) Redeem(ctx context.Context, id, token, operator string) (Session, error) {
	if id == "" || token == "" || len(token) > 256 {
		return Session{}, tokenInvalid()
	}
	r, err := s.store.VNCSessionRedeem(ctx, db.VNCSessionRedeemParams{ID: id, TokenHash: hashToken(token), Operator: operator})
	if db.IsNoRows(err) {
		return Session{}, tokenInvalid()
	}
	if err != nil {
		return Session{}, err
	}
	return fromRow(r), nil
}

func tokenInvalid() error {
	return cairn.Errorf(ECodeTokenInvalid, "the remote desktop session does not exist, has ended, or its token expired, was used or is not yours")
}

// FirstFrame records first_frame_at (once).
func (s *Service) FirstFrame(ctx context.Context, id string, at time.Time) error {
	return s.store.VNCSessionFirstFrame(ctx, db.VNCSessionFirstFrameParams{ID: id, At: at})
}

// End ends a session once; ended is false when it had ended already.
func (s *Service) End(ctx context.Context, q *db.Queries, id, reason, code, message string) (Session, bool, error) {
	if q == nil {
		q = s.store.Queries
	}
	r, err := q.VNCSessionEnd(ctx, db.VNCSessionEndParams{ID: id, EndReason: reason, ErrorCode: code, ErrorMessage: message})
	if db.IsNoRows(err) {
		return Session{}, false, nil
	}
	if err != nil {
		return Session{}, false, err
	}
	if r.Reason == ReasonAuthRetry {
		// What is left of the retry is its settle time.
		if err := q.VNCAuthRetryRelease(ctx, db.VNCAuthRetryReleaseParams{SessionID: id, SettleSeconds: s.cfg.AuthRetryCooldown.Seconds()}); err != nil {
			return Session{}, false, err
		}
	}
	return fromRow(r), true, nil
}

// MaxList bounds GET /api/vnc/sessions.
const MaxList = 200

// Active are the sessions not ended inside scope, newest first.
func (s *Service) Active(ctx context.Context, scope cairn.SiteScope) ([]Session, error) {
	rows, err := s.store.VNCSessionListActive(ctx, db.VNCSessionListActiveParams{AllSites: scope.All, SiteIds: scope.SiteIDs,
		MaxRows: MaxList})
	if err != nil {
		return nil, err
	}
	out := make([]Session, len(rows))
	for i, r := range rows {
		out[i] = fromRow(r)
	}
	return out, nil
}

// Viewer is one operator watching live sessions.
type Viewer struct {
	Operator string `json:"operator"`
	Sessions int64  `json:"sessions"`
}

// Viewers are the operators with live sessions inside scope.
func (s *Service) Viewers(ctx context.Context, scope cairn.SiteScope) ([]Viewer, error) {
	rows, err := s.store.VNCSessionCountActiveByOperator(ctx, db.VNCSessionCountActiveByOperatorParams{AllSites: scope.All,
		SiteIds: scope.SiteIDs})
	if err != nil {
		return nil, err
	}
	out := make([]Viewer, len(rows))
	for i, r := range rows {
		out[i] = Viewer{Operator: r.Operator, Sessions: r.Sessions}
	}
	return out, nil
}
