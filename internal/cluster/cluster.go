// Package cluster is the cluster of issue 26 (docs/architecture.md
// "Cluster model"): the Engine processes of one deployment (`cairn serve`
// replicas and standalone `cairn worker`s) as members with a role, a
// version and when each was last seen, and the admission of a new one.
//
// A new process joins with a one-time join code an administrator issued:
// it sends the code, what it is, and an X25519 public key of its own, and
// gets an admission ID and a channel token. The admission waits on an
// administrator (workflow cluster-admission:<id>), who compares the key's
// fingerprint with the one the joining process printed and approves or
// cancels. Approval seals the handoff (an Internal HMAC key and the
// Engine's URL) to the joiner's key; the joiner reads the box once over
// its authenticated channel (the events stream with its token), and the
// Engine drops it. No secret is logged or kept readable: codes and tokens
// are stored as SHA-256, the box only opens with the joiner's private key.
package cluster

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"
	"golang.org/x/crypto/nacl/box"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/ratelimit"
)

// Member roles.
const (
	// RoleEngine is a `cairn serve` replica: the API, the console and
	// (unless it runs none) site workers.
	RoleEngine = "engine"
	// RoleWorker is a standalone `cairn worker` running some sites.
	RoleWorker = "worker"
)

// Admission states.
const (
	StatePending   = "pending"
	StateApproved  = "approved"
	StateCancelled = "cancelled"
	StateExpired   = "expired"
)

// Decisions an administrator takes (and the expiry the workflow takes).
const (
	DecisionApprove = "approve"
	DecisionCancel  = "cancel"
	DecisionExpire  = "expire"
)

// Error codes (declared in the cluster capability's Codes).
const (
	// ECodeJoinCodeInvalid: the join code is unknown, spent, expired or
	// issued for another role. It does not say which.
	ECodeJoinCodeInvalid = "cluster_join_code_invalid"
	// ECodeJoinTokenInvalid: the admission's channel token is missing or
	// wrong.
	ECodeJoinTokenInvalid = "cluster_join_token_invalid"
	// ECodeAdmissionSettled: the admission was approved, cancelled or
	// expired already.
	ECodeAdmissionSettled = "cluster_admission_settled"
)

// Lifetimes and cadences.
const (
	JoinCodeTTL  = time.Hour
	AdmissionTTL = 24 * time.Hour
	// MemberRefresh is how often a running process refreshes its row;
	// MemberFreshFor how long a row counts as up after its last refresh;
	// MemberKeep how long a row of a process that died (one that stops
	// gracefully removes its own) is listed, down.
	MemberRefresh  = 10 * time.Second
	MemberFreshFor = 35 * time.Second
	MemberKeep     = 24 * time.Hour
	// TokenHeader carries the admission's channel token.
	TokenHeader = "X-Cairn-Join-Token"
)

// KeySource makes the Internal HMAC key a joined process signs with, its
// own, in the settlement's transaction
// (internalauth.Service.CreateForMember).
type KeySource interface {
	CreateForMember(ctx context.Context, q *db.Queries, admissionID string) (keyID string, secret []byte, err error)
}

// Service keeps members, join codes, admissions and events.
type Service struct {
	q    *db.Queries
	s    *db.Store
	keys KeySource
	now  func() time.Time
}

// New returns the service; now is the clock (nil: time.Now).
func New(store *db.Store, keys KeySource, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{q: store.Queries, s: store, keys: keys, now: now}
}

func hash(s string) []byte {
	sum := sha256.Sum256([]byte(s))
	return sum[:]
}

func secretString(prefix string) string {
	b := make([]byte, 20)
	_, _ = rand.Read(b)
	return prefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))
}

// Fingerprint is how an administrator recognises the joiner's key: the
// first 8 bytes of its SHA-256, in four groups of hex.
func Fingerprint(publicKey []byte) string {
	sum := sha256.Sum256(publicKey)
	h := hex.EncodeToString(sum[:8])
	return h[0:4] + "-" + h[4:8] + "-" + h[8:12] + "-" + h[12:16]
}

