package aegis

import (
	"context"

	"github.com/cairn-rmm/cairn/db"
)

// PGStore keeps the cipher state in PostgreSQL.
type PGStore struct{ Q *db.Queries }

// AegisState implements Store.
func (s PGStore) AegisState(ctx context.Context) (*State, error) {
	row, err := s.Q.AegisStateGet(ctx)
	if db.IsNoRows(err) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	return &State{
		Salt: row.KdfSalt, WrappedKey: row.WrappedKey, KeyID: row.KeyID, CreatedAt: row.CreatedAt, RotatedAt: row.RotatedAt,
		KDF: KDFParams{Time: uint32(row.KdfTime), MemoryKiB: uint32(row.KdfMemoryKib), Threads: uint8(row.KdfThreads)},
	}, nil
}

// AegisInsert implements Store.
func (s PGStore) AegisInsert(ctx context.Context, st State) error {
	return s.Q.AegisStateInsert(ctx, db.AegisStateInsertParams{
		KdfSalt: st.Salt, KdfTime: int32(st.KDF.Time), KdfMemoryKib: int32(st.KDF.MemoryKiB),
		KdfThreads: int32(st.KDF.Threads), WrappedKey: st.WrappedKey, KeyID: st.KeyID,
	})
}

// AegisRewrap implements Store.
func (s PGStore) AegisRewrap(ctx context.Context, keyID, salt []byte, kdf KDFParams, wrapped []byte) (bool, error) {
	n, err := s.Q.AegisStateRewrap(ctx, db.AegisStateRewrapParams{
		KdfSalt: salt, KdfTime: int32(kdf.Time), KdfMemoryKib: int32(kdf.MemoryKiB),
		KdfThreads: int32(kdf.Threads), WrappedKey: wrapped, KeyID: keyID,
	})
	return n == 1, err
}
