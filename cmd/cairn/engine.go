package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net"
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
	log   *slog.Logger
	store *db.Store
	// temporal says how the Engine reaches Temporal; the Engine dials
	// with its own payload codec (engine.New).
	temporal client.Options
	// temporalOpts and temporalCreds reach TEMPORAL_ADDRESS (TLS, client
	// certificate, API key); zero for the embedded server.
	temporalOpts  client.ConnectionOptions
	temporalCreds client.Credentials
	// uiOrigins are the embedded Temporal UI's origins, if it runs.
	uiOrigins []string
	stops     []func()
	banner    []string
	// dbURL is the database openDatabase opened (DATABASE_URL or the
	// private cluster's).
	dbURL string
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
	rt.dbURL = url
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
		opts := devtemporal.Options{
			DatabaseFile: filepath.Join(c.DataDir, "temporal.sqlite"), Port: c.TemporalPort, UIPort: uiPort,
			UICodecEndpoint: cmp.Or(c.TemporalUICodecEndpoint, embeddedCodecEndpoint(c.HTTPAddr)),
			Namespace:       c.TemporalNamespace, SearchAttributes: workflows.SearchAttributes,
			Logger: rt.log.With("component", "temporal"), LogLevel: slog.LevelWarn,
		}
		store := "SQLite " + opts.DatabaseFile
		if c.TemporalStore == temporalStorePostgres {
			opts.PostgresURL = rt.dbURL
			dbName, _, _ := devtemporal.PostgresDatabases(rt.dbURL)
			store = "PostgreSQL database " + dbName
		}
		srv, err := devtemporal.Start(opts)
		if err != nil {
			return err
		}
		rt.onStop(srv.Stop)
		addr = srv.Address
		line := "Temporal     embedded server at " + addr + " on " + store
		if srv.UIAddress != "" {
			// Opened as localhost, the UI is same-site with the console
			// at localhost, so its codec requests carry the session.
			ui := fmt.Sprintf("http://localhost:%d", uiPort)
			rt.uiOrigins = []string{ui, srv.UIAddress}
			line += ", UI at " + ui
		}
		rt.banner = append(rt.banner, line)
	}
	// The Engine's client dials lazily and redials on its own: the Engine
	// starts, and serves sign-in and agent callbacks, while Temporal is
	// away; it sets up its Temporal side once it answers (engine.Start).
	rt.temporal = client.Options{HostPort: addr, Namespace: c.TemporalNamespace,
		ConnectionOptions: rt.temporalOpts, Credentials: rt.temporalCreds,
		Logger: tlog.NewStructuredLogger(rt.log.With("component", "temporal-client"))}
	return nil
}

func (rt *runtime) printBanner(extra ...string) {
	lines := append(append([]string{}, extra...), rt.banner...)
	fmt.Fprintln(os.Stderr, "\n  Cairn is running\n\n  "+strings.Join(lines, "\n  ")+"\n\n  Ctrl-C stops everything.")
}

// embeddedCodecEndpoint is the codec server the embedded Temporal UI uses
// by default: this Engine's plain-HTTP listener, named localhost so that
// a UI opened at localhost is same-site with a console signed in at
// localhost and its requests carry the session cookie.
func embeddedCodecEndpoint(httpAddr string) string {
	_, port, err := net.SplitHostPort(httpAddr)
	if err != nil {
		return ""
	}
	return "http://localhost:" + port + "/api/temporal/codec"
}
