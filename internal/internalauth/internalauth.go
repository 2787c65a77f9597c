// Package internalauth is the Internal auth class (SPEC "Authentication";
// issue 26): service components sign requests on /api/internal/* and
// /v1/command with HMAC-SHA256 over the method, the path with its query,
// the body's SHA-256, a timestamp and a nonce. The Engine accepts a
// signature once (a seen-cache in PostgreSQL that every replica shares),
// within a timestamp window, under an active key. Keys are sealed by the
// master cipher; two may be active while callers move to a new one.
package internalauth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/aegis"
)

// Request headers of a signed request.
const (
	HeaderKeyID     = "X-Cairn-Key-Id"
	HeaderTimestamp = "X-Cairn-Timestamp"
	HeaderNonce     = "X-Cairn-Nonce"
	HeaderSignature = "X-Cairn-Signature"
	// Scheme opens the canonical string, so a signature made for another
	// purpose under the same key never verifies here.
	Scheme = "CAIRN-HMAC-SHA256"
)

// Error codes (declared in the serveradmin capability's Codes). None says
// which key exists or what the expected signature was.
const (
	// ECodeSignatureInvalid: headers missing or malformed, unknown or
	// retired key, or a signature that does not match the request.
	ECodeSignatureInvalid = "internal_signature_invalid"
	// ECodeSignatureStale: the timestamp is outside the window.
	ECodeSignatureStale = "internal_signature_stale"
	// ECodeSignatureReplayed: this signature was accepted before.
	ECodeSignatureReplayed = "internal_signature_replayed"
	// ECodeKeyLimit: two keys are active already; retire one first.
	ECodeKeyLimit = "internal_key_limit"
)

// Window is how far a request's timestamp may be from the Engine's clock,
// either way. A seen signature is kept twice as long, past any timestamp
// the window would still accept.
const Window = 5 * time.Minute

// MaxActiveKeys is how many keys verify at once: the current one and the
// one callers are moving to.
const MaxActiveKeys = 2

const (
	keyBytes   = 32
	maxNonce   = 128
	maxKeyID   = 64
	keyIDBytes = 8
)

// Service keeps the keys and verifies requests.
type Service struct {
	q      *db.Queries
	cipher *aegis.Cipher
	now    func() time.Time
}

// New returns the service; now is the clock (nil: time.Now).
func New(q *db.Queries, cipher *aegis.Cipher, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{q: q, cipher: cipher, now: now}
}

// Key is a stored key, without its secret.
type Key struct {
	KeyID     string     `json:"key_id"`
	CreatedAt time.Time  `json:"created_at"`
	RetiredAt *time.Time `json:"retired_at,omitempty"`
	// AdmissionID names the cluster admission a member's own key was made
	// for (CreateForMember); operator keys have none.
	AdmissionID *string `json:"admission_id,omitempty"`
}

func aad(keyID string) []byte { return []byte("cairn:internal-hmac:" + keyID) }

// Create makes a new active key and returns its secret, which is shown
// this once (the caller's configuration holds it). It refuses while
// MaxActiveKeys are active.
func (s *Service) Create(ctx context.Context) (Key, []byte, error) {
	n, err := s.q.InternalHMACKeyCountActive(ctx)
	if err != nil {
		return Key{}, nil, err
	}
	if n >= MaxActiveKeys {
		return Key{}, nil, cairn.Errorf(ECodeKeyLimit, "%d internal keys are active; retire one before creating another", n)
	}
	return s.create(ctx, s.q, nil)
}

func (s *Service) create(ctx context.Context, q *db.Queries, admissionID *string) (Key, []byte, error) {
	id := make([]byte, keyIDBytes)
	secret := make([]byte, keyBytes)
	_, _ = rand.Read(id)
	_, _ = rand.Read(secret)
	keyID := "ik_" + hex.EncodeToString(id)
	sealed, err := s.cipher.Seal(secret, aad(keyID))
	if err != nil {
		return Key{}, nil, err
	}
	row, err := q.InternalHMACKeyInsert(ctx, db.InternalHMACKeyInsertParams{KeyID: keyID, SecretSealed: sealed, AdmissionID: admissionID})
	if err != nil {
		return Key{}, nil, err
	}
	return Key{KeyID: row.KeyID, CreatedAt: row.CreatedAt, AdmissionID: row.AdmissionID}, secret, nil
}

// CreateForMember makes a key of the cluster member admitted through
// admissionID alone, in q's transaction (the admission's settlement), so
// retiring it refuses that member and no other. Member keys do not count
// toward MaxActiveKeys, which bounds an operator's keys.
func (s *Service) CreateForMember(ctx context.Context, q *db.Queries, admissionID string) (string, []byte, error) {
	k, secret, err := s.create(ctx, q, &admissionID)
	return k.KeyID, secret, err
}

