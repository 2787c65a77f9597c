// Package payloadkeys keeps the keys of the Temporal payload codec (issue
// 21 item 1). Workflow histories carry what operators asked agents to do
// and what agents answered (file contents, registry values, script
// output); sealed under these keys, a history read straight from Temporal
// is ciphertext. Each key is random, sealed by the master cipher's data
// key and stored in PostgreSQL, so every replica and site worker that
// holds the unlocked cipher uses the same keys, and nothing that reaches
// only Temporal can read them. One key serves each data key: a rotation
// of the master cipher starts a new payload key, and the old ones, re-sealed
// by the rotation like every sealed column, stay readable for the
// histories they sealed. After a force reset the old keys are unreadable,
// as every other secret sealed by the lost cipher.
package payloadkeys

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/aegis"
)

// KeySize is an AES-256 key.
const KeySize = 32

// ECodeUnknownKey: a payload names a key this deployment does not have
// (another deployment's history, or one sealed before a force reset).
const ECodeUnknownKey = "payload_key_unknown"

// Keys reads and creates payload keys through the master cipher, caching
// what it opened.
type Keys struct {
	q      *db.Queries
	cipher *aegis.Cipher

	mu        sync.Mutex
	opened    map[string][]byte // key ID -> key
	currentID string
	heldBy    []byte // data key ID currentID belongs to
}

// New returns the keys of the database behind q.
func New(q *db.Queries, cipher *aegis.Cipher) *Keys {
	return &Keys{q: q, cipher: cipher, opened: map[string][]byte{}}
}

func aad(id string) []byte { return []byte("cairn:temporal-payload-key:" + id) }

// Current returns the key new payloads are sealed with: the one of the
// cipher's current data key, made on first use. aegis_locked while this
// process does not hold the cipher.
func (k *Keys) Current(ctx context.Context) (string, []byte, error) {
	held := k.cipher.KeyID()
	if held == nil {
		return "", nil, aegis.ErrLocked
	}
	k.mu.Lock()
	if k.currentID != "" && bytes.Equal(k.heldBy, held) {
		id, key := k.currentID, k.opened[k.currentID]
		k.mu.Unlock()
		return id, key, nil
	}
	k.mu.Unlock()
	for range 3 {
		row, err := k.q.TemporalPayloadKeyGetByDataKey(ctx, held)
		if db.IsNoRows(err) {
			if err := k.create(ctx, held); err != nil {
				return "", nil, err
			}
			continue // read back: another replica may have won
		}
		if err != nil {
			return "", nil, err
		}
		key, err := k.open(row.ID, row.KeySealed)
		if err != nil {
			return "", nil, err
		}
		k.mu.Lock()
		k.currentID, k.heldBy = row.ID, held
		k.mu.Unlock()
		return row.ID, key, nil
	}
	return "", nil, errors.New("payloadkeys: the current key kept changing while it was read")
}

// Get returns the key with id, for payloads sealed under it; aegis_locked
// while this process does not hold the cipher, even for a key it opened
// before (a locked process reads no more than it could after a restart).
func (k *Keys) Get(ctx context.Context, id string) ([]byte, error) {
	if k.cipher.KeyID() == nil {
		return nil, aegis.ErrLocked
	}
	k.mu.Lock()
	key, ok := k.opened[id]
	k.mu.Unlock()
	if ok {
		return key, nil
	}
	row, err := k.q.TemporalPayloadKeyGet(ctx, id)
	if db.IsNoRows(err) {
		return nil, cairn.Errorf(ECodeUnknownKey, "payload key %q is not one of this deployment's", id)
	}
	if err != nil {
		return nil, err
	}
	return k.open(id, row.KeySealed)
}

func (k *Keys) open(id string, sealed []byte) ([]byte, error) {
	key, err := k.cipher.Open(sealed, aad(id))
	if errors.Is(err, aegis.ErrForeignKey) {
		return nil, cairn.Errorf(ECodeUnknownKey, "payload key %q was sealed by a master cipher that has since been reset", id)
	}
	if err != nil {
		return nil, fmt.Errorf("payloadkeys: open key %s: %w", id, err)
	}
	if len(key) != KeySize {
		return nil, fmt.Errorf("payloadkeys: key %s has %d bytes, want %d", id, len(key), KeySize)
	}
	k.mu.Lock()
	k.opened[id] = key
	k.mu.Unlock()
	return key, nil
}

func (k *Keys) create(ctx context.Context, dataKeyID []byte) error {
	var raw [8]byte
	key := make([]byte, KeySize)
	if _, err := rand.Read(raw[:]); err != nil {
		return err
	}
	if _, err := rand.Read(key); err != nil {
		return err
	}
	id := hex.EncodeToString(raw[:])
	sealed, err := k.cipher.Seal(key, aad(id))
	if err != nil {
		return err
	}
	return k.q.TemporalPayloadKeyInsert(ctx, db.TemporalPayloadKeyInsertParams{ID: id, KeySealed: sealed, DataKeyID: dataKeyID})
}

// SealedColumns is temporal_payload_keys.key_sealed, for data-key rotation.
func SealedColumns() []aegis.Column {
	return []aegis.Column{{Names: []string{"temporal_payload_keys.key_sealed"},
		Reseal: func(ctx context.Context, q *db.Queries, r *aegis.Resealer) error {
			rows, err := q.TemporalPayloadKeySealedList(ctx)
			if err != nil {
				return err
			}
			for _, row := range rows {
				v, changed, err := r.Reseal(row.KeySealed, aad(row.ID))
				if err != nil {
					return err
				}
				if changed {
					if err := q.TemporalPayloadKeySealedUpdate(ctx, db.TemporalPayloadKeySealedUpdateParams{ID: row.ID, KeySealed: v}); err != nil {
						return err
					}
				}
			}
			return nil
		}}}
}