// JoinCode is an issued code; Code is shown this once.
type JoinCode struct {
	ID        string    `json:"id"`
	Code      string    `json:"code"`
	Role      string    `json:"role" openapi:"enum=engine|worker"`
	ExpiresAt time.Time `json:"expires_at"`
}

func validRole(role string) bool { return role == RoleEngine || role == RoleWorker }

// IssueJoinCode makes a one-time code for a process of role to join with.
func (s *Service) IssueJoinCode(ctx context.Context, role, actor string) (JoinCode, error) {
	if !validRole(role) {
		return JoinCode{}, cairn.Invalid("role", "must be engine or worker")
	}
	code := secretString("cjc_")
	row, err := s.q.ClusterJoinCodeInsert(ctx, db.ClusterJoinCodeInsertParams{ID: uuid.NewString(), CodeHash: hash(code), Role: role,
		CreatedBy: actor, ExpiresAt: s.now().Add(JoinCodeTTL)})
	if err != nil {
		return JoinCode{}, err
	}
	s.event(ctx, "join_code_issued", "", actor, fmt.Sprintf("%s issued a join code for a %s (expires %s)", actor, role, row.ExpiresAt.UTC().Format(time.RFC3339)))
	return JoinCode{ID: row.ID, Code: code, Role: role, ExpiresAt: row.ExpiresAt}, nil
}

// JoinRequest is what a joining process sends.
type JoinRequest struct {
	Code string `json:"code"`
	Role string `json:"role" openapi:"enum=engine|worker"`
	// Name is the process's name as operators see it (its host, say).
	Name string `json:"name"`
	// Sites are the site slugs a worker runs (a worker names one or more;
	// an Engine replica none).
	Sites   []string `json:"sites"`
	Version string   `json:"version"`
	// PublicKey is the joiner's X25519 public key (32 bytes, base64).
	PublicKey string `json:"public_key"`
}

