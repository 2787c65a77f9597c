package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cairn-rmm/cairn/agent"
	"github.com/cairn-rmm/cairn/agent/agentupdates"
	agentautomation "github.com/cairn-rmm/cairn/agent/automation"
	agentfiles "github.com/cairn-rmm/cairn/agent/files"
	"github.com/cairn-rmm/cairn/agent/inventory"
	agentoperations "github.com/cairn-rmm/cairn/agent/operations"
	"github.com/cairn-rmm/cairn/agent/patches"
	patchenforce "github.com/cairn-rmm/cairn/agent/patches/enforce"
	patchops "github.com/cairn-rmm/cairn/agent/patches/ops"
	"github.com/cairn-rmm/cairn/agent/proto"
	agentrdp "github.com/cairn-rmm/cairn/agent/rdp"
	"github.com/cairn-rmm/cairn/agent/registry"
	"github.com/cairn-rmm/cairn/agent/roles"
	agentruntime "github.com/cairn-rmm/cairn/agent/runtime"
	"github.com/cairn-rmm/cairn/agent/service"
	"github.com/cairn-rmm/cairn/agent/shells"
	"github.com/cairn-rmm/cairn/agent/transport"
	"github.com/cairn-rmm/cairn/agent/tunnels"
	agentversion "github.com/cairn-rmm/cairn/agent/version"
	"github.com/cairn-rmm/cairn/agent/vnc"
)

// runAgent: cairn-agent run [--config PATH] [--hostname NAME]. It runs
// until SIGINT or SIGTERM; the service manager restarts it otherwise.
func runAgent(ctx context.Context, configPath string, args []string, stderr io.Writer, h host) error {
	fs := newFlagSet("run")
	fs.StringVar(&configPath, "config", configPath, "")
	hostname := fs.String("hostname", "", "")
	checkEvery := fs.Duration("update-check-interval", agentupdates.DefaultCheckInterval, "")
	checkinDeadline := fs.Duration("update-checkin-deadline", agentupdates.DefaultCheckinDeadline, "")
	// --service: started by the Windows service control manager (the
	// installed command line says so); logs go to files, and the SCM's
	// stop ends the run.
	asService := fs.Bool(strings.TrimPrefix(service.ServiceFlag, "--"), false, "")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *asService {
		return service.RunUnderSCM(ctx, configPath, func(ctx context.Context, logw io.Writer) error {
			return agentMain(ctx, configPath, *hostname, *checkEvery, *checkinDeadline, logw, h, true)
		})
	}
	return agentMain(ctx, configPath, *hostname, *checkEvery, *checkinDeadline, stderr, h, false)
}

// errUpdateRestart ends a run under the service manager that an update
// wants restarted: the service exits with a failure code and the SCM's
// restart action starts the new binary (re-executing, as on Linux, would
// leave a process the SCM does not know).
var errUpdateRestart = errors.New("restarting for an agent update")

