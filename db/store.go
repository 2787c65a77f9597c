package db

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/cairn-rmm/cairn"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Migrations returns the embedded migration files (also sqlc's schema).
func Migrations() fs.FS {
	sub, err := fs.Sub(migrationFS, "migrations")
	if err != nil {
		panic(err)
	}
	return sub
}

// Migrate applies every pending migration. It takes a PostgreSQL advisory
// lock (goose's session locker) so replicas starting together do not race.
func Migrate(ctx context.Context, databaseURL string) error {
	cfg, err := pgx.ParseConfig(databaseURL)
	if err != nil {
		return fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	sqlDB := stdlib.OpenDB(*cfg)
	defer sqlDB.Close()
	return migrateDB(ctx, sqlDB)
}

func migrateDB(ctx context.Context, sqlDB *sql.DB) error {
	locker, err := newLocker()
	if err != nil {
		return err
	}
	p, err := goose.NewProvider(goose.DialectPostgres, sqlDB, Migrations(), goose.WithSessionLocker(locker))
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// Store is the Engine's database handle: the pool plus the generated
// queries, with a helper for transactions. Queries and InTx go through the
// bounded pool (acquire timeout, load shedding); Pool itself is for the
// few long-lived connections (LISTEN) that must not be shed.
type Store struct {
	Pool *pgxpool.Pool
	*Queries
	bounded *boundedPool
}

// Open connects a pool with the default PoolConfig and checks that the
// server answers.
func Open(ctx context.Context, databaseURL string) (*Store, error) {
	return OpenWith(ctx, databaseURL, PoolConfig{})
}

// OpenWith connects a pool sized and bounded by pc and checks that the
// server answers.
func OpenWith(ctx context.Context, databaseURL string, pc PoolConfig) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	pc = pc.withDefaults()
	pc.apply(cfg)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	s := FromPool(pool)
	s.bounded.timeout = pc.AcquireTimeout
	return s, nil
}

// FromPool wraps an open pool (tests that trace statements build their
// own) with the default acquire timeout.
func FromPool(pool *pgxpool.Pool) *Store {
	b := &boundedPool{pool: pool, timeout: DefaultAcquireTimeout}
	return &Store{Pool: pool, Queries: New(b), bounded: b}
}

// DB is the bounded pool, for the few statements built outside sqlc
// (batches of generated queries, dynamic filters).
func (s *Store) DB() DBTX { return s.bounded }

// Close releases the pool.
func (s *Store) Close() { s.Pool.Close() }

// InTx runs fn in a transaction, committing when it returns nil.
func (s *Store) InTx(ctx context.Context, fn func(q *Queries) error) error {
	return pgx.BeginFunc(ctx, s.bounded, func(tx pgx.Tx) error { return fn(s.WithTx(tx)) })
}

// NotFound turns pgx.ErrNoRows into the domain's not_found error with the
// given client message; other errors pass through.
func NotFound(err error, format string, args ...any) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return cairn.Errorf(cairn.ECodeNotFound, format, args...)
	}
	return err
}

// IsNoRows reports whether err is pgx.ErrNoRows.
func IsNoRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }

// IsUniqueViolation reports whether err is a unique-constraint violation,
// optionally of the named constraint.
func IsUniqueViolation(err error, constraint string) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23505" {
		return false
	}
	return constraint == "" || pgErr.ConstraintName == constraint
}

// IsForeignKeyViolation reports a PostgreSQL foreign-key violation (a
// referenced row, such as a purged device, is gone).
func IsForeignKeyViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23503"
}
