package enrollment

import (
	"context"

	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/aegis"
)

// SealedColumns are the enrollment codes a data-key rotation re-seals.
func SealedColumns() []aegis.Column {
	return []aegis.Column{{Names: []string{"enrollment_codes.code_sealed"},
		Reseal: func(ctx context.Context, q *db.Queries, r *aegis.Resealer) error {
			rows, err := q.EnrollmentCodeSealedList(ctx)
			if err != nil {
				return err
			}
			for _, c := range rows {
				v, changed, err := r.Reseal(c.CodeSealed, codeAAD(c.ID))
				if err != nil {
					return err
				}
				if changed {
					if err := q.EnrollmentCodeSealedUpdate(ctx, db.EnrollmentCodeSealedUpdateParams{ID: c.ID, CodeSealed: v}); err != nil {
						return err
					}
				}
			}
			return nil
		}}}
}
