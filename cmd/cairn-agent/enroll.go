package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"

	"github.com/cairn-rmm/cairn/agent"
	"github.com/cairn-rmm/cairn/agent/proto"
	agentruntime "github.com/cairn-rmm/cairn/agent/runtime"
	"github.com/cairn-rmm/cairn/agent/service"
	"github.com/cairn-rmm/cairn/agent/transport"
)

// enroll: cairn-agent enroll --server URL --code CODE [--ca-file PEM
// [--trust-public-cas]] [--server-ip-fallback IP] [--hostname NAME] [--config PATH]
func enroll(ctx context.Context, configPath string, args []string, stdout, stderr io.Writer, h host) error {
	fs := newFlagSet("enroll")
	fs.StringVar(&configPath, "config", configPath, "")
	server := fs.String("server", "", "")
	code := fs.String("code", "", "")
	caFile := fs.String("ca-file", "", "")
	// A pinned CA is the only one trusted unless this is given.
	trustPublic := fs.Bool("trust-public-cas", false, "")
	fallback := fs.String("server-ip-fallback", "", "")
	hostname := fs.String("hostname", "", "")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *server == "" || *code == "" {
		return usagef("enroll needs --server URL and --code CODE")
	}
	if err := checkServerURL(*server); err != nil {
		return err
	}
	if p := agent.IPFallbackProblem(*fallback); p != "" {
		return usagef("--server-ip-fallback %q: %s", *fallback, p)
	}
	if *trustPublic && *caFile == "" {
		return usagef("--trust-public-cas goes with --ca-file (without a pinned CA the public CAs are trusted anyway)")
	}
	var caPEM string
	if *caFile != "" {
		pem, err := transport.LoadCAFile(*caFile)
		if err != nil {
			return fmt.Errorf("--ca-file %s: %w", *caFile, err)
		}
		caPEM = pem
	}
	id, err := identity(h, *hostname)
	if err != nil {
		return err
	}

	if err := ensureConfig(configPath); err != nil {
		return configErr(configPath, err)
	}
	cleared := false
	cfg, err := agent.Update(configPath, "enroll", func(c *agent.Config) error {
		cleared = c.ApplyEnrollment(*code, *server)
		if caPEM != "" {
			c.InternalCAPEM, c.TrustPublicCAs = caPEM, *trustPublic
		}
		if *fallback != "" {
			c.ServerIPFallback = *fallback
		}
		_, err := c.EnsureKey()
		return err
	})
	if err != nil {
		return configErr(configPath, err)
	}
	if cleared && cfg.Agent.GUID != "" {
		fmt.Fprintln(stdout, "new enrollment code: the cached tokens and route were cleared")
	}
	if cfg.Agent.GUID != "" && cfg.HasTokens() {
		fmt.Fprintf(stdout, "already enrolled as device GUID %s with this code; nothing to do\n", cfg.Agent.GUID)
		return nil
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	client, err := transport.FromAgentConfig(cfg, version, log)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "requesting enrollment at %s as %q\n", cfg.ServerURL, id.Hostname)
	res, err := agentruntime.Enroll(ctx, agentruntime.FileStore{Path: configPath, Writer: "enroll"}, client, agentruntime.EnrollOptions{
		Identity: id, Version: version, Timing: h.timing, Logger: log,
		Requested: func(approvalID, status string) {
			if status == proto.ApprovalApproved {
				fmt.Fprintf(stdout, "approval ID %s: approved automatically\n", approvalID)
				return
			}
			fmt.Fprintf(stdout, "approval ID %s: waiting for approval (an administrator approves it in the console's device approvals)\n", approvalID)
		},
	})
	switch {
	case errors.Is(err, agentruntime.ErrDenied):
		return fmt.Errorf("enrollment denied: an administrator refused approval %s", res.ApprovalID)
	case errors.Is(err, agentruntime.ErrExpired):
		return fmt.Errorf("approval %s expired before an administrator approved it; run enroll again", res.ApprovalID)
	case ctx.Err() != nil:
		return errors.New("enrollment interrupted; run the same command again to continue waiting")
	case err != nil:
		return fmt.Errorf("enrollment failed: %w", err)
	}
	fmt.Fprintf(stdout, "enrolled: device GUID %s (agent ID %s)\n", res.Device.GUID, res.Device.AgentID)
	return nil
}

func checkServerURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.User != nil {
		return usagef("--server %q must be the Engine's http(s) base URL", s)
	}
	return nil
}

// ensureConfig creates an empty config (and its directory, private: it
// will hold the device key) when there is none.
func ensureConfig(path string) error {
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	// Windows ignores the mode: %ProgramData% lets every user read what
	// is created in it, so the directory gets its own ACL before the key
	// is written.
	if err := service.SecureConfigDir(filepath.Dir(path)); err != nil {
		return err
	}
	err := agent.Create(path, "enroll", agent.Default())
	if err != nil {
		if _, serr := os.Stat(path); serr == nil {
			return nil // another enroll created it meanwhile
		}
	}
	return err
}

// identity is what this machine reports; name overrides the hostname (two
// agents on one machine need distinct names).
func identity(h host, name string) (agentruntime.Identity, error) {
	if name == "" {
		n, err := h.hostname()
		if err != nil {
			return agentruntime.Identity{}, fmt.Errorf("hostname: %w (use --hostname)", err)
		}
		name = n
	}
	fp, err := h.fingerprint()
	if err != nil {
		return agentruntime.Identity{}, fmt.Errorf("fingerprint: %w", err)
	}
	return agentruntime.Identity{Hostname: name, OS: h.osName(), Fingerprint: fp, BootID: h.bootID()}, nil
}