// Retire stops a key from verifying; not_found when no active key has
// that ID.
func (s *Service) Retire(ctx context.Context, keyID string) error {
	at := s.now()
	n, err := s.q.InternalHMACKeyRetire(ctx, db.InternalHMACKeyRetireParams{At: &at, KeyID: keyID})
	if err != nil {
		return err
	}
	if n == 0 {
		return cairn.Errorf(cairn.ECodeNotFound, "no active internal key has this ID")
	}
	return nil
}

// List returns the keys, oldest first, without secrets.
func (s *Service) List(ctx context.Context) ([]Key, error) {
	rows, err := s.q.InternalHMACKeyList(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Key, 0, len(rows))
	for _, r := range rows {
		out = append(out, Key{KeyID: r.KeyID, CreatedAt: r.CreatedAt, RetiredAt: r.RetiredAt, AdmissionID: r.AdmissionID})
	}
	return out, nil
}

// Canonical is the string a request's signature covers, one field a line:
// the scheme, the method, the path with its raw query, the body's SHA-256
// in hex, the timestamp (Unix seconds), the nonce and the key ID.
func Canonical(method, pathAndQuery string, body []byte, timestamp, nonce, keyID string) string {
	sum := sha256.Sum256(body)
	return strings.Join([]string{Scheme, strings.ToUpper(method), pathAndQuery, hex.EncodeToString(sum[:]),
		timestamp, nonce, keyID}, "\n")
}

func mac(secret []byte, canonical string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(canonical))
	return m.Sum(nil)
}

// Sign sets the signing headers on r for body (the bytes r sends), under
// the key keyID with secret, at now, with a fresh random nonce.
func Sign(r *http.Request, body []byte, keyID string, secret []byte, now time.Time) {
	n := make([]byte, 16)
	_, _ = rand.Read(n)
	nonce := base64.RawURLEncoding.EncodeToString(n)
	ts := strconv.FormatInt(now.Unix(), 10)
	sig := mac(secret, Canonical(r.Method, r.URL.RequestURI(), body, ts, nonce, keyID))
	r.Header.Set(HeaderKeyID, keyID)
	r.Header.Set(HeaderTimestamp, ts)
	r.Header.Set(HeaderNonce, nonce)
	r.Header.Set(HeaderSignature, base64.StdEncoding.EncodeToString(sig))
}

func invalid(format string, args ...any) error {
	return cairn.Errorf(ECodeSignatureInvalid, format, args...)
}

// Verify checks a request's signature over method, pathAndQuery and body
// and records it as seen; it returns the key ID that signed it. The
// checks run cheapest first, and the seen-cache is written last so a
// refused request does not consume its signature.
func (s *Service) Verify(ctx context.Context, method, pathAndQuery string, body []byte, h http.Header) (string, error) {
	return s.VerifyWith(ctx, method, pathAndQuery, body, h, s.activeSecret)
}

// SecretFunc returns the secret of the key a request names; a key that
// does not verify here is refused with ECodeSignatureInvalid.
type SecretFunc func(ctx context.Context, keyID string) ([]byte, error)

func (s *Service) activeSecret(ctx context.Context, keyID string) ([]byte, error) {
	row, err := s.q.InternalHMACKeyGet(ctx, keyID)
	if db.IsNoRows(err) || (err == nil && row.RetiredAt != nil) {
		return nil, invalid("the request is not signed by an active internal key")
	}
	if err != nil {
		return nil, err
	}
	secret, err := s.cipher.Open(row.SecretSealed, aad(keyID))
	if err != nil {
		if errors.Is(err, aegis.ErrLocked) {
			return nil, err
		}
		return nil, fmt.Errorf("internalauth: open key %s: %w", keyID, err)
	}
	return secret, nil
}

// VerifyWith is Verify under keys other than the Internal class's own
// (a flow's inbound webhooks): secret finds the key the request names.
// The canonical string, the window and the seen-cache are the same.
func (s *Service) VerifyWith(ctx context.Context, method, pathAndQuery string, body []byte, h http.Header, secret SecretFunc) (string, error) {
	now := s.now()
	keyID, sig, err := check(ctx, now, method, pathAndQuery, body, h, secret)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(sig)
	n, err := s.q.InternalHMACSeenInsert(ctx, db.InternalHMACSeenInsertParams{SignatureHash: sum[:], ExpiresAt: now.Add(2 * Window)})
	if err != nil {
		return "", fmt.Errorf("internalauth: record signature: %w", err)
	}
	if n == 0 {
		return "", cairn.Errorf(ECodeSignatureReplayed, "this signed request was accepted before")
	}
	return keyID, nil
}

