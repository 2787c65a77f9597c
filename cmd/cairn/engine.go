package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"

	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devpostgres"
	"github.com/cairn-rmm/cairn/internal/devtemporal"
	"github.com/cairn-rmm/cairn/workflows"
)

// runtime holds the infrastructure every command needs, and stops it in
// reverse order.
type runtime struct {
	log      *slog.Logger
	store    *db.Store
	temporal client.Client
	// temporalOpts and temporalCreds reach TEMPORAL_ADDRESS (TLS, client
	// certificate, API key); zero for the embedded server.
	temporalOpts  client.ConnectionOptions
	temporalCreds client.Credentials
	stops         []func()
	banner        []string
}

func (rt *runtime) onStop(f func()) { rt.stops = append(rt.stops, f) }

func (rt *runtime) close() {
	for i := len(rt.stops) - 1; i >= 0; i-- {
		rt.stops[i]()
	}
}

// openDatabase connects to DATABASE_URL, or starts the private cluster, and
// applies migrations.
func (rt *runtime) openDatabase(ctx context.Context, c config) error {
	url := c.DatabaseURL
	if url == "" {
		cluster, err := devpostgres.Start(ctx, devpostgres.Options{Dir: filepath.Join(c.DataDir, "postgres"), Logger: rt.log, InstallIfMissing: true})
		if err != nil {
			return err
		}
		rt.onStop(cluster.Stop)
		url = cluster.URL
		rt.banner = append(rt.banner, fmt.Sprintf("PostgreSQL   private cluster in %s on 127.0.0.1:%d", cluster.Base, cluster.Port))
	}
	if err := db.Migrate(ctx, url); err != nil {
		return err
	}
	store, err := db.OpenWith(ctx, url, c.DBPool)
	if err != nil {
		return err
	}
	rt.onStop(store.Close)
	rt.store = store
	return nil
}

// temporalConnection reads the Temporal connection's files (client
// certificate, CA, API key): called before anything starts, so a bad file
// is a configuration error, not a Temporal that never answers.
func (rt *runtime) temporalConnection(c config) error {
	if c.TemporalAddress == "" {
		return nil
	}
	opts, creds, err := c.Temporal.connection(rt.log.With("component", "temporal-client"))
	if err != nil {
		return err
	}
	rt.temporalOpts, rt.temporalCreds = opts, creds
	rt.log.Info("Temporal connection", append([]any{"address", c.TemporalAddress}, c.Temporal.describe()...)...)
	return nil
}

// openTemporal makes a client of TEMPORAL_ADDRESS (as temporalConnection
// set it up), or embeds the dev server.
func (rt *runtime) openTemporal(ctx context.Context, c config, embedUI bool) error {
	addr := c.TemporalAddress
	if addr == "" {
		if err := os.MkdirAll(c.DataDir, 0o755); err != nil {
			return err
		}
		uiPort := c.TemporalUIPort
		if !embedUI {
			uiPort = 0
		}
		srv, err := devtemporal.Start(devtemporal.Options{
			DatabaseFile: filepath.Join(c.DataDir, "temporal.sqlite"), Port: c.TemporalPort, UIPort: uiPort,
			UICodecEndpoint: c.TemporalUICodecEndpoint,
			Namespace:       c.TemporalNamespace, SearchAttributes: workflows.SearchAttributes,
			Logger: rt.log.With("component", "temporal"), LogLevel: slog.LevelWarn,
		})
		if err != nil {
			return err
		}
		rt.onStop(srv.Stop)
		addr = srv.Address
		line := "Temporal     embedded dev server at " + addr
		if srv.UIAddress != "" {
			line += ", UI at " + srv.UIAddress
		}
		rt.banner = append(rt.banner, line)
	}
	// The client dials lazily and redials on its own: the Engine starts,
	// and serves sign-in and agent callbacks, while Temporal is away; the
	// Engine sets up its Temporal side once it answers (engine.Start).
	tc, err := client.NewLazyClient(client.Options{HostPort: addr, Namespace: c.TemporalNamespace,
		ConnectionOptions: rt.temporalOpts, Credentials: rt.temporalCreds,
		Logger: tlog.NewStructuredLogger(rt.log.With("component", "temporal-client"))})
	if err != nil {
		return fmt.Errorf("Temporal client for %s: %w", addr, err)
	}
	rt.onStop(tc.Close)
	rt.temporal = tc
	return nil
}

func (rt *runtime) printBanner(extra ...string) {
	lines := append(append([]string{}, extra...), rt.banner...)
	fmt.Fprintln(os.Stderr, "\n  Cairn is running\n\n  "+strings.Join(lines, "\n  ")+"\n\n  Ctrl-C stops everything.")
}
