package devtemporal_test

import (
	"context"
	"log/slog"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/cairn-rmm/cairn/internal/devtemporal"
	"github.com/cairn-rmm/cairn/internal/pgtest"
	"github.com/cairn-rmm/cairn/internal/testport"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// On PostgreSQL the server creates its two databases beside the given
// one, sets their schema up with Temporal's own schema tool and
// registers the namespace with its search attributes; a second start on
// the same databases finds the schema current and the workflows kept.
func TestPostgresServerKeepsItsState(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.URL(pgtest.NewDatabase(t))
	storeDB, visDB, err := devtemporal.PostgresDatabases(dbURL)
	require.NoError(t, err)
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), pgtest.URL("postgres"))
		if err != nil {
			return
		}
		defer conn.Close(context.Background())
		for _, name := range []string{storeDB, visDB} {
			_, _ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
		}
	})
	opts := devtemporal.Options{PostgresURL: dbURL, Port: testport.Free(t), Namespace: "cairn-test",
		SearchAttributes: []string{"DeviceGUID"}, Logger: quiet, LogLevel: slog.LevelError}
	srv, err := devtemporal.Start(opts)
	require.NoError(t, err)
	c, err := client.Dial(client.Options{HostPort: srv.Address, Namespace: "cairn-test", Logger: nopLogger{}})
	require.NoError(t, err)
	out, id := runGreeting(t, c)
	require.Equal(t, "hello cairn", out)
	c.Close()
	srv.Stop()

	// The state is in PostgreSQL, not in the process.
	conn, err := pgx.Connect(context.Background(), pgtest.URL(storeDB))
	require.NoError(t, err)
	var n int
	require.NoError(t, conn.QueryRow(context.Background(), "SELECT count(*) FROM executions").Scan(&n))
	require.Positive(t, n, "workflow executions stored in %s", storeDB)
	require.NoError(t, conn.Close(context.Background()))

	srv, err = devtemporal.Start(opts)
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	c, err = client.Dial(client.Options{HostPort: srv.Address, Namespace: "cairn-test", Logger: nopLogger{}})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	desc, err := c.DescribeWorkflowExecution(context.Background(), id, "")
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, desc.WorkflowExecutionInfo.Status)
	ns, err := c.WorkflowService().DescribeNamespace(context.Background(), &workflowservice.DescribeNamespaceRequest{Namespace: "cairn-test"})
	require.NoError(t, err)
	require.NotNil(t, ns.NamespaceInfo)
}
