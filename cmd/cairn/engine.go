package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
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
	stops    []func()
	banner   []string
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

// openTemporal dials TEMPORAL_ADDRESS, or embeds the dev server, and makes
// sure the custom search attributes exist.
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
			Namespace: c.TemporalNamespace, SearchAttributes: workflows.SearchAttributes,
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
	tc, err := client.DialContext(ctx, client.Options{HostPort: addr, Namespace: c.TemporalNamespace,
		Logger: tlog.NewStructuredLogger(rt.log.With("component", "temporal-client"))})
	if err != nil {
		return fmt.Errorf("connect to Temporal at %s: %w", addr, err)
	}
	rt.onStop(tc.Close)
	rt.temporal = tc
	return ensureSearchAttributes(ctx, tc, c.TemporalNamespace)
}

// ensureSearchAttributes registers Cairn's search attributes on a Temporal
// server that lacks them (the embedded one has them from the start).
func ensureSearchAttributes(ctx context.Context, tc client.Client, namespace string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	have, err := tc.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return fmt.Errorf("list search attributes: %w", err)
	}
	missing := map[string]enumspb.IndexedValueType{}
	for _, name := range workflows.SearchAttributes {
		if _, ok := have.GetCustomAttributes()[name]; !ok {
			missing[name] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
		}
	}
	if len(missing) == 0 {
		return nil
	}
	_, err = tc.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: namespace, SearchAttributes: missing})
	var exists *serviceerror.AlreadyExists
	if err != nil && !errors.As(err, &exists) {
		return fmt.Errorf("add search attributes: %w", err)
	}
	return nil
}

func (rt *runtime) printBanner(extra ...string) {
	lines := append(append([]string{}, extra...), rt.banner...)
	fmt.Fprintln(os.Stderr, "\n  Cairn is running\n\n  "+strings.Join(lines, "\n  ")+"\n\n  Ctrl-C stops everything.")
}
