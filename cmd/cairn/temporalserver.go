package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/cairn-rmm/cairn/internal/devtemporal"
	"github.com/cairn-rmm/cairn/workflows"
)

// runTemporalServer runs `cairn temporal-server`: a Temporal server with
// every service in one process (go.temporal.io/server, the code the
// embedded server runs) on PostgreSQL persistence, as its own process,
// for a scaled-out deployment whose `cairn serve` replicas and `cairn
// worker`s share it through TEMPORAL_ADDRESS (docs/architecture.md
// "Scaling out"). It creates its two databases beside DATABASE_URL's and
// keeps their schema current with Temporal's schema tool at each start,
// and registers the namespace with Cairn's search attributes. Its
// frontend serves TLS, and with --tls-client-ca-file requires client
// certificates, as a production cluster's should ("Temporal connection
// security"). One such
// process is one Temporal node: a Temporal cluster of several nodes is
// run with Temporal's own tooling and reached the same way.
func runTemporalServer(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("temporal-server", flag.ExitOnError)
	dbURL := fs.String("database-url", env("DATABASE_URL", ""),
		"PostgreSQL URL whose server keeps Temporal's databases (<database>_temporal, <database>_temporal_visibility)")
	ip := fs.String("ip", env("CAIRN_TEMPORAL_IP", "127.0.0.1"), "address the server's services listen on")
	frontendIP := fs.String("frontend-ip", env("CAIRN_TEMPORAL_FRONTEND_IP", ""),
		"address the frontend alone listens on, such as 0.0.0.0 in a container (default: ip)")
	port, err := envInt("CAIRN_TEMPORAL_PORT", 7233)
	if err != nil {
		return err
	}
	fs.IntVar(&port, "port", port, "frontend port")
	uiPort, err := envInt("CAIRN_TEMPORAL_UI_PORT", 0)
	if err != nil {
		return err
	}
	fs.IntVar(&uiPort, "ui-port", uiPort, "Temporal UI port on ip (0: no UI)")
	namespace := fs.String("namespace", env("TEMPORAL_NAMESPACE", "default"), "namespace to register")
	var tlsOpts devtemporal.TLS
	fs.StringVar(&tlsOpts.CertFile, "tls-cert-file", env("CAIRN_TEMPORAL_TLS_CERT", ""), "PEM certificate the frontend serves TLS with (empty: plain gRPC)")
	fs.StringVar(&tlsOpts.KeyFile, "tls-key-file", env("CAIRN_TEMPORAL_TLS_KEY", ""), "PEM key of tls-cert-file")
	fs.StringVar(&tlsOpts.RootCAFile, "tls-ca-file", env("CAIRN_TEMPORAL_TLS_CA", ""),
		"PEM CA that issued tls-cert-file, which the server's own clients (its system worker, the UI) verify it with")
	fs.StringVar(&tlsOpts.ClientCAFile, "tls-client-ca-file", env("CAIRN_TEMPORAL_TLS_CLIENT_CA", ""),
		"PEM CA(s) whose client certificates the frontend requires (mTLS; empty: none required)")
	fs.StringVar(&tlsOpts.ClientCertFile, "tls-system-cert-file", env("CAIRN_TEMPORAL_TLS_SYSTEM_CERT", ""),
		"PEM client certificate the server's own clients present (required with tls-client-ca-file)")
	fs.StringVar(&tlsOpts.ClientKeyFile, "tls-system-key-file", env("CAIRN_TEMPORAL_TLS_SYSTEM_KEY", ""), "PEM key of tls-system-cert-file")
	fs.StringVar(&tlsOpts.ServerName, "tls-server-name", env("CAIRN_TEMPORAL_TLS_SERVER_NAME", ""),
		"name the server's own clients verify the frontend's certificate as (default: ip)")
	level := fs.String("log-level", env("CAIRN_LOG_LEVEL", "warn"), "debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dbURL == "" {
		return errors.New("temporal-server needs DATABASE_URL (or --database-url): Temporal's state goes to that PostgreSQL server")
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(*level)); err != nil {
		return fmt.Errorf("log-level: %w", err)
	}
	log := newLogger("text", lvl).With("component", "temporal")
	var serverTLS *devtemporal.TLS
	if tlsOpts != (devtemporal.TLS{}) {
		serverTLS = &tlsOpts
	}
	srv, err := devtemporal.Start(devtemporal.Options{PostgresURL: *dbURL, IP: *ip, FrontendIP: *frontendIP, Port: port, UIPort: uiPort,
		Namespace: *namespace, SearchAttributes: workflows.SearchAttributes, Logger: log, LogLevel: lvl, TLS: serverTLS})
	if err != nil {
		return err
	}
	defer srv.Stop()
	store, vis, _ := devtemporal.PostgresDatabases(*dbURL)
	lines := []string{"frontend at " + srv.Address, "namespace " + srv.Namespace, "PostgreSQL databases " + store + ", " + vis}
	switch {
	case serverTLS != nil && serverTLS.ClientCAFile != "":
		lines = append(lines, "TLS, client certificates required")
	case serverTLS != nil:
		lines = append(lines, "TLS")
	default:
		lines = append(lines, "plain gRPC: keep the frontend on a private network")
	}
	if srv.UIAddress != "" {
		lines = append(lines, "UI at "+srv.UIAddress)
	}
	fmt.Fprintln(os.Stderr, "Temporal server ready: "+strings.Join(lines, "; "))
	<-ctx.Done()
	return nil
}
