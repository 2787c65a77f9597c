package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cairn-rmm/cairn/engine"
	"github.com/cairn-rmm/cairn/internal/events"
	"github.com/cairn-rmm/cairn/internal/tlsca"
	"github.com/cairn-rmm/cairn/web"
)

// serve runs the Engine: database, Temporal, workers, agent sockets, API
// and console, until ctx ends.
func serve(ctx context.Context, args []string) error {
	c, err := loadConfig(flag.NewFlagSet("serve", flag.ExitOnError), args)
	if err != nil {
		return err
	}
	if err := c.checkPlainHTTP(); err != nil {
		return err
	}
	// The certificate is checked before anything starts: a bad pair is a
	// configuration error.
	var certs *tlsca.Manager
	if c.HTTPSAddr != "" {
		certs, err = tlsca.Load(tlsca.Options{Dir: filepath.Join(c.DataDir, "tls"), Hostnames: c.tlsHostnames(),
			CertFile: c.TLSCertFile, KeyFile: c.TLSKeyFile})
		if err != nil {
			return err
		}
	}
	log, closeLog, err := newProcessLogger(c, "engine")
	if err != nil {
		return err
	}
	defer closeLog()
	rt := &runtime{log: log}
	defer rt.close()
	if err := rt.temporalConnection(c); err != nil {
		return err
	}
	if err := rt.openDatabase(ctx, c); err != nil {
		return err
	}
	if err := rt.openTemporal(ctx, c, true); err != nil {
		return err
	}

	artifactKey, err := engineArtifactKey(c.DataDir, true)
	if err != nil {
		return fmt.Errorf("artifact key: %w", err)
	}
	var started atomic.Bool
	var certNames []string
	if certs != nil {
		info := certs.Info()
		certNames = append(slices.Clone(info.DNSNames), info.IPAddresses...)
	}
	cfg := engine.Config{Role: engine.RoleServe, PublicURL: c.PublicURL, AgentURLs: c.servedAgentURLs(certNames),
		Namespace: c.TemporalNamespace, ApprovalTTL: c.ApprovalTTL, EnrollRateLimit: c.EnrollRateLimit, ProofRateLimit: c.ProofRateLimit, ScheduledCapacity: c.ScheduledCapacity,
		OnlineWindow: c.DeviceOnlineWindow, GitHubAPIURL: c.GitHubAPIURL, GitHubToken: c.GitHubToken,
		AgentArtifacts: c.AgentArtifacts, ArtifactKey: artifactKey, Console: web.Console(), TLS: certs, Log: log, Started: started.Load,
		TrustedProxies: c.TrustedProxies,
		SessionIdle:    c.SessionIdle, SessionMax: c.SessionMax,
		TransferMaxBytes: c.TransferMaxBytes, TransferRetention: c.TransferRetention, TransferQuotas: c.TransferQuotas,
		TemporalUIOrigins:  append(c.TemporalUIOrigins, rt.uiOrigins...),
		ShellTranscriptMax: c.ShellTranscriptMax, ShellNoInputRecording: c.ShellNoInputRecording,
		Tunnels: c.Tunnels, GatewayURL: c.GatewayURL, VNC: &c.VNC, LogDir: c.logDir(),
		// A restart asked from the Server page is a graceful stop, as
		// SIGTERM from systemd is; the supervisor starts the Engine again.
		Restart: func() { _ = syscall.Kill(os.Getpid(), syscall.SIGTERM) }}
	if c.SiteWorkers == "none" {
		cfg.Sites = engine.NoSites
	}
	eng, err := engine.New(ctx, rt.store, rt.temporal, cfg)
	if err != nil {
		return err
	}
	if err := unlockFromFile(ctx, eng, c.PassphraseFile); err != nil {
		return err
	}
	// First-run setup needs the code this prints (issue 13 item 4).
	// Subscribed first: a reset or finish on another replica from here on
	// is seen.
	setupChanges := []<-chan struct{}{eng.Bus.OnControl(events.ControlAegis), eng.Bus.OnControl(events.ControlSetup)}
	setup := newSetupCode(eng.Auth, c.DataDir, log)
	code, err := setup.reconcile(ctx)
	if err != nil {
		return fmt.Errorf("first-run setup code: %w", err)
	}
	if err := eng.Start(); err != nil {
		return err
	}
	// Stop the Engine (sockets, workers, queued heartbeats) before the
	// database and Temporal close; onStop runs in reverse order.
	rt.onStop(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		eng.Stop(ctx)
	})
	bg, cancelBG := context.WithCancel(context.Background())
	defer cancelBG()

	ln, err := net.Listen("tcp", c.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (set CAIRN_HTTP_ADDR)", c.HTTPAddr, err)
	}
	// Request contexts hang off reqCtx, so cancelling it ends event
	// streams, which http.Server.Shutdown alone would wait for.
	reqCtx, cancelReqs := context.WithCancel(context.Background())
	httpSrv := &http.Server{
		Handler: withoutMetrics(eng.Handler()), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute,
		WriteTimeout: 2 * time.Minute, IdleTimeout: 2 * time.Minute,
		BaseContext: func(net.Listener) context.Context { return reqCtx },
	}
	// One slot per server, so each Serve's return after Shutdown is sent
	// without a reader and no goroutine is left blocked.
	served := make(chan error, 3)
	go func() { served <- httpSrv.Serve(ln) }()
	banner := []string{"Console      " + c.PublicURL}
	metricsSrv, err := startMetrics(c, eng.MetricsHandler(), log, served)
	if err != nil {
		cancelReqs()
		_ = httpSrv.Close()
		return err
	}
	if metricsSrv != nil {
		banner = append(banner, "Metrics      "+c.metricsURL())
	}
	var httpsSrv *http.Server
	if certs != nil {
		tln, err := net.Listen("tcp", c.HTTPSAddr)
		if err != nil {
			cancelReqs()
			_ = httpSrv.Close()
			if metricsSrv != nil {
				_ = metricsSrv.Close()
			}
			return fmt.Errorf("listen on %s: %w (set CAIRN_HTTPS_ADDR, or off)", c.HTTPSAddr, err)
		}
		httpsSrv = &http.Server{
			Handler: withoutMetrics(eng.Handler()), ReadHeaderTimeout: httpSrv.ReadHeaderTimeout, ReadTimeout: httpSrv.ReadTimeout,
			WriteTimeout: httpSrv.WriteTimeout, IdleTimeout: httpSrv.IdleTimeout, BaseContext: httpSrv.BaseContext,
			TLSConfig: certs.TLSConfig(),
		}
		go func() { served <- httpsSrv.ServeTLS(tln, "", "") }()
		go refreshCertificate(bg, certs, log)
		banner = append(banner, "HTTPS        "+c.httpsURL()+" ("+certificateLine(certs.Info())+")")
	}
	if code != "" {
		banner = append(banner, setupCodeLine(code, setup.path))
	}
	started.Store(true)
	rt.printBanner(banner...)
	go setup.watch(bg, setupChanges...)

	select {
	case <-ctx.Done():
	case err := <-served:
		cancelReqs()
		return err
	}
	log.Info("shutting down")
	cancelReqs()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_ = httpSrv.Shutdown(shutdownCtx)
	if httpsSrv != nil {
		_ = httpsSrv.Shutdown(shutdownCtx)
	}
	if metricsSrv != nil {
		_ = metricsSrv.Shutdown(shutdownCtx)
	}
	cancelBG()
	return nil
}