var (
	nameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:@-]{0,63}$`)
	slugRe = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)
)

// MaxSites bounds the sites one join names.
const MaxSites = 100

// Per-address budgets of the join routes (the API counts them with
// internal/ratelimit, shared by every replica): join codes are long and
// random, so these only stop a flood of guesses or streams from one
// address; a process joins once and follows one stream.
var (
	JoinsPerAddress   = ratelimit.Rule{Limit: 10, Window: time.Minute}
	FollowsPerAddress = ratelimit.Rule{Limit: 60, Window: time.Minute}
)

// Validate reports every bad field; it returns the decoded public key.
func (r JoinRequest) Validate() ([]byte, error) {
	var v cairn.Validation
	if strings.TrimSpace(r.Code) == "" || len(r.Code) > 128 {
		v.Add("code", "is required")
	}
	if !validRole(r.Role) {
		v.Add("role", "must be engine or worker")
	}
	if !nameRe.MatchString(r.Name) {
		v.Add("name", "must be 1 to 64 letters, digits, '.', '_', ':', '@' or '-', starting with a letter or digit")
	}
	switch {
	case r.Role == RoleWorker && len(r.Sites) == 0:
		v.Add("sites", "a worker names at least one site")
	case r.Role == RoleEngine && len(r.Sites) > 0:
		v.Add("sites", "an Engine replica names no sites")
	case len(r.Sites) > MaxSites:
		v.Add("sites", fmt.Sprintf("at most %d", MaxSites))
	}
	for _, slug := range r.Sites {
		if !slugRe.MatchString(slug) {
			v.Add("sites", fmt.Sprintf("%q is not a site slug", slug))
			break
		}
	}
	if r.Version == "" || len(r.Version) > 64 {
		v.Add("version", "is required, at most 64 characters")
	}
	key, err := base64.StdEncoding.DecodeString(r.PublicKey)
	if err != nil || len(key) != 32 {
		v.Add("public_key", "must be a base64 X25519 public key (32 bytes)")
	}
	return key, v.Err()
}

// Joined answers a join request. Token authenticates the joiner's channel
// (the events stream); it is shown this once.
type Joined struct {
	AdmissionID string    `json:"admission_id"`
	Token       string    `json:"token"`
	Fingerprint string    `json:"fingerprint"`
	State       string    `json:"state" openapi:"enum=pending"`
	ExpiresAt   time.Time `json:"expires_at"`
}

// Join spends the join code and records a pending admission. The caller
// starts its workflow.
func (s *Service) Join(ctx context.Context, r JoinRequest) (Joined, error) {
	key, err := r.Validate()
	if err != nil {
		return Joined{}, err
	}
	token := secretString("cjt_")
	var row db.ClusterAdmission
	err = s.s.InTx(ctx, func(q *db.Queries) error {
		at := s.now()
		code, err := q.ClusterJoinCodeUse(ctx, db.ClusterJoinCodeUseParams{At: &at, CodeHash: hash(r.Code)})
		if db.IsNoRows(err) || (err == nil && code.Role != r.Role) {
			return cairn.Errorf(ECodeJoinCodeInvalid, "the join code is not valid for a %s: ask an administrator for a new one", r.Role)
		}
		if err != nil {
			return err
		}
		sites := r.Sites
		if sites == nil {
			sites = []string{}
		}
		row, err = q.ClusterAdmissionInsert(ctx, db.ClusterAdmissionInsertParams{ID: uuid.NewString(), JoinCodeID: code.ID, Role: r.Role,
			Name: r.Name, Sites: sites, Version: r.Version, PublicKey: key, TokenHash: hash(token), ExpiresAt: at.Add(AdmissionTTL)})
		return err
	})
	if err != nil {
		return Joined{}, err
	}
	fp := Fingerprint(key)
	s.event(ctx, "join_requested", row.ID, r.Name, fmt.Sprintf("%s %s (version %s, key %s) asks to join", r.Role, r.Name, r.Version, fp))
	return Joined{AdmissionID: row.ID, Token: token, Fingerprint: fp, State: row.State, ExpiresAt: row.ExpiresAt}, nil
}

// Admission is an admission as administrators see it.
type Admission struct {
	ID          string     `json:"id"`
	Role        string     `json:"role" openapi:"enum=engine|worker"`
	Name        string     `json:"name"`
	Sites       []string   `json:"sites"`
	Version     string     `json:"version"`
	Fingerprint string     `json:"fingerprint"`
	State       string     `json:"state" openapi:"enum=pending|approved|cancelled|expired"`
	RequestedAt time.Time  `json:"requested_at"`
	ExpiresAt   time.Time  `json:"expires_at"`
	DecidedAt   *time.Time `json:"decided_at"`
	DecidedBy   string     `json:"decided_by,omitempty"`
	// Delivered says the joiner has read its handoff.
	Delivered bool `json:"delivered"`
}

func admissionOf(r db.ClusterAdmission) Admission {
	a := Admission{ID: r.ID, Role: r.Role, Name: r.Name, Sites: r.Sites, Version: r.Version, Fingerprint: Fingerprint(r.PublicKey),
		State: r.State, RequestedAt: r.RequestedAt, ExpiresAt: r.ExpiresAt, DecidedAt: r.DecidedAt, Delivered: r.DeliveredAt != nil}
	if r.DecidedBy != nil {
		a.DecidedBy = *r.DecidedBy
	}
	if a.Sites == nil {
		a.Sites = []string{}
	}
	return a
}

func (s *Service) get(ctx context.Context, id string) (db.ClusterAdmission, error) {
	if _, err := uuid.Parse(id); err != nil {
		return db.ClusterAdmission{}, cairn.Errorf(cairn.ECodeNotFound, "no admission %q", id)
	}
	row, err := s.q.ClusterAdmissionGet(ctx, id)
	if db.IsNoRows(err) {
		return row, cairn.Errorf(cairn.ECodeNotFound, "no admission %q", id)
	}
	return row, err
}

// Get returns one admission.
func (s *Service) Get(ctx context.Context, id string) (Admission, error) {
	row, err := s.get(ctx, id)
	if err != nil {
		return Admission{}, err
	}
	return admissionOf(row), nil
}

// Pending returns the admission when it still waits on a decision:
// not_found or cluster_admission_settled otherwise.
func (s *Service) Pending(ctx context.Context, id string) (Admission, error) {
	a, err := s.Get(ctx, id)
	if err != nil {
		return a, err
	}
	if a.State != StatePending {
		return a, cairn.Errorf(ECodeAdmissionSettled, "the admission is %s already", a.State)
	}
	return a, nil
}

// Admissions lists pending admissions and those of the last week.
func (s *Service) Admissions(ctx context.Context) ([]Admission, error) {
	rows, err := s.q.ClusterAdmissionList(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Admission, 0, len(rows))
	for _, r := range rows {
		out = append(out, admissionOf(r))
	}
	return out, nil
}

// Handoff is what an approved joiner receives, sealed to its key.
type Handoff struct {
	AdmissionID string   `json:"admission_id"`
	Role        string   `json:"role"`
	Sites       []string `json:"sites"`
	// EngineURL is where the joiner reaches the Engine's API (its
	// Internal routes among them).
	EngineURL string `json:"engine_url"`
	// InternalKeyID and InternalKeySecret (base64) sign the joiner's
	// Internal requests.
	InternalKeyID     string `json:"internal_key_id"`
	InternalKeySecret string `json:"internal_key_secret"`
}

// Settle records a decision on a pending admission (the workflow's
// activity): approve seals the handoff to the joiner's key. A settled
// admission is answered as it is, so a retried activity changes nothing.
func (s *Service) Settle(ctx context.Context, id, decision, actor, engineURL string) (string, error) {
	row, err := s.get(ctx, id)
	if err != nil {
		return "", err
	}
	if row.State != StatePending {
		return row.State, nil
	}
	at := s.now()
	p := db.ClusterAdmissionSettleParams{ID: id, At: &at, Actor: &actor}
	switch decision {
	case DecisionApprove:
		// The member's own key is made in the settlement's transaction
		// (below), so a retried activity leaves no key behind.
		p.State = StateApproved
	case DecisionCancel:
		p.State = StateCancelled
	case DecisionExpire:
		p.State = StateExpired
	default:
		return "", fmt.Errorf("cluster: unknown decision %q", decision)
	}
	// The decision and its event are one change: whoever sees the
	// state sees why.
	var settled db.ClusterAdmission
	err = s.s.InTx(ctx, func(q *db.Queries) error {
		if p.State == StateApproved {
			keyID, secret, err := s.keys.CreateForMember(ctx, q, id)
			if err != nil {
				return err
			}
			h := Handoff{AdmissionID: id, Role: row.Role, Sites: row.Sites, EngineURL: engineURL, InternalKeyID: keyID,
				InternalKeySecret: base64.StdEncoding.EncodeToString(secret)}
			plain, _ := json.Marshal(h)
			var pub [32]byte
			copy(pub[:], row.PublicKey)
			sealed, err := box.SealAnonymous(nil, plain, &pub, rand.Reader)
			if err != nil {
				return err
			}
			p.InternalKeyID, p.HandoffBox = &keyID, sealed
		}
		var err error
		if settled, err = q.ClusterAdmissionSettle(ctx, p); err != nil {
			return err
		}
		msg := fmt.Sprintf("%s %s: %s by %s", settled.Role, settled.Name, settled.State, actor)
		if settled.State == StateApproved {
			msg += "; its Internal key and the Engine's URL are sealed to key " + Fingerprint(settled.PublicKey)
		}
		_, err = q.ClusterEventInsert(ctx, db.ClusterEventInsertParams{Kind: "admission_" + settled.State, AdmissionID: &id, Actor: actor, Message: msg})
		return err
	})
	if db.IsNoRows(err) {
		again, err := s.get(ctx, id)
		return again.State, err
	}
	if err != nil {
		return "", err
	}
	return settled.State, nil
}

// OpenHandoff opens a handoff box with the joiner's private key.
func OpenHandoff(sealed []byte, public, private *[32]byte) (Handoff, error) {
	plain, ok := box.OpenAnonymous(nil, sealed, public, private)
	if !ok {
		return Handoff{}, fmt.Errorf("cluster: the handoff does not open with this key")
	}
	var h Handoff
	err := json.Unmarshal(plain, &h)
	return h, err
}

// Event is something that happened in the cluster.
type Event struct {
	ID          int64     `json:"id"`
	At          time.Time `json:"at"`
	Kind        string    `json:"kind"`
	AdmissionID string    `json:"admission_id,omitempty"`
	Actor       string    `json:"actor,omitempty"`
	Message     string    `json:"message"`
}

func eventOf(r db.ClusterEvent) Event {
	e := Event{ID: r.ID, At: r.At, Kind: r.Kind, Actor: r.Actor, Message: r.Message}
	if r.AdmissionID != nil {
		e.AdmissionID = *r.AdmissionID
	}
	return e
}

func (s *Service) event(ctx context.Context, kind, admission, actor, message string) {
	var id *string
	if admission != "" {
		id = &admission
	}
	// An event that cannot be written does not undo what happened.
	_, _ = s.q.ClusterEventInsert(ctx, db.ClusterEventInsertParams{Kind: kind, AdmissionID: id, Actor: actor, Message: message})
}

// Events lists the newest events first, at most limit.
func (s *Service) Events(ctx context.Context, limit int) ([]Event, error) {
	rows, err := s.q.ClusterEventList(ctx, db.ClusterEventListParams{After: 0, MaxRows: int32(limit)})
	if err != nil {
		return nil, err
	}
	out := make([]Event, 0, len(rows))
	for _, r := range rows {
		out = append(out, eventOf(r))
	}
	return out, nil
}

// Progress is what the joiner's channel reads: its admission's events
// after an ID, the admission, and (once, when approved) the sealed
// handoff.
type Progress struct {
	Events    []Event
	Admission Admission
	Handoff   []byte
}

// Follow reads an admission's progress for its joiner, who proves itself
// with the channel token. The handoff is answered until Delivered marks
// it read.
func (s *Service) Follow(ctx context.Context, id, token string, after int64) (Progress, error) {
	row, err := s.get(ctx, id)
	if err != nil || subtle.ConstantTimeCompare(row.TokenHash, hash(token)) != 1 {
		return Progress{}, cairn.Errorf(ECodeJoinTokenInvalid, "the admission ID or its token is wrong")
	}
	rows, err := s.q.ClusterEventListForAdmission(ctx, db.ClusterEventListForAdmissionParams{AdmissionID: &id, After: after})
	if err != nil {
		return Progress{}, err
	}
	p := Progress{Events: make([]Event, 0, len(rows)), Admission: admissionOf(row), Handoff: row.HandoffBox}
	for _, r := range rows {
		p.Events = append(p.Events, eventOf(r))
	}
	return p, nil
}

// Delivered drops the handoff once the joiner has been sent it.
func (s *Service) Delivered(ctx context.Context, id string) error {
	at := s.now()
	if err := s.q.ClusterAdmissionDelivered(ctx, db.ClusterAdmissionDeliveredParams{At: &at, ID: id}); err != nil {
		return err
	}
	s.event(ctx, "handoff_delivered", id, "", "the joiner read its sealed handoff; the Engine no longer keeps it")
	return nil
}
