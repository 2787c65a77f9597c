package credentials

import (
	"context"

	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/aegis"
)

// SealedColumns are the stored passwords a data-key rotation re-seals,
// with the key ID kept beside each.
func SealedColumns() []aegis.Column {
	return []aegis.Column{{Names: []string{"stored_credentials.password_sealed"},
		Reseal: func(ctx context.Context, q *db.Queries, r *aegis.Resealer) error {
			rows, err := q.StoredCredentialSealedList(ctx)
			if err != nil {
				return err
			}
			for _, c := range rows {
				v, changed, err := r.Reseal(c.PasswordSealed, aad(c.ID))
				if err != nil {
					return err
				}
				if changed {
					if err := q.StoredCredentialSealedUpdate(ctx, db.StoredCredentialSealedUpdateParams{ID: c.ID, PasswordSealed: v, PasswordKeyID: r.KeyID()}); err != nil {
						return err
					}
				}
			}
			return nil
		}}}
}
