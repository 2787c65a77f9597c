package directory

import (
	"context"

	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/aegis"
)

// SealedColumns are the service-account passwords a data-key rotation
// re-seals.
func SealedColumns() []aegis.Column {
	return []aegis.Column{{Names: []string{"directory_providers.bind_password_sealed"},
		Reseal: func(ctx context.Context, q *db.Queries, r *aegis.Resealer) error {
			rows, err := q.DirectoryProviderSealedList(ctx)
			if err != nil {
				return err
			}
			for _, p := range rows {
				v, changed, err := r.Reseal(p.BindPasswordSealed, bindPasswordAAD(p.ID))
				if err != nil {
					return err
				}
				if changed {
					if err := q.DirectoryProviderSealedUpdate(ctx, db.DirectoryProviderSealedUpdateParams{ID: p.ID, BindPasswordSealed: v}); err != nil {
						return err
					}
				}
			}
			return nil
		}}}
}
