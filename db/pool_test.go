package db

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

// A PostgreSQL restart or overload is transient (503 service_unavailable),
// a bad statement is not (500, logged).
func TestTransientErrors(t *testing.T) {
	t.Parallel()
	for _, err := range []error{
		&pgconn.PgError{Code: "57P01"}, // admin_shutdown
		&pgconn.PgError{Code: "57P03"}, // cannot_connect_now (starting up)
		&pgconn.PgError{Code: "57014"}, // statement_timeout
		&pgconn.PgError{Code: "53300"}, // too_many_connections
		&pgconn.PgError{Code: "08006"}, // connection_failure
		fmt.Errorf("list devices: %w", io.ErrUnexpectedEOF),
		&net.OpError{Op: "read", Err: errors.New("connection reset by peer")},
	} {
		require.True(t, Transient(err), "%v", err)
	}
	for _, err := range []error{
		&pgconn.PgError{Code: "23505"}, // unique_violation
		&pgconn.PgError{Code: "42P01"}, // undefined_table
		errors.New("something else"),
		context.Canceled,
	} {
		require.False(t, Transient(err), "%v", err)
	}
}
