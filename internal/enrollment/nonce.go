package enrollment

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/aegis"
)

// NonceTTL is how long an enrollment nonce may be signed and sent.
const NonceTTL = 5 * time.Minute

// nonces are stateless (an HMAC over random bytes and the expiry) until
// used; a used nonce is recorded in the shared replay table so every
// replica refuses it a second time.
type nonces struct {
	store *db.Store
	key   *aegis.ServerKey
	now   func() time.Time
}

// Issue returns a fresh nonce and its expiry.
func (n *nonces) Issue(ctx context.Context) (string, time.Time, error) {
	exp := n.now().Add(NonceTTL).Truncate(time.Second)
	body := make([]byte, 24)
	if _, err := rand.Read(body[:16]); err != nil {
		panic(err)
	}
	binary.BigEndian.PutUint64(body[16:], uint64(exp.Unix()))
	enc := base64.RawURLEncoding.EncodeToString(body)
	mac, err := n.mac(ctx, enc)
	if err != nil {
		return "", time.Time{}, err
	}
	return enc + "." + mac, exp, nil
}

// Use checks a nonce and consumes it.
func (n *nonces) Use(ctx context.Context, nonce string) error {
	bad := cairn.Invalid("nonce", "is not a valid enrollment nonce; fetch a new one")
	enc, mac, ok := strings.Cut(nonce, ".")
	if !ok {
		return bad
	}
	want, err := n.mac(ctx, enc)
	if err != nil {
		return err
	}
	if !hmac.Equal([]byte(mac), []byte(want)) {
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

func (n *nonces) mac(ctx context.Context, enc string) (string, error) {
	key, err := n.key.Secret(ctx)
	if err != nil {
		return "", err
	}
	h := hmac.New(sha256.New, key)
	h.Write([]byte(enc))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)), nil
}
