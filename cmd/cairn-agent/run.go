package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/cairn-rmm/cairn/agent"
	agentops "github.com/cairn-rmm/cairn/agent/ops"
	agentruntime "github.com/cairn-rmm/cairn/agent/runtime"
	agentscripts "github.com/cairn-rmm/cairn/agent/scripts"
	"github.com/cairn-rmm/cairn/agent/shell"
	"github.com/cairn-rmm/cairn/agent/transport"
	agentversion "github.com/cairn-rmm/cairn/agent/version"
)

// runAgent: cairn-agent run [--config PATH] [--hostname NAME]. It runs
// until SIGINT or SIGTERM; the service manager restarts it otherwise.
func runAgent(ctx context.Context, configPath string, args []string, stderr io.Writer, h host) error {
	fs := newFlagSet("run")
	fs.StringVar(&configPath, "config", configPath, "")
	hostname := fs.String("hostname", "", "")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := load(configPath)
	if err != nil {
		return err
	}
	if cfg.ServerURL == "" {
		return fmt.Errorf("config %s names no server; run cairn-agent enroll --server URL --code CODE first", configPath)
	}
	id, err := identity(h, *hostname)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	build := agentversion.Build()
	if cfg.Agent.InstalledBuildID != build {
		// agent.installed_build_id records the build that runs here (SPEC
		// "Versioning" 3); a binary replaced by an update or a reinstall
		// corrects it on its first start.
		if _, err := agent.Update(configPath, "run", func(c *agent.Config) error {
			c.Agent.InstalledBuildID = build
			return nil
		}); err != nil {
			return configErr(configPath, err)
		}
	}
	handlers := agentruntime.NewHandlers()
	if err := agentops.Register(handlers, agentops.Options{Inventory: h.ops, Logger: log}); err != nil {
		return err
	}
	store := agentruntime.FileStore{Path: configPath, Writer: "run"}
	scriptOpts := agentscripts.Options{Config: store.Load, Logger: log}
	if err := agentscripts.Register(handlers, scriptOpts); err != nil {
		return err
	}
	queued, err := agentscripts.Queued(scriptOpts)
	if err != nil {
		return err
	}
	shells, err := shell.Register(ctx, handlers, shell.Options{Logger: log})
	if err != nil {
		return err
	}
	// Shells outlive realtime sockets but not the agent: every one is
	// killed and reaped before the process exits, however Run ended.
	defer shells.Close()
	a, err := agentruntime.New(agentruntime.Options{
		Store: store,
		// Work queued while the agent was offline runs once it is back.
		OnConnected: queued,
		Identity:    id,
		Version:     version,
		BuildID:     build,
		Collector:   h.collector,
		Roles:       h.roles,
		Hash:        h.hash,
		Handlers:    handlers,
		Timing:      h.timing,
		Logger:      log,
	})
	if err != nil {
		return err
	}
	log.Info("cairn-agent starting", "version", version, "build_id", build, "config", configPath, "server", cfg.ServerURL, "hostname", id.Hostname)
	if err := a.Run(ctx); err != nil {
		return err
	}
	log.Info("cairn-agent stopped")
	return nil
}

// simulate: cairn-agent simulate --server URL --code CODE --count N
// [--ca-file PEM] [--concurrency C] [--duration D] [--prefix NAME]
func simulate(ctx context.Context, args []string, stdout, stderr io.Writer, h host) error {
	fs := newFlagSet("simulate")
	server := fs.String("server", "", "")
	code := fs.String("code", "", "")
	caFile := fs.String("ca-file", "", "")
	count := fs.Int("count", 0, "")
	concurrency := fs.Int("concurrency", 10, "")
	duration := fs.Duration("duration", 0, "")
	prefix := fs.String("prefix", "sim", "")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case *server == "" || *code == "":
		return usagef("simulate needs --server URL and --code CODE")
	case *count < 1:
		return usagef("simulate needs --count of at least 1")
	case *concurrency < 1:
		return usagef("--concurrency must be at least 1")
	case *duration < 0:
		return usagef("--duration must not be negative")
	}
	if err := checkServerURL(*server); err != nil {
		return err
	}
	var caPEM string
	if *caFile != "" {
		pem, err := transport.LoadCAFile(*caFile)
		if err != nil {
			return fmt.Errorf("--ca-file %s: %w", *caFile, err)
		}
		caPEM = pem
	}
	fmt.Fprintf(stderr, "simulating %d agents against %s (enrollment needs the site's auto-approval, or an administrator approving)\n", *count, *server)
	_, err := agentruntime.Simulate(ctx, agentruntime.SimOptions{
		ServerURL: *server, Code: *code, CAPEM: caPEM, Count: *count, Concurrency: *concurrency,
		Duration: *duration, Prefix: *prefix, Version: version, Inventory: h.synthetic, Timing: h.timing, Out: stdout,
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
