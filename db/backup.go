package db

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// This file is the one place where SQL is built from identifiers rather
// than written in db/queries (issue 26, docs/architecture.md "Backup and
// restore"). A backup copies every declared table whole, and sqlc would
// need one generated query per table and per column list, which changes
// with every migration; here the table and column names come from the
// running schema (BackupSchemaColumns) after internal/backup checked them
// against its declared list, and every identifier is quoted with
// pgx.Identifier. Values are never spliced: rows travel as JSON through
// PostgreSQL's own row_to_json and json_populate_recordset.

// BackupFilter names the row selections a backup may apply to a table;
// the SQL of each stays here.
type BackupFilter int

const (
	// BackupAllRows exports the whole table.
	BackupAllRows BackupFilter = iota
	// BackupLatestRefreshToken keeps, per device, only its newest refresh
	// token that is neither used, revoked nor expired (SPEC "Backup and
	// restore rules" 4: only the latest active refresh token per agent).
	BackupLatestRefreshToken
)

var backupFilters = map[BackupFilter]string{
	BackupAllRows: "",
	BackupLatestRefreshToken: ` WHERE token_hash IN (SELECT DISTINCT ON (device_guid) token_hash FROM refresh_tokens
		WHERE used_at IS NULL AND revoked_at IS NULL AND expires_at > now() ORDER BY device_guid, created_at DESC)`,
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = pgx.Identifier{n}.Sanitize()
	}
	return strings.Join(q, ", ")
}

// BackupSnapshot runs fn in a read-only, repeatable-read transaction
// without a statement timeout: every table of one export is read from one
// snapshot, however long the copy takes.
func (s *Store) BackupSnapshot(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.bounded, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "SET LOCAL statement_timeout = 0"); err != nil {
			return err
		}
		return fn(tx)
	})
}

// BackupRestoreTx runs fn in one read-write transaction without a
// statement timeout: a restore commits whole or not at all.
func (s *Store) BackupRestoreTx(ctx context.Context, fn func(tx pgx.Tx, q *Queries) error) error {
	return pgx.BeginFunc(ctx, s.bounded, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL statement_timeout = 0"); err != nil {
			return err
		}
		return fn(tx, s.WithTx(tx))
	})
}

// BackupRows streams table's rows, restricted to cols and filter, as one
// JSON object each (PostgreSQL's row_to_json), in primary-key-free but
// stable physical order. fn's argument is only valid during the call.
func BackupRows(ctx context.Context, tx pgx.Tx, table string, cols []string, filter BackupFilter, fn func(row []byte) error) error {
	where, ok := backupFilters[filter]
	if !ok {
		return fmt.Errorf("db: unknown backup filter %d", filter)
	}
	sql := "SELECT row_to_json(r)::text FROM (SELECT " + quoteList(cols) + " FROM " + pgx.Identifier{table}.Sanitize() + where + ") r"
	rows, err := tx.Query(ctx, sql, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		raw := rows.RawValues()
		if len(raw) != 1 {
			return fmt.Errorf("db: backup row of %s has %d values", table, len(raw))
		}
		if err := fn(raw[0]); err != nil {
			return err
		}
	}
	return rows.Err()
}

// BackupTruncate empties tables in one statement (restore does not merge).
func BackupTruncate(ctx context.Context, tx pgx.Tx, tables []string) error {
	if len(tables) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, "TRUNCATE "+quoteList(tables))
	return err
}

// BackupInsert inserts rows (JSON objects keyed by column) into table's
// cols. Identity columns take the backup's values.
func BackupInsert(ctx context.Context, tx pgx.Tx, table string, cols []string, rows []json.RawMessage) (int64, error) {
	if len(rows) == 0 {
		return 0, nil
	}
	list := quoteList(cols)
	sql := "INSERT INTO " + pgx.Identifier{table}.Sanitize() + " (" + list + ") OVERRIDING SYSTEM VALUE SELECT " + list +
		" FROM json_populate_recordset(NULL::" + pgx.Identifier{table}.Sanitize() + ", $1::json)"
	arr, err := json.Marshal(rows)
	if err != nil {
		return 0, err
	}
	tag, err := tx.Exec(ctx, sql, string(arr))
	return tag.RowsAffected(), err
}

// BackupResetSequence moves the sequence behind table.col past the
// restored rows, so the next generated ID does not collide with them.
func BackupResetSequence(ctx context.Context, tx pgx.Tx, table, col string) error {
	sql := "SELECT setval(pg_get_serial_sequence($1, $2), COALESCE((SELECT max(" + pgx.Identifier{col}.Sanitize() + ") FROM " +
		pgx.Identifier{table}.Sanitize() + "), 0) + 1, false)"
	_, err := tx.Exec(ctx, sql, pgx.Identifier{table}.Sanitize(), col)
	return err
}
