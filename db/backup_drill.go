package db

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
)

// The restore drill's scratch database (issue 26, docs/architecture.md
// "Scheduled backups"): made beside the Engine's, migrated, restored into,
// checked and dropped. As in backup.go, identifiers are quoted with
// pgx.Identifier and no value is spliced.

// ScratchPrefix starts every scratch database's name.
const ScratchPrefix = "cairn_drill_"

// ScratchPrefixOf starts the scratch databases of the Engine whose
// database s is: ScratchPrefix and a hash of that database's name, so a
// drill's leftover (a crash before its drop) is recognised and dropped by
// the next drill of the same Engine, never another Engine's on a shared
// server.
func (s *Store) ScratchPrefixOf() string {
	sum := sha256.Sum256([]byte(s.Pool.Config().ConnConfig.Database))
	return ScratchPrefix + hex.EncodeToString(sum[:4]) + "_"
}

// OpenScratch creates the database name (a ScratchPrefix name) on the
// server of s, with s's role and connection settings, applies the
// migrations and opens a small pool on it.
func (s *Store) OpenScratch(ctx context.Context, name string) (*Store, error) {
	if !strings.HasPrefix(name, ScratchPrefix) {
		return nil, fmt.Errorf("db: scratch database %q lacks the prefix %s", name, ScratchPrefix)
	}
	if _, err := s.Pool.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return nil, fmt.Errorf("create the scratch database (the Engine's role needs CREATEDB): %w", err)
	}
	cfg := s.Pool.Config()
	cfg.ConnConfig.Database = name
	cfg.MaxConns = 2
	cfg.MinConns = 0
	sqlDB := stdlib.OpenDB(*cfg.ConnConfig.Copy())
	err := migrateDB(ctx, sqlDB)
	sqlDB.Close()
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return FromPool(pool), nil
}

// DropScratch drops the scratch database name (closing its sessions).
func (s *Store) DropScratch(ctx context.Context, name string) error {
	if !strings.HasPrefix(name, ScratchPrefix) {
		return fmt.Errorf("db: %q is no scratch database", name)
	}
	_, err := s.Pool.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	return err
}

// ScratchLeftovers lists this Engine's scratch databases on the server
// (drills that died before dropping theirs).
func (s *Store) ScratchLeftovers(ctx context.Context) ([]string, error) {
	rows, err := s.Pool.Query(ctx, "SELECT datname FROM pg_database WHERE starts_with(datname, $1) ORDER BY datname", s.ScratchPrefixOf())
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// BackupCount counts table's rows.
func (s *Store) BackupCount(ctx context.Context, table string) (int64, error) {
	var n int64
	err := s.Pool.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{table}.Sanitize()).Scan(&n)
	return n, err
}

// ForeignKeyViolation is a foreign key some rows break.
type ForeignKeyViolation struct {
	Table      string `json:"table"`
	Constraint string `json:"constraint"`
	Rows       int64  `json:"rows"`
}

// BackupForeignKeyViolations checks every foreign key of the public
// schema row by row (whatever PostgreSQL enforced on the way in: a key
// added NOT VALID, or rows loaded with triggers off, are caught too): a
// row whose referencing columns are all set must find its referenced row.
func (s *Store) BackupForeignKeyViolations(ctx context.Context) ([]ForeignKeyViolation, error) {
	rows, err := s.Pool.Query(ctx, `
SELECT c.conname::text, cl.relname::text, rl.relname::text,
       (SELECT array_agg(a.attname::text ORDER BY k.ord) FROM unnest(c.conkey) WITH ORDINALITY k(n, ord)
          JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n),
       (SELECT array_agg(a.attname::text ORDER BY k.ord) FROM unnest(c.confkey) WITH ORDINALITY k(n, ord)
          JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.n)
FROM pg_constraint c
JOIN pg_class cl ON cl.oid = c.conrelid
JOIN pg_class rl ON rl.oid = c.confrelid
JOIN pg_namespace n ON n.oid = cl.relnamespace
WHERE c.contype = 'f' AND n.nspname = 'public'
ORDER BY cl.relname, c.conname`)
	if err != nil {
		return nil, err
	}
	type fk struct {
		name, table, ref string
		cols, refCols    []string
	}
	keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (fk, error) {
		var k fk
		err := r.Scan(&k.name, &k.table, &k.ref, &k.cols, &k.refCols)
		return k, err
	})
	if err != nil {
		return nil, err
	}
	var out []ForeignKeyViolation
	for _, k := range keys {
		var set, match []string
		for i, c := range k.cols {
			set = append(set, "c."+pgx.Identifier{c}.Sanitize()+" IS NOT NULL")
			match = append(match, "p."+pgx.Identifier{k.refCols[i]}.Sanitize()+" = c."+pgx.Identifier{c}.Sanitize())
		}
		sql := "SELECT count(*) FROM " + pgx.Identifier{k.table}.Sanitize() + " c WHERE " + strings.Join(set, " AND ") +
			" AND NOT EXISTS (SELECT 1 FROM " + pgx.Identifier{k.ref}.Sanitize() + " p WHERE " + strings.Join(match, " AND ") + ")"
		var n int64
		if err := s.Pool.QueryRow(ctx, sql).Scan(&n); err != nil {
			return nil, fmt.Errorf("check %s: %w", k.name, err)
		}
		if n > 0 {
			out = append(out, ForeignKeyViolation{Table: k.table, Constraint: k.name, Rows: n})
		}
	}
	return out, nil
}
