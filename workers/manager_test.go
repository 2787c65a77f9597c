package workers_test

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"

	"github.com/cairn-rmm/cairn/internal/devtemporal"
	"github.com/cairn-rmm/cairn/internal/pgtest"
	"github.com/cairn-rmm/cairn/workers"
	"github.com/cairn-rmm/cairn/workflows"
)

var temporalClient client.Client

func TestMain(m *testing.M) {
	os.Exit(func() int {
		quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
		srv, err := devtemporal.Start(devtemporal.Options{LogLevel: slog.LevelError, Logger: quiet, SearchAttributes: workflows.SearchAttributes})
		if err != nil {
			fmt.Fprintln(os.Stderr, "start Temporal:", err)
			return 1
		}
		defer srv.Stop()
		temporalClient, err = client.Dial(client.Options{HostPort: srv.Address, Namespace: srv.Namespace,
			Logger: tlog.NewStructuredLogger(quiet)})
		if err != nil {
			fmt.Fprintln(os.Stderr, "dial Temporal:", err)
			return 1
		}
		defer temporalClient.Close()
		return pgtest.Main(m)
	}())
}

// A site's agent sockets live as long as its worker: Runs answers for the
// sites this process serves, and OnSiteStop hears of every site worker
// that stops, whether the site went away or the process is stopping.
func TestSiteWorkerStopsAreAnnounced(t *testing.T) {
	t.Parallel()
	kept, gone, other := "kept-"+uuid.NewString()[:8], "gone-"+uuid.NewString()[:8], "other-"+uuid.NewString()[:8]
	mgr := workers.NewManager(temporalClient, slog.New(slog.NewTextHandler(io.Discard, nil)),
		func(slug string) bool { return slug != other })
	stopped := make(chan string, 4)
	mgr.OnSiteStop(func(slug string) { stopped <- slug })
	require.NoError(t, mgr.StartEngine())

	mgr.Sync([]string{kept, gone, other})
	require.True(t, mgr.Runs(kept))
	require.True(t, mgr.Runs(gone))
	require.False(t, mgr.Runs(other), "a site this process does not serve")

	mgr.Sync([]string{kept, other})
	require.Equal(t, gone, receive(t, stopped))
	require.False(t, mgr.Runs(gone))
	require.True(t, mgr.Runs(kept))

	mgr.Stop()
	require.Equal(t, kept, receive(t, stopped))
	require.False(t, mgr.Runs(kept))
	require.Empty(t, stopped, "the engine queue is not a site")
}

func receive(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("no site worker stop announced")
		return ""
	}
}
