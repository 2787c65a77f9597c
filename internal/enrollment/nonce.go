package enrollment

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
)

// NonceTTL is how long an enrollment nonce may be signed and sent.
const NonceTTL = 5 * time.Minute

// nonces are stateless (an HMAC over random bytes and the expiry) until
// used; a used nonce is recorded in the shared replay table so every
// replica refuses it a second time.
type nonces struct {
	store *db.Store
	key   []byte
	now   func() time.Time
}

func newNonces(ctx context.Context, store *db.Store, now func() time.Time) (*nonces, error) {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return nil, err
	}
	key, err := store.ServerKeyEnsure(ctx, db.ServerKeyEnsureParams{Name: "enroll-nonce-hmac", Key: k})
	if err != nil {
		return nil, fmt.Errorf("enrollment: nonce key: %w", err)
	}
	return &nonces{store: store, key: key, now: now}, nil
}

// Issue returns a fresh nonce and its expiry.
func (n *nonces) Issue() (string, time.Time) {
	exp := n.now().Add(NonceTTL).Truncate(time.Second)
	body := make([]byte, 24)
	if _, err := rand.Read(body[:16]); err != nil {
		panic(err)
	}
	binary.BigEndian.PutUint64(body[16:], uint64(exp.Unix()))
	enc := base64.RawURLEncoding.EncodeToString(body)
	return enc + "." + n.mac(enc), exp
}

// Use checks a nonce and consumes it.
func (n *nonces) Use(ctx context.Context, nonce string) error {
	bad := cairn.Invalid("nonce", "is not a valid enrollment nonce; fetch a new one")
	enc, mac, ok := strings.Cut(nonce, ".")
	if !ok || !hmac.Equal([]byte(mac), []byte(n.mac(enc))) {
		return bad
	}
	body, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || len(body) != 24 {
		return bad
	}
	exp := time.Unix(int64(binary.BigEndian.Uint64(body[16:])), 0)
	if !exp.After(n.now()) {
		return cairn.Invalid("nonce", "has expired; fetch a new one")
	}
	sum := sha256.Sum256([]byte("enroll-nonce\x00" + nonce))
	rows, err := n.store.DpopJTIInsert(ctx, db.DpopJTIInsertParams{JtiHash: sum[:], ExpiresAt: exp})
	if err != nil {
		return err
	}
	if rows == 0 {
		return cairn.Invalid("nonce", "was already used; fetch a new one")
	}
	return nil
}

func (n *nonces) mac(enc string) string {
	h := hmac.New(sha256.New, n.key)
	h.Write([]byte(enc))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}
