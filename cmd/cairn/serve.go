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
	"strings"
	"sync/atomic"
	"time"

	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/api"
	"github.com/cairn-rmm/cairn/internal/aegis"
	"github.com/cairn-rmm/cairn/internal/auth"
	"github.com/cairn-rmm/cairn/internal/credentials"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
	"github.com/cairn-rmm/cairn/internal/directory"
	"github.com/cairn-rmm/cairn/internal/enrollment"
	"github.com/cairn-rmm/cairn/internal/events"
	"github.com/cairn-rmm/cairn/internal/passkeys"
	"github.com/cairn-rmm/cairn/internal/ratelimit"
	"github.com/cairn-rmm/cairn/internal/sites"
	"github.com/cairn-rmm/cairn/internal/sourcehost"
	"github.com/cairn-rmm/cairn/internal/tlsca"
	"github.com/cairn-rmm/cairn/web"
	"github.com/cairn-rmm/cairn/workers"
	"github.com/cairn-rmm/cairn/workers/agentsocket"
	"github.com/cairn-rmm/cairn/workflows"
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
	log := newLogger(c.LogLevel)
	rt := &runtime{log: log}
	defer rt.close()
	if err := rt.openDatabase(ctx, c); err != nil {
		return err
	}
	if err := rt.openTemporal(ctx, c, true); err != nil {
		return err
	}

	cipher := aegis.New(aegis.PGStore{Q: rt.store.Queries}, aegis.DefaultKDF)
	if c.PassphraseFile != "" {
		pass, err := os.ReadFile(c.PassphraseFile)
		if err != nil {
			return fmt.Errorf("read passphrase file: %w", err)
		}
		if err := cipher.Unlock(ctx, strings.TrimRight(string(pass), "\r\n")); err != nil {
			return fmt.Errorf("unlock the master cipher from %s: %w", c.PassphraseFile, err)
		}
	}
	dirSvc := directory.NewService(rt.store, cipher, log)
	authSvc, err := auth.NewService(ctx, rt.store, cipher, auth.Config{Directory: dirSvc})
	if err != nil {
		return err
	}
	bus := events.NewBus(rt.store, log)
	siteSvc := sites.NewService(rt.store, func(ctx context.Context) error { return bus.Signal(ctx, events.ControlSites) })
	presence := events.NewPresence(rt.store, bus, log)
	passkeySvc, err := passkeys.NewService(rt.store, authSvc, c.PublicURL, nil)
	if err != nil {
		return err
	}

	var started atomic.Bool
	bg, cancelBG := context.WithCancel(context.Background())
	defer cancelBG()
	go bus.Run(bg)
	go presence.Run(bg)
	go cipher.Watch(bg, bus.OnControl(events.ControlAegis), log)

	approvals := workflows.EnrollmentStarter{Client: rt.temporal}
	enrollSvc, err := enrollment.New(ctx, rt.store, cipher, enrollment.Config{ApprovalTTL: c.ApprovalTTL, Starter: approvals,
		RequestsPerAddress: ratelimit.Rule{Limit: c.EnrollRateLimit, Window: enrollment.RequestsPerAddress.Window}})
	if err != nil {
		return err
	}
	deviceTokens, err := devicetrust.NewTokens(ctx, rt.store, c.PublicURL, nil)
	if err != nil {
		return err
	}
	dpop := devicetrust.NewVerifier(rt.store, devicetrust.Options{})

	var mgr *workers.Manager
	if c.SiteWorkers == "all" {
		mgr = workers.NewManager(rt.temporal, log, nil)
		mgr.Register(&activities.Enrollment{Service: enrollSvc})
		mgr.Register(&activities.Maintenance{Sessions: authSvc, RateLimits: rt.store, DPoP: dpop, RefreshTokens: deviceTokens, Presence: presence})
		rt.onStop(mgr.Stop)
	}
	// Clean-up runs as Temporal Schedules, once per deployment.
	if err := workers.EnsureSchedules(ctx, rt.temporal, workflows.EngineTaskQueue); err != nil {
		return fmt.Errorf("maintenance schedules: %w", err)
	}
	var runner agentsocket.SiteRunner = noSiteWorkers{}
	if mgr != nil {
		runner = mgr
	}
	hub := agentsocket.New(presence.ReplicaID, rt.store, bus, runner, agentsocket.Options{Log: log})
	hubCtx, stopHub := context.WithCancel(context.Background())
	hubDone := make(chan struct{})
	go func() { defer close(hubDone); hub.Run(hubCtx) }()
	// Stop the hub (clearing this replica's socket records) before the
	// database closes; onStop runs in reverse order.
	rt.onStop(func() { stopHub(); <-hubDone })
	deviceSvc := devices.NewService(rt.store, bus, devices.Config{OnlineWindow: c.DeviceOnlineWindow, Log: log.With("component", "devices")})
	go deviceSvc.Run(bg)
	if mgr != nil {
		// The engine worker starts once everything its activities use exists.
		mgr.Register(&activities.DeviceTrust{Sockets: hub, Activity: deviceSvc, Events: bus})
		if err := mgr.StartEngine(); err != nil {
			return fmt.Errorf("start engine worker: %w", err)
		}
		mgr.OnSiteStop(hub.DropSite)
		go mgr.Run(bg, siteSvc.Slugs, bus.OnControl(events.ControlSites))
	}

	srv := api.New(api.Deps{
		Store: rt.store, Auth: authSvc, Cipher: cipher, Sites: siteSvc, Directory: dirSvc, Passkeys: passkeySvc, Bus: bus, Presence: presence,
		Temporal: rt.temporal, Workers: mgr, Namespace: c.TemporalNamespace, Console: web.Console(),
		PublicURL: c.PublicURL, Log: log, Started: started.Load, TLS: certs,
		Credentials: credentials.NewService(rt.store, cipher),
		SourceHost:  sourcehost.NewService(rt.store, cipher, sourcehost.Config{APIURL: c.GitHubAPIURL, EnvToken: c.GitHubToken}),
		Sockets:     hub, Enrollment: enrollSvc, Approvals: approvals, DeviceTokens: deviceTokens, DPoP: dpop, AgentURLs: c.agentURLs(),
		Devices: deviceSvc,
	})
	ln, err := net.Listen("tcp", c.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (set CAIRN_HTTP_ADDR)", c.HTTPAddr, err)
	}
	// Request contexts hang off reqCtx, so cancelling it ends event
	// streams, which http.Server.Shutdown alone would wait for.
	reqCtx, cancelReqs := context.WithCancel(context.Background())
	httpSrv := &http.Server{
		Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute,
		WriteTimeout: 2 * time.Minute, IdleTimeout: 2 * time.Minute,
		BaseContext: func(net.Listener) context.Context { return reqCtx },
	}
	served := make(chan error, 2)
	go func() { served <- httpSrv.Serve(ln) }()
	banner := []string{"Console      " + c.PublicURL}
	var httpsSrv *http.Server
	if certs != nil {
		tln, err := net.Listen("tcp", c.HTTPSAddr)
		if err != nil {
			cancelReqs()
			_ = httpSrv.Close()
			return fmt.Errorf("listen on %s: %w (set CAIRN_HTTPS_ADDR, or off)", c.HTTPSAddr, err)
		}
		httpsSrv = &http.Server{
			Handler: httpSrv.Handler, ReadHeaderTimeout: httpSrv.ReadHeaderTimeout, ReadTimeout: httpSrv.ReadTimeout,
			WriteTimeout: httpSrv.WriteTimeout, IdleTimeout: httpSrv.IdleTimeout, BaseContext: httpSrv.BaseContext,
			TLSConfig: certs.TLSConfig(),
		}
		go func() { served <- httpsSrv.ServeTLS(tln, "", "") }()
		go refreshCertificate(bg, certs, log)
		banner = append(banner, "HTTPS        "+c.httpsURL()+" ("+certificateLine(certs.Info())+")")
	}
	started.Store(true)
	rt.printBanner(banner...)

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
	// No heartbeat arrives any more: write the ones still queued.
	if err := deviceSvc.Flush(shutdownCtx); err != nil {
		log.Error("flush heartbeats at shutdown", "err", err)
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

// noSiteWorkers answers for a serve process that runs no site workers:
// agent sockets belong elsewhere.
type noSiteWorkers struct{}

func (noSiteWorkers) Runs(string) bool { return false }
