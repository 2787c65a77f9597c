package scriptsign

import (
	"context"

	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/aegis"
)

// SealedColumns are the script-signing private keys a data-key rotation
// re-seals, with the key ID kept beside each.
func SealedColumns() []aegis.Column {
	return []aegis.Column{{Names: []string{"script_signing_keys.private_sealed"},
		Reseal: func(ctx context.Context, q *db.Queries, r *aegis.Resealer) error {
			rows, err := q.ScriptSigningKeySealedList(ctx)
			if err != nil {
				return err
			}
			for _, k := range rows {
				v, changed, err := r.Reseal(k.PrivateSealed, aad(k.KeyID))
				if err != nil {
					return err
				}
				if changed {
					if err := q.ScriptSigningKeySealedUpdate(ctx, db.ScriptSigningKeySealedUpdateParams{KeyID: k.KeyID, PrivateSealed: v, SealedKeyID: r.KeyID()}); err != nil {
						return err
					}
				}
			}
			return nil
		}}}
}
