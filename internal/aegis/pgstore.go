package aegis

import (
	"context"
	"math"

	"github.com/cairn-rmm/cairn/db"
)

// PGStore keeps the cipher state in PostgreSQL. S (for transactions) is
// needed by Rotate only.
type PGStore struct {
	Q *db.Queries
	S *db.Store
}

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
		KDF: kdfFromRow(row.KdfTime, row.KdfMemoryKib, row.KdfThreads),
	}, nil
}

// AegisInsert implements Store.
func (s PGStore) AegisInsert(ctx context.Context, st State) error {
	return s.Q.AegisStateInsert(ctx, db.AegisStateInsertParams{
		KdfSalt: st.Salt, KdfTime: int32(st.KDF.Time), KdfMemoryKib: int32(st.KDF.MemoryKiB),
		KdfThreads: int32(st.KDF.Threads), WrappedKey: st.WrappedKey, KeyID: st.KeyID,
	})
}

// kdfFromRow converts the stored int4 columns; a negative or oversized
// value becomes 0, which KDFParams.Check refuses, instead of wrapping
// round to a huge unsigned cost.
func kdfFromRow(t, mem, threads int32) KDFParams {
	clamp := func(v int32, max int64) uint32 {
		if v < 0 || int64(v) > max {
			return 0
		}
		return uint32(v)
	}
	return KDFParams{Time: clamp(t, math.MaxUint32), MemoryKiB: clamp(mem, math.MaxUint32), Threads: uint8(clamp(threads, math.MaxUint8))}
}
