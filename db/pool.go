package db

import (
	"context"
	"errors"
	"io"
	"net"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cairn-rmm/cairn"
)

// ECodeServiceUnavailable: the Engine sheds the request (no database
// connection came free within the acquire timeout, or PostgreSQL cannot be
// reached); the client retries after Retry-After.
const ECodeServiceUnavailable = "service_unavailable"

// PoolConfig sizes the connection pool and bounds its waits
// (CAIRN_DB_MAX_CONNS, CAIRN_DB_ACQUIRE_TIMEOUT, CAIRN_DB_STATEMENT_TIMEOUT).
// Zero values take the defaults.
type PoolConfig struct {
	MaxConns         int
	AcquireTimeout   time.Duration
	StatementTimeout time.Duration
}

// Pool defaults: pgx's own default (max(4, NumCPU)) starves an Engine whose
// requests, heartbeat flushes, presence and activities share the pool.
const (
	DefaultAcquireTimeout   = 5 * time.Second
	DefaultStatementTimeout = 30 * time.Second
	// retryAfterSeconds is what a shed request is told to wait.
	retryAfterSeconds = 2
)

// DefaultMaxConns is max(16, 4*GOMAXPROCS).
func DefaultMaxConns() int { return max(16, 4*runtime.GOMAXPROCS(0)) }

func (c PoolConfig) withDefaults() PoolConfig {
	if c.MaxConns <= 0 {
		c.MaxConns = DefaultMaxConns()
	}
	if c.AcquireTimeout <= 0 {
		c.AcquireTimeout = DefaultAcquireTimeout
	}
	if c.StatementTimeout <= 0 {
		c.StatementTimeout = DefaultStatementTimeout
	}
	return c
}

// apply sets the pool size and the server-side statement timeout, so a
// runaway query ends in PostgreSQL instead of holding a connection.
func (c PoolConfig) apply(cfg *pgxpool.Config) {
	cfg.MaxConns = int32(c.MaxConns)
	cfg.ConnConfig.RuntimeParams["statement_timeout"] = strconv.FormatInt(c.StatementTimeout.Milliseconds(), 10)
}

// boundedPool is the pool as the queries see it: every statement first
// acquires a connection within the acquire timeout, and a request that
// cannot get one is shed with service_unavailable instead of queueing
// without bound behind a saturated pool.
type boundedPool struct {
	pool    *pgxpool.Pool
	timeout time.Duration
}

func overloaded() error {
	e := cairn.Errorf(ECodeServiceUnavailable, "the Engine is too busy to answer now; try again shortly")
	e.RetryAfterSeconds = retryAfterSeconds
	return e
}

func (p *boundedPool) acquire(ctx context.Context) (*pgxpool.Conn, error) {
	actx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	c, err := p.pool.Acquire(actx)
	if err == nil {
		return c, nil
	}
	var connectErr *pgconn.ConnectError
	switch {
	case ctx.Err() != nil:
		return nil, err
	case actx.Err() != nil, errors.As(err, &connectErr):
		// Saturated, or PostgreSQL is restarting: both pass, so the
		// client is told to come back rather than given a 500.
		return nil, overloaded()
	}
	return nil, err
}

// Transient reports whether err is PostgreSQL being away or overloaded
// rather than a fault of the statement: a connection lost mid-statement
// (restart, failover), the server shutting down or refusing connections,
// or a statement cancelled by statement_timeout. The API answers these
// with 503 service_unavailable, as it does a shed request.
func Transient(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		class := pgErr.Code[:2]
		// 08 connection exception, 53 insufficient resources (too many
		// connections), 57 operator intervention (admin/crash shutdown,
		// cannot connect now, query canceled by statement_timeout).
		return class == "08" || class == "53" || class == "57"
	}
	var connectErr *pgconn.ConnectError
	var netErr *net.OpError
	return errors.As(err, &connectErr) || errors.As(err, &netErr) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed)
}

// Overloaded is the error of a shed request (service_unavailable with
// Retry-After).
func Overloaded() error { return overloaded() }

func (p *boundedPool) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	c, err := p.acquire(ctx)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	defer c.Release()
	return c.Exec(ctx, sql, args...)
}

func (p *boundedPool) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	c, err := p.acquire(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := c.Query(ctx, sql, args...)
	if err != nil {
		c.Release()
		return nil, err
	}
	return &releasingRows{Rows: rows, c: c}, nil
}

func (p *boundedPool) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	c, err := p.acquire(ctx)
	if err != nil {
		return errRow{err}
	}
	return releasingRow{r: c.QueryRow(ctx, sql, args...), c: c}
}

func (p *boundedPool) CopyFrom(ctx context.Context, table pgx.Identifier, cols []string, src pgx.CopyFromSource) (int64, error) {
	c, err := p.acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer c.Release()
	return c.CopyFrom(ctx, table, cols, src)
}

func (p *boundedPool) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	c, err := p.acquire(ctx)
	if err != nil {
		return errBatch{err}
	}
	return &releasingBatch{BatchResults: c.SendBatch(ctx, b), c: c}
}

// Begin starts a transaction whose connection goes back to the pool when
// it commits or rolls back.
func (p *boundedPool) Begin(ctx context.Context) (pgx.Tx, error) {
	c, err := p.acquire(ctx)
	if err != nil {
		return nil, err
	}
	tx, err := c.Begin(ctx)
	if err != nil {
		c.Release()
		return nil, err
	}
	return &releasingTx{Tx: tx, c: c}, nil
}

type releasingRows struct {
	pgx.Rows
	c    *pgxpool.Conn
	once sync.Once
}

func (r *releasingRows) Close() {
	r.Rows.Close()
	r.once.Do(r.c.Release)
}

// Next releases the connection once the rows are exhausted, as pgxpool's
// own rows do, for callers that read to the end without Close.
func (r *releasingRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

type releasingRow struct {
	r pgx.Row
	c *pgxpool.Conn
}

func (r releasingRow) Scan(dest ...any) error {
	defer r.c.Release()
	return r.r.Scan(dest...)
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

type releasingBatch struct {
	pgx.BatchResults
	c    *pgxpool.Conn
	once sync.Once
}

func (b *releasingBatch) Close() error {
	err := b.BatchResults.Close()
	b.once.Do(b.c.Release)
	return err
}

type errBatch struct{ err error }

func (b errBatch) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, b.err }
func (b errBatch) Query() (pgx.Rows, error)         { return nil, b.err }
func (b errBatch) QueryRow() pgx.Row                { return errRow(b) }
func (b errBatch) Close() error                     { return b.err }
func (b errBatch) Tx() pgx.Tx                       { return nil }

type releasingTx struct {
	pgx.Tx
	c    *pgxpool.Conn
	once sync.Once
}

func (t *releasingTx) Commit(ctx context.Context) error {
	err := t.Tx.Commit(ctx)
	t.once.Do(t.c.Release)
	return err
}

func (t *releasingTx) Rollback(ctx context.Context) error {
	err := t.Tx.Rollback(ctx)
	t.once.Do(t.c.Release)
	return err
}
