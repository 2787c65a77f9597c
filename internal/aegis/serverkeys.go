package aegis

// The Engine's own signing keys (server_keys: device tokens, pending MFA,
// enrollment nonces) are sealed like every other secret (issue 13 item
// 14). Signing needs the unlocked cipher; an asymmetric key's public half
// is stored in the clear so a process whose cipher is locked (a site
// worker, a replica after a restart) still verifies what was signed.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/cairn-rmm/cairn/db"
)

// KeySpec describes one server key.
type KeySpec struct {
	Name string
	Size int
	// Public derives the public half of an asymmetric key (nil: symmetric).
	Public func(secret []byte) []byte
}

// ServerKey is one server key, read (or created, once for all replicas)
// through the cipher and cached while this process holds the same data key.
type ServerKey struct {
	q      *db.Queries
	cipher *Cipher
	spec   KeySpec

	mu     sync.Mutex
	secret []byte
	heldBy []byte // cipher key ID the cached secret was opened with
}

// NewServerKey returns the key spec names. A key still stored in plaintext
// is sealed at the next unlock of this process (and at its first use).
func NewServerKey(q *db.Queries, cipher *Cipher, spec KeySpec) *ServerKey {
	k := &ServerKey{q: q, cipher: cipher, spec: spec}
	cipher.OnUnlock(func(ctx context.Context) { _, _ = k.Secret(ctx) })
	return k
}

func serverKeyAAD(name string) []byte { return []byte("cairn:server-key:" + name) }

// Secret returns the key's secret: ErrLocked while the cipher is locked.
func (k *ServerKey) Secret(ctx context.Context) ([]byte, error) {
	held := k.cipher.KeyID()
	if held == nil {
		return nil, ErrLocked
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.secret != nil && bytes.Equal(k.heldBy, held) {
		return k.secret, nil
	}
	aad := serverKeyAAD(k.spec.Name)
	// Each pass settles one state of the row; a lost race is read again.
	for range 4 {
		row, err := k.q.ServerKeyGet(ctx, k.spec.Name)
		switch {
		case db.IsNoRows(err):
			secret, sealed, public, err := k.generate()
			if err != nil {
				return nil, err
			}
			if err := k.q.ServerKeyInsertSealed(ctx, db.ServerKeyInsertSealedParams{Name: k.spec.Name, KeySealed: sealed, PublicKey: public}); err != nil {
				return nil, err
			}
			_ = secret // read back: another replica may have won
		case err != nil:
			return nil, err
		case row.KeySealed != nil:
			plain, err := k.cipher.Open(row.KeySealed, aad)
			if errors.Is(err, ErrForeignKey) {
				// Sealed by a cipher since force-reset: nobody can read it,
				// so a new key replaces it (tokens it signed stop verifying).
				_, sealed, public, err := k.generate()
				if err != nil {
					return nil, err
				}
				if _, err := k.q.ServerKeyReplace(ctx, db.ServerKeyReplaceParams{Name: k.spec.Name, KeySealed: sealed,
					PublicKey: public, OldSealed: row.KeySealed}); err != nil {
					return nil, err
				}
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("aegis: server key %s: %w", k.spec.Name, err)
			}
			if len(plain) != k.spec.Size {
				return nil, fmt.Errorf("aegis: server key %s has %d bytes, want %d", k.spec.Name, len(plain), k.spec.Size)
			}
			k.secret, k.heldBy = plain, held
			return plain, nil
		default:
			// Written in plaintext before keys were sealed: seal it now.
			sealed, err := k.cipher.Seal(row.Key, aad)
			if err != nil {
				return nil, err
			}
			if _, err := k.q.ServerKeySeal(ctx, db.ServerKeySealParams{Name: k.spec.Name, KeySealed: sealed, PublicKey: k.public(row.Key)}); err != nil {
				return nil, err
			}
		}
	}
	return nil, fmt.Errorf("aegis: server key %s kept changing while it was read", k.spec.Name)
}

// Public returns the stored public half of an asymmetric key (derived from
// a not yet sealed plaintext key). It needs no unlocked cipher; nil when
// no key exists yet.
func (k *ServerKey) Public(ctx context.Context) ([]byte, error) {
	row, err := k.q.ServerKeyGet(ctx, k.spec.Name)
	if db.IsNoRows(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if row.PublicKey == nil && row.Key != nil {
		return k.public(row.Key), nil
	}
	return row.PublicKey, nil
}

func (k *ServerKey) public(secret []byte) []byte {
	if k.spec.Public == nil {
		return nil
	}
	return k.spec.Public(secret)
}

func (k *ServerKey) generate() (secret, sealed, public []byte, err error) {
	secret = randomBytes(k.spec.Size)
	if sealed, err = k.cipher.Seal(secret, serverKeyAAD(k.spec.Name)); err != nil {
		return nil, nil, nil, err
	}
	return secret, sealed, k.public(secret), nil
}

// ServerKeyColumns is server_keys.key_sealed for data-key rotation.
func ServerKeyColumns() []Column {
	return []Column{{Names: []string{"server_keys.key_sealed"},
		Reseal: func(ctx context.Context, q *db.Queries, r *Resealer) error {
			rows, err := q.ServerKeySealedList(ctx)
			if err != nil {
				return err
			}
			for _, row := range rows {
				v, changed, err := r.Reseal(row.KeySealed, serverKeyAAD(row.Name))
				if err != nil {
					return err
				}
				if changed {
					if err := q.ServerKeySealedUpdate(ctx, db.ServerKeySealedUpdateParams{Name: row.Name, KeySealed: v}); err != nil {
						return err
					}
				}
			}
			return nil
		}}}
}
