package auth

import (
	"context"

	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/aegis"
)

// SealedColumns are the operator secrets a data-key rotation re-seals.
func SealedColumns() []aegis.Column {
	return []aegis.Column{{Names: []string{"users.password_sealed", "users.totp_sealed"},
		Reseal: func(ctx context.Context, q *db.Queries, r *aegis.Resealer) error {
			rows, err := q.UserSealedList(ctx)
			if err != nil {
				return err
			}
			for _, u := range rows {
				pw, pwChanged, err := resealOptional(r, u.PasswordSealed, passwordAAD(u.Username))
				if err != nil {
					return err
				}
				totp, totpChanged, err := resealOptional(r, u.TotpSealed, totpAAD(u.Username))
				if err != nil {
					return err
				}
				if pwChanged || totpChanged {
					if err := q.UserSealedUpdate(ctx, db.UserSealedUpdateParams{ID: u.ID, PasswordSealed: pw, TotpSealed: totp}); err != nil {
						return err
					}
				}
			}
			return nil
		}}}
}

func resealOptional(r *aegis.Resealer, v, aad []byte) ([]byte, bool, error) {
	if v == nil {
		return nil, false, nil
	}
	return r.Reseal(v, aad)
}