// certificateLine is what the banner says about the HTTPS certificate: the
// fingerprint an installer compares with the CA it downloaded.
func certificateLine(info tlsca.Info) string {
	if info.Mode == tlsca.ModeLocalCA {
		return "local CA, SHA-256 fingerprint " + info.CAFingerprint
	}
	return "provided certificate, SHA-256 fingerprint " + info.Fingerprint
}

// refreshCertificate renews the local CA's certificate (or reloads a
// provided one) twice a day, so a long-running Engine never serves an
// expired certificate; new connections get the new one.
func refreshCertificate(ctx context.Context, certs *tlsca.Manager, log *slog.Logger) {
	t := time.NewTicker(12 * time.Hour)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		before := certs.Info().Fingerprint
		if err := certs.Refresh(); err != nil {
			log.Error("refresh the HTTPS certificate", "err", err)
			continue
		}
		if info := certs.Info(); info.Fingerprint != before {
			log.Info("HTTPS certificate replaced", "fingerprint", info.Fingerprint, "not_after", info.NotAfter)
		}
	}
}

// unlockFromFile unlocks the master cipher with the passphrase in file
// ("" leaves it locked).
func unlockFromFile(ctx context.Context, eng *engine.Engine, file string) error {
	if file == "" {
		return nil
	}
	pass, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("read passphrase file: %w", err)
	}
	if err := eng.Cipher.Unlock(ctx, strings.TrimRight(string(pass), "\r\n")); err != nil {
		return fmt.Errorf("unlock the master cipher from %s: %w", file, err)
	}
	return nil
}
