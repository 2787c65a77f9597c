package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/cairn-rmm/cairn/internal/gateway"
	"github.com/cairn-rmm/cairn/internal/serveradmin"
	"github.com/cairn-rmm/cairn/internal/vnc"
)

// runGateway is `cairn gateway`: the Engine's WireGuard and the
// remote-desktop gateway in a process of their own, without database
// credentials (docs/architecture.md "Gateway process"). It signs its
// Internal calls with the key of its member file (`cairn cluster join`)
// or CAIRN_INTERNAL_KEY_ID and CAIRN_INTERNAL_KEY_FILE, and serves the
// Engine's signed requests on its listener, which the serve replicas
// name in CAIRN_GATEWAY_URL (a private address: browsers never reach it).
func runGateway(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("gateway", flag.ExitOnError)
	listen := fs.String("listen", env("CAIRN_GATEWAY_ADDR", "127.0.0.1:8470"), "address of the listener the Engine relays desktop sockets and tunnel dials to")
	dataDir := fs.String("data-dir", env("CAIRN_DATA_DIR", ".data"), "directory of the member file")
	memberFile := fs.String("member-file", env("CAIRN_CLUSTER_MEMBER_FILE", ""), "the member file (default <data-dir>/"+memberFileName+")")
	caFile := fs.String("ca-file", env("CAIRN_ENGINE_CA_FILE", ""), "PEM certificate(s) to trust for the Engine's HTTPS (its local CA)")
	host, _ := os.Hostname()
	name := fs.String("name", host, "the name administrators see")
	logFormat := fs.String("log-format", env("CAIRN_LOG_FORMAT", "json"), "json or text")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if os.Getenv("DATABASE_URL") != "" {
		// The gateway's point is to hold the WireGuard and relay desktops
		// without a way into the database.
		return errors.New("cairn gateway takes no DATABASE_URL: it reaches the Engine only through signed Internal calls; unset it")
	}
	vcfg, err := vnc.ConfigFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	if *memberFile == "" {
		*memberFile = filepath.Join(*dataDir, memberFileName)
	}
	c, err := internalCallerFrom(*memberFile, *caFile)
	if err != nil {
		return err
	}
	log := newLogger(*logFormat, slog.LevelInfo).With("component", "gateway")
	p := &gateway.Process{Engine: &gateway.EngineClient{Base: c.base, KeyID: c.keyID, Secret: c.secret, HTTP: c.client},
		VNC: vcfg, Name: *name, Version: serveradmin.BuildInfo().Version, Log: log}
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("gateway listener: %w", err)
	}
	srv := &http.Server{Handler: p.Handler(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	log.Info("gateway listening", "addr", l.Addr().String(), "engine", c.base, "internal_key_id", c.keyID)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); p.Run(runCtx) }()
	select {
	case err = <-errc:
	case <-ctx.Done():
	}
	cancel()
	<-done
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	_ = srv.Shutdown(sctx)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
