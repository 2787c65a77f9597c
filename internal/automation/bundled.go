package automation

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
)

// BundledActor is the created_by/updated_by of seeded bundled content.
const BundledActor = "system"

// Bundled is an assembly shipped with the Engine (the scripts that collect
// reserved metadata fields). Key names it across releases.
type Bundled struct {
	Key   string
	Input AssemblyInput
}

// EnsureBundled makes each bundled assembly exist and returns their IDs by
// key. It is idempotent and safe for replicas starting at once (one
// advisory lock). An assembly is created once; when a release ships a
// different body than the one last seeded, the change becomes a new
// version like any edit (runs keep the version they ran). Bundled
// assemblies are read-only (bundled_read_only), so a current version
// whose body is not the shipped one is an edit made before they were (an
// operator could then change what every device runs): it is replaced by
// the shipped body as a new version, and stays in the history.
func (s *Service) EnsureBundled(ctx context.Context, list []Bundled) (map[string]int64, error) {
	ids := make(map[string]int64, len(list))
	err := s.store.InTx(ctx, func(q *db.Queries) error {
		if err := q.BundledSeedLock(ctx); err != nil {
			return err
		}
		for _, b := range list {
			in, err := checkAssembly(b.Input)
			if err != nil {
				return fmt.Errorf("bundled assembly %s: %w", b.Key, err)
			}
			sum := sha256.Sum256([]byte(in.Body))
			key := b.Key
			row, err := q.AssemblyByBundledKey(ctx, &key)
			switch {
			case db.IsNoRows(err):
				id, err := createBundled(ctx, q, key, in, sum[:])
				if err != nil {
					return fmt.Errorf("bundled assembly %s: %w", key, err)
				}
				ids[key] = id
				continue
			case err != nil:
				return err
			}
			ids[key] = row.ID
			cur, err := q.AssemblyGet(ctx, db.AssemblyGetParams{ID: row.ID})
			if err != nil {
				return err
			}
			if bytes.Equal(row.BundledSha256, sum[:]) && bytes.Equal(cur.BodySha256, sum[:]) {
				continue
			}
			a, err := q.AssemblyGetForUpdate(ctx, row.ID)
			if err != nil {
				return err
			}
			version := a.CurrentVersion + 1
			if err := insertVersion(ctx, q, row.ID, version, BundledActor, in); err != nil {
				return err
			}
			if err := q.AssemblyUpdate(ctx, db.AssemblyUpdateParams{ID: row.ID, Name: a.Name, Kind: in.Kind, Language: in.Language,
				Description: a.Description, CurrentVersion: version, Actor: BundledActor}); err != nil {
				return err
			}
			if err := q.AssemblyMarkBundled(ctx, db.AssemblyMarkBundledParams{ID: row.ID, BundledKey: &key, BundledSha256: sum[:]}); err != nil {
				return err
			}
		}
		return nil
	})
	return ids, err
}

// createBundled inserts a bundled assembly as version 1. An operator's
// assembly may already hold the name: the bundle then takes the name with
// " (bundled)" appended (and a number after that).
func createBundled(ctx context.Context, q *db.Queries, key string, in AssemblyInput, sum []byte) (int64, error) {
	base := in.Name
	for i := 1; ; i++ {
		taken, err := q.AssemblyNameTaken(ctx, in.Name)
		if err != nil {
			return 0, err
		}
		if !taken {
			break
		}
		if i == 1 {
			in.Name = base + " (bundled)"
		} else {
			in.Name = fmt.Sprintf("%s (bundled %d)", base, i)
		}
	}
	a, err := q.AssemblyInsert(ctx, db.AssemblyInsertParams{Name: in.Name, Kind: in.Kind, Language: in.Language,
		Description: in.Description, Actor: BundledActor})
	if err != nil {
		return 0, err
	}
	if err := insertVersion(ctx, q, a.ID, 1, BundledActor, in); err != nil {
		return 0, err
	}
	return a.ID, q.AssemblyMarkBundled(ctx, db.AssemblyMarkBundledParams{ID: a.ID, BundledKey: &key, BundledSha256: sum})
}

// bundledReadOnly refuses a change of a bundled assembly: reserved
// metadata fields link to them and every device may run them, so only a
// release changes them (EnsureBundled).
func bundledReadOnly(id int64) error {
	return cairn.Errorf(cairn.ECodeBundledReadOnly,
		"assembly %d is bundled with the Engine (it collects a reserved metadata field) and is read-only; copy it to make your own", id)
}
