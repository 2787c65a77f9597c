package sourcehost

import (
	"context"

	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/aegis"
)

// SealedColumns is the source-hosting token a data-key rotation re-seals.
func SealedColumns() []aegis.Column {
	return []aegis.Column{{Names: []string{"source_token.token_sealed"},
		Reseal: func(ctx context.Context, q *db.Queries, r *aegis.Resealer) error {
			rows, err := q.SourceTokenSealedList(ctx)
			if err != nil {
				return err
			}
			for _, t := range rows {
				v, changed, err := r.Reseal(t.TokenSealed, tokenAAD)
				if err != nil {
					return err
				}
				if changed {
					if err := q.SourceTokenSealedUpdate(ctx, db.SourceTokenSealedUpdateParams{ID: t.ID, TokenSealed: v, KeyID: r.KeyID()}); err != nil {
						return err
					}
				}
			}
			return nil
		}}}
}
