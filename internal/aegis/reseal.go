package aegis

// Data-key rotation (issue 13 item 14). Rotate replaces the data key, not
// only its wrapping: every sealed value is opened with the old key and
// sealed with the new one inside the same PostgreSQL transaction that
// stores the new wrapped key, so a crash at any point leaves either the
// old key and old values or the new key and new values, never a mix.
// Each package that seals a column declares it as a Column (it alone
// knows the associated data of its rows); engine.New registers them all.

import (
	"bytes"
	"context"
	"crypto/cipher"
	"errors"
	"fmt"
	"strings"

	"github.com/cairn-rmm/cairn/db"
)

// Column is one sealed column. Reseal rewrites every value of the column
// through r, in the rotation's transaction q, together with any key-ID
// column kept beside the values (r.KeyID()).
type Column struct {
	// Names are the "table.column"s it covers, as
	// TestEverySealedColumnIsResealed matches them against the schema's
	// *_sealed columns.
	Names  []string
	Reseal func(ctx context.Context, q *db.Queries, r *Resealer) error
}

// Resealer opens values sealed by the old data key and seals them again
// with the new one.
type Resealer struct {
	old, next     cipher.AEAD
	oldID, nextID []byte
	// Count is how many values were re-sealed.
	Count int
}

// KeyID is the new data key's ID, for key-ID columns.
func (r *Resealer) KeyID() []byte { return bytes.Clone(r.nextID) }

// Reseal returns value sealed by the new key. changed is false (and value
// is returned as it is) for a value an earlier, force-reset cipher sealed:
// it was unreadable before and stays flagged as such. A value that fails
// authentication aborts the rotation: re-sealing it would destroy it.
func (r *Resealer) Reseal(value, aad []byte) (out []byte, changed bool, err error) {
	plain, err := open(r.old, r.oldID, value, aad)
	if errors.Is(err, ErrForeignKey) {
		return value, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	r.Count++
	return seal(r.next, r.nextID, plain, aad), true, nil
}

// Register adds the sealed columns a rotation re-seals.
func (c *Cipher) Register(cols ...Column) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.columns = append(c.columns, cols...)
}

// Columns returns the registered columns' names.
func (c *Cipher) Columns() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []string
	for _, col := range c.columns {
		out = append(out, col.Names...)
	}
	return out
}

func (c *Cipher) resealAll(ctx context.Context, q *db.Queries, r *Resealer) error {
	c.mu.RLock()
	cols := append([]Column(nil), c.columns...)
	c.mu.RUnlock()
	for _, col := range cols {
		if err := col.Reseal(ctx, q, r); err != nil {
			return fmt.Errorf("aegis: re-seal %s: %w", strings.Join(col.Names, ", "), err)
		}
	}
	return nil
}

// AegisRekey implements Store: in one transaction it swaps the data key
// (only if keyID is still the stored one) and runs reseal.
func (s PGStore) AegisRekey(ctx context.Context, keyID []byte, next State, reseal func(context.Context, *db.Queries) error) (bool, error) {
	if s.S == nil {
		return false, errors.New("aegis: PGStore.S is needed to rotate the data key")
	}
	swapped := false
	err := s.S.InTx(ctx, func(q *db.Queries) error {
		n, err := q.AegisStateRekey(ctx, db.AegisStateRekeyParams{
			KdfSalt: next.Salt, KdfTime: int32(next.KDF.Time), KdfMemoryKib: int32(next.KDF.MemoryKiB),
			KdfThreads: int32(next.KDF.Threads), WrappedKey: next.WrappedKey, NewKeyID: next.KeyID, KeyID: keyID,
		})
		if err != nil || n != 1 {
			return err
		}
		swapped = true
		return reseal(ctx, q)
	})
	return swapped && err == nil, err
}