// agentMain is the agent itself, logging to stderr; underSCM says the
// Windows service manager runs it.
func agentMain(ctx context.Context, configPath, hostname string, checkEvery, checkinDeadline time.Duration, stderr io.Writer, h host, underSCM bool) error {
	cfg, err := load(configPath)
	if err != nil {
		return err
	}
	if cfg.ServerURL == "" {
		return fmt.Errorf("config %s names no server; run cairn-agent enroll --server URL --code CODE first", configPath)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	build := agentversion.Build()
	// Said before anything that can wait (the config lock, the host's
	// identity), so an agent that never comes up shows how far it got.
	log.Info("cairn-agent starting", "version", version, "build_id", build, "config", configPath, "server", cfg.ServerURL)
	id, err := identity(h, hostname)
	if err != nil {
		return err
	}
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
	// An update stops the agent (runCtx) and re-executes the executable.
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	var restart atomic.Bool
	updater, exe, err := newUpdater(configPath, log, build, checkEvery, checkinDeadline, func() { restart.Store(true); stopRun() })
	if err != nil {
		return err
	}
	handlers := agentruntime.NewHandlers()
	if err := updater.Register(handlers); err != nil {
		return err
	}
	if err := agentoperations.Register(handlers, agentoperations.Options{Inventory: h.ops, Logger: log}); err != nil {
		return err
	}
	if err := agentfiles.Register(handlers, agentfiles.Options{Logger: log}); err != nil {
		return err
	}
	if err := patchops.Register(handlers, patchops.Options{Installer: patches.DetectInstaller(), Logger: log,
		Rebooter: patches.SystemRebooter{}, SignedIn: inventory.SignedInUsers, RebootRequired: patches.RebootRequired}); err != nil {
		return err
	}
	regStore := registry.System()
	if err := registry.Register(handlers, regStore, log); err != nil {
		return err
	}
	// Patch policy enforcement (behaviour 11) edits Windows Update policy
	// through the same registry: Windows only.
	if err := patchenforce.Register(handlers, regStore, log); err != nil {
		return err
	}
	store := agentruntime.FileStore{Path: configPath, Writer: "run"}
	// Scripts may call this agent's command line (CAIRN_AGENT_BIN,
	// CAIRN_AGENT_CONFIG): the bundled metadata scripts do.
	absConfig, err := filepath.Abs(configPath)
	if err != nil {
		return fmt.Errorf("config path: %w", err)
	}
	// User-context jobs (SPEC agent behaviour 12) launch into the active
	// user's session on Windows; elsewhere they are refused.
	scriptOpts := agentautomation.Options{Config: store.Load, Logger: log, AgentBinary: exe, ConfigPath: absConfig,
		UserSession: agentautomation.NewUserSession()}
	if err := agentautomation.Register(handlers, scriptOpts); err != nil {
		return err
	}
	queued, err := agentautomation.Queued(scriptOpts)
	if err != nil {
		return err
	}
	// The managed WireGuard tunnel (behaviour 9): persistent, so it is
	// brought back at start once the Engine asked for it.
	var tunnelRole *roles.Role
	if h.tracker != nil {
		tunnelRole = h.tracker.Register(roles.VPNTunnel)
	}
	tunnel := tunnels.New(runCtx, tunnels.Options{Dir: filepath.Join(filepath.Dir(absConfig), "wireguard"), Role: tunnelRole,
		AgentID: func() string {
			if c, err := store.Load(); err == nil {
				return c.Agent.AgentID
			}
			return ""
		}, Logger: log})
	if err := tunnel.Register(handlers); err != nil {
		return err
	}
	defer tunnel.Close()
	// The VNC role (behaviour 13), started by vnc_start: x11vnc on the
	// host's tunnel interface (Linux), or the agent's own RFB server
	// listening through the in-process tunnel (Windows).
	var vncRole *roles.Role
	if h.tracker != nil {
		vncRole = h.tracker.Register(roles.VNC)
	}
	desktop, err := vnc.New(vnc.Options{Role: vncRole, RuntimeDir: filepath.Join(filepath.Dir(absConfig), "vnc"), Logger: log,
		VirtualIP: func() string {
			// x11vnc cannot listen inside the in-process tunnel; the
			// in-agent server (Windows) listens nowhere else, and says so
			// through Listen when the tunnel runs in wg-quick mode.
			if st := tunnel.State(); st != nil && (st.Mode != tunnels.ModeNetstack || goruntime.GOOS == "windows") {
				return st.VirtualIP
			}
			return ""
		},
		Listen: tunnel.ListenTCP})
	if err != nil {
		return err
	}
	if err := desktop.Register(handlers); err != nil {
		return err
	}
	defer desktop.Close()
	// The RDP role (behaviour 14): the host's own RDP server on the
	// tunnel address; the Engine runs the client (internal/rdp).
	var rdpRole *roles.Role
	if h.tracker != nil {
		rdpRole = h.tracker.Register(roles.RDP)
	}
	rdpOpts := agentrdp.Options{Role: rdpRole, Logger: log,
		VirtualIP: func() string {
			if st := tunnel.State(); st != nil && (st.Mode != tunnels.ModeNetstack || goruntime.GOOS == "windows") {
				return st.VirtualIP
			}
			return ""
		}}
	if goruntime.GOOS == "windows" {
		// The in-process tunnel has no host interface: it relays its
		// :3389 to TermService on 127.0.0.1 while the role is enabled.
		rdpOpts.Relay = tunnel
	}
	rdpDesktop := agentrdp.New(rdpOpts)
	if err := rdpDesktop.Register(handlers); err != nil {
		return err
	}
	go rdpDesktop.Run(runCtx)
	shells, err := shells.Register(ctx, handlers, shells.Options{Logger: log})
	if err != nil {
		return err
	}
	// Shells outlive realtime sockets but not the agent: every one is
	// killed and reaped before the process exits, however Run ended.
	defer shells.Close()
	// What connect_agent reports: every handler registered here, but the
	// registry editor only where there is a registry (Windows); the
	// Engine refuses the rest before asking (agent_too_old).
	var socketRole interface{ Report(error) }
	if h.tracker != nil {
		publishRoles(h.tracker, regStore != nil)
		socketRole = h.tracker.Register(roles.APIWebSocket)
		if err := registerRoleControl(handlers, h.tracker, store, cfg.RolesStopped, endRoleWork(shells)); err != nil {
			return err
		}
	}
	// The socket itself answers a redeploy (agent behaviour 16).
	caps := proto.HandlerCapabilities(append(handlers.Types(), proto.EventAgentRedeploy))
	if regStore == nil {
		caps = slices.DeleteFunc(caps, func(c proto.Capability) bool { return c == proto.CapRegistry })
	}
	// The VNC role serves X11 desktops (Linux) and the Windows desktop
	// (agent/vnc/rfbserver): elsewhere its handlers answer unsupported
	// and the capability is not offered. Playbooks likewise run on Linux
	// agents only (ansible-playbook has no Windows build), and RDP needs
	// an RDP server (xrdp on Linux, TermService on Windows).
	platform := proto.AgentCapabilities(goruntime.GOOS)
	caps = slices.DeleteFunc(caps, func(c proto.Capability) bool {
		return (c == proto.CapVNC || c == proto.CapAnsible || c == proto.CapRDP) && !slices.Contains(platform, c)
	})
	a, err := agentruntime.New(agentruntime.Options{
		Store:        store,
		Capabilities: caps,
		// currentuser where user-context jobs can run (Windows).
		HelperContexts: agentautomation.HelperContexts(),
		// Work queued while the agent was offline runs once it is back.
		OnConnected: queued,
		Identity:    id,
		Version:     version,
		BuildID:     build,
		Collector:   h.collector,
		Roles:       h.roles,
		SocketRole:  socketRole,
		Hash:        h.hash,
		Handlers:    handlers,
		Timing:      h.timing,
		Logger:      log,
		Hooks: agentruntime.Hooks{Session: func(call agentruntime.Caller) {
			updater.Session(call)
			tunnel.Session(call)
			desktop.Session(call)
			rdpDesktop.Session(call)
			if h.iconOverrides != nil {
				h.iconOverrides.Session(call)
			}
		},
			Heartbeat: updater.Heartbeat},
	})
	if err != nil {
		return err
	}
	log.Info("cairn-agent ready", "hostname", id.Hostname)
	updaterDone := make(chan struct{})
	go func() { defer close(updaterDone); updater.Run(runCtx) }()
	limitMemory()
	go trimLoop(runCtx, log)
	if fault == "no-checkin" {
		// A build that starts but never reaches the Engine (the rollback
		// test's broken build): only the updater runs.
		<-runCtx.Done()
	} else if err := a.Run(runCtx); err != nil {
		return err
	}
	<-updaterDone
	if restart.Load() && ctx.Err() == nil {
		shells.Close()
		if underSCM {
			log.Info("cairn-agent exiting for an update; the service manager restarts it", "exe", exe)
			return errUpdateRestart
		}
		log.Info("cairn-agent restarting for an update", "exe", exe)
		if err := agentupdates.Exec(exe); err != nil {
			return fmt.Errorf("restart into %s: %w", exe, err)
		}
		return nil
	}
	log.Info("cairn-agent stopped")
	return nil
}

// fault breaks a build on purpose for the update tests
// (-X main.fault=no-checkin: the agent never checks in). Empty in every
// real build.
var fault string

// newUpdater builds the agent's updater for the executable running now.
func newUpdater(configPath string, log *slog.Logger, build string, checkEvery, checkinDeadline time.Duration, restart func()) (*agentupdates.Updater, string, error) {
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return nil, "", fmt.Errorf("locate the agent executable: %w", err)
	}
	u := agentupdates.New(agentupdates.Options{
		Exe: exe, BuildID: build, Platform: agentversion.Platform(),
		BuildSeq: agentversion.Seq(),
		ArtifactKeys: func() ([]string, error) {
			c, err := agent.Load(configPath)
			if err != nil {
				return nil, err
			}
			return c.ScriptSigning.ArtifactPublicKeys, nil
		},
		Restart: restart, CheckInterval: checkEvery, CheckinDeadline: checkinDeadline,
		Log: log.With("component", "update"),
	})
	return u, exe, nil
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