// DeleteExpired removes seen signatures past their window.
func (s *Service) DeleteExpired(ctx context.Context) (int64, error) {
	return s.q.InternalHMACSeenDeleteExpired(ctx, s.now())
}

// SealedColumns is the keys' sealed secret, which a data-key rotation
// re-seals.
func SealedColumns() []aegis.Column {
	return []aegis.Column{{Names: []string{"internal_hmac_keys.secret_sealed"},
		Reseal: func(ctx context.Context, q *db.Queries, r *aegis.Resealer) error {
			rows, err := q.InternalHMACKeyList(ctx)
			if err != nil {
				return err
			}
			for _, k := range rows {
				v, changed, err := r.Reseal(k.SecretSealed, aad(k.KeyID))
				if err != nil {
					return err
				}
				if changed {
					if err := q.InternalHMACKeySealedUpdate(ctx, db.InternalHMACKeySealedUpdateParams{KeyID: k.KeyID, SecretSealed: v}); err != nil {
						return err
					}
				}
			}
			return nil
		}}}
}

// check verifies everything but the seen-cache: the headers, the window
// and the MAC; it answers the key ID and the signature.
func check(ctx context.Context, now time.Time, method, pathAndQuery string, body []byte, h http.Header, secret SecretFunc) (string, []byte, error) {
	keyID, ts, nonce, sig64 := h.Get(HeaderKeyID), h.Get(HeaderTimestamp), h.Get(HeaderNonce), h.Get(HeaderSignature)
	if keyID == "" || ts == "" || nonce == "" || sig64 == "" {
		return "", nil, invalid("a signed request carries %s, %s, %s and %s", HeaderKeyID, HeaderTimestamp, HeaderNonce, HeaderSignature)
	}
	if len(keyID) > maxKeyID || len(nonce) > maxNonce {
		return "", nil, invalid("the key ID or nonce is too long")
	}
	sig, err := base64.StdEncoding.DecodeString(sig64)
	if err != nil || len(sig) != sha256.Size {
		return "", nil, invalid("%s is not a base64 HMAC-SHA256", HeaderSignature)
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return "", nil, invalid("%s is not Unix seconds", HeaderTimestamp)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > Window || d < -Window {
		return "", nil, cairn.Errorf(ECodeSignatureStale, "the request's timestamp is more than %s from the receiver's clock", Window)
	}
	key, err := secret(ctx, keyID)
	if err != nil {
		return "", nil, err
	}
	if !hmac.Equal(sig, mac(key, Canonical(method, pathAndQuery, body, ts, nonce, keyID))) {
		return "", nil, invalid("the signature does not match the request")
	}
	return keyID, sig, nil
}

// Secret is an active key's secret (the Engine signs its calls to the
// remote-desktop gateway with the key the gateway holds, under a
// derived key: Derive).
func (s *Service) Secret(ctx context.Context, keyID string) ([]byte, error) {
	return s.activeSecret(ctx, keyID)
}

// Derive is a key for one purpose and direction made from an Internal
// key's secret (HMAC-SHA256(secret, purpose)): the Engine signs what it
// sends the gateway under Derive(secret, PurposeToGateway), so a request
// the Engine signed never verifies as one the gateway signed, and the
// other way round.
func Derive(secret []byte, purpose string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("cairn:internal-derive:" + purpose))
	return m.Sum(nil)
}

// PurposeToGateway derives the key of the Engine's requests to the
// remote-desktop gateway process.
const PurposeToGateway = "engine-to-gateway"

// Local verifies requests under one key in a process without a
// database (the gateway): the same canonical string and window, with
// the seen-cache in memory (one process receives them all).
type Local struct {
	KeyID  string
	Secret []byte
	Now    func() time.Time

	mu   sync.Mutex
	seen map[[sha256.Size]byte]time.Time
}

// Verify checks a request signed under the key; a replay within the
// window is refused.
func (l *Local) Verify(method, pathAndQuery string, body []byte, h http.Header) error {
	now := time.Now()
	if l.Now != nil {
		now = l.Now()
	}
	_, sig, err := check(context.Background(), now, method, pathAndQuery, body, h, func(_ context.Context, id string) ([]byte, error) {
		if id != l.KeyID {
			return nil, invalid("the request is not signed by this process's key")
		}
		return l.Secret, nil
	})
	if err != nil {
		return err
	}
	sum := sha256.Sum256(sig)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen == nil {
		l.seen = map[[sha256.Size]byte]time.Time{}
	}
	for k, exp := range l.seen {
		if now.After(exp) {
			delete(l.seen, k)
		}
	}
	if _, ok := l.seen[sum]; ok {
		return cairn.Errorf(ECodeSignatureReplayed, "this signed request was accepted before")
	}
	l.seen[sum] = now.Add(2 * Window)
	return nil
}
