package aegis

import (
	"context"
	"crypto/ed25519"
	"sync"
	"time"

	"github.com/cairn-rmm/cairn/db"
)

// Ed25519Key is a server key that signs (with the unlocked cipher) and
// whose public half verifies without it, cached: the device-token key and
// the operation-grant key.
type Ed25519Key struct {
	*ServerKey

	mu     sync.Mutex
	pub    ed25519.PublicKey
	loaded time.Time
}

// publicKeyRecheck bounds how often a failed verification reads the public
// key again (a force-reset cipher replaces the key).
const publicKeyRecheck = 30 * time.Second

// NewEd25519Key returns the Ed25519 server key name.
func NewEd25519Key(q *db.Queries, cipher *Cipher, name string) *Ed25519Key {
	return &Ed25519Key{ServerKey: NewServerKey(q, cipher, KeySpec{Name: name, Size: ed25519.SeedSize,
		Public: func(seed []byte) []byte { return ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey) }})}
}

// Signer returns the private key (aegis_locked while the cipher is).
func (k *Ed25519Key) Signer(ctx context.Context) (ed25519.PrivateKey, error) {
	seed, err := k.Secret(ctx)
	if err != nil {
		return nil, err
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// Verifier returns the public key, cached; stale reads it again when the
// cached one is older than publicKeyRecheck (call it so after a signature
// failed to verify). nil when no key exists yet: nothing was signed.
func (k *Ed25519Key) Verifier(ctx context.Context, stale bool) (ed25519.PublicKey, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.pub != nil && (!stale || time.Since(k.loaded) < publicKeyRecheck) {
		return k.pub, nil
	}
	pub, err := k.Public(ctx)
	if err != nil {
		return nil, err
	}
	if len(pub) != ed25519.PublicKeySize {
		return nil, nil
	}
	k.pub, k.loaded = pub, time.Now()
	return k.pub, nil
}
