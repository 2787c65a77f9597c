package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn/engine"
	"github.com/cairn-rmm/cairn/internal/logs"
	"github.com/cairn-rmm/cairn/internal/tlsca"
)

// runWorker runs the workers of some sites and takes their agents'
// sockets: an agent-only HTTP listener (health, realtime socket) at
// --listen, advertised to agents as --advertise-url through the realtime
// route. It joins a running deployment: the same PostgreSQL, Temporal and
// public URL as the serve replicas.
func runWorker(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("worker", flag.ExitOnError)
	var slugs stringList
	fs.Var(&slugs, "site", "site slug to serve (repeatable)")
	listen := fs.String("listen", env("CAIRN_WORKER_ADDR", "127.0.0.1:8090"), "address the worker takes agent sockets on")
	advertise := fs.String("advertise-url", env("CAIRN_WORKER_URL", ""),
		"http(s) URL agents reach --listen at (default http://<listen>, https:// when the worker serves TLS)")
	useTLS := fs.Bool("tls", env("CAIRN_WORKER_TLS", "") == "1",
		"serve HTTPS with the provided certificate (CAIRN_TLS_CERT_FILE) or one from the local CA in the data directory")
	memberFile := fs.String("member-file", env("CAIRN_CLUSTER_MEMBER_FILE", ""),
		"the member file `cairn cluster join` wrote (default <data-dir>/"+memberFileName+", when it exists)")
	engineCA := fs.String("engine-ca-file", env("CAIRN_ENGINE_CA_FILE", ""), "PEM certificate(s) to trust for the Engine's HTTPS (member file calls)")
	c, err := loadConfig(fs, args)
	if err != nil {
		return err
	}
	publicSet := os.Getenv("CAIRN_PUBLIC_URL") != ""
	fs.Visit(func(f *flag.Flag) { publicSet = publicSet || f.Name == "public-url" })
	admission, askedURL, err := joinedConfig(ctx, *memberFile, *engineCA, c.DataDir, !publicSet)
	if err != nil {
		return err
	}
	if askedURL != "" {
		c.PublicURL = askedURL
	}
	if len(slugs) == 0 {
		return errors.New("name at least one --site SLUG")
	}
	if c.DatabaseURL == "" || c.TemporalAddress == "" {
		return errors.New("cairn worker joins a running deployment: set DATABASE_URL and TEMPORAL_ADDRESS")
	}
	if c.PassphraseFile == "" {
		return errors.New("cairn worker reads workflow payloads sealed under the master cipher: set CAIRN_AEGIS_PASSPHRASE_FILE to a file holding its passphrase")
	}
	if !*useTLS && !c.AllowPlainHTTP && !isLoopback(*listen) {
		return fmt.Errorf("plain HTTP is served on loopback only, but --listen is %s: use --tls, or set CAIRN_ALLOW_PLAIN_HTTP=1 behind a TLS-terminating proxy", *listen)
	}
	if *advertise == "" {
		scheme := "http"
		if *useTLS {
			scheme = "https"
		}
		*advertise = scheme + "://" + *listen
	}
	if u, err := url.Parse(*advertise); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("advertise-url must be an http(s) URL, got %q", *advertise)
	}
	var certs *tlsca.Manager
	if *useTLS {
		u, _ := url.Parse(*advertise)
		certs, err = tlsca.Load(tlsca.Options{Dir: filepath.Join(c.DataDir, "tls"), Hostnames: append(c.tlsHostnames(), u.Hostname()),
			CertFile: c.TLSCertFile, KeyFile: c.TLSKeyFile})
		if err != nil {
			return err
		}
	}

	log, closeLog, err := newProcessLogger(c, workerLogSource(slugs))
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
	if err := rt.openTemporal(ctx, c, false); err != nil {
		return err
	}
	want := map[string]bool{}
	for _, s := range slugs {
		want[s] = true
	}
	artifactKey, err := engineArtifactKey(c.DataDir, false)
	if err != nil {
		return fmt.Errorf("artifact key: %w", err)
	}
	eng, err := engine.New(ctx, rt.store, rt.temporal, engine.Config{Role: engine.RoleSiteWorker, ArtifactKey: artifactKey,
		Sites: func(slug string) bool { return want[slug] }, PublicURL: c.PublicURL,
		AgentURLs: append(c.agentURLs(), *advertise), AgentEndpoint: *advertise, Namespace: c.TemporalNamespace,
		OnlineWindow: c.DeviceOnlineWindow, AgentArtifacts: c.AgentArtifacts, Log: log, ClusterAdmission: admission,
		Tunnels: c.Tunnels, GatewayURL: c.GatewayURL})
	if err != nil {
		return err
	}
	// A site worker reads and writes workflow payloads, which are sealed
	// by keys under the master cipher: it must hold the cipher.
	if err := unlockFromFile(ctx, eng, c.PassphraseFile); err != nil {
		return err
	}
	if err := eng.Start(); err != nil {
		return err
	}
	rt.onStop(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		eng.Stop(ctx)
	})

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (set CAIRN_WORKER_ADDR)", *listen, err)
	}
	reqCtx, cancelReqs := context.WithCancel(context.Background())
	defer cancelReqs()
	// The worker's listener is the agents': /metrics (its sockets and
	// heartbeats) is served on CAIRN_METRICS_ADDR only.
	srv := &http.Server{Handler: withoutMetrics(eng.Handler()), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		BaseContext: func(net.Listener) context.Context { return reqCtx }}
	served := make(chan error, 2)
	metricsSrv, err := startMetrics(c, eng.MetricsHandler(), log, served)
	if err != nil {
		_ = ln.Close()
		return err
	}
	if certs != nil {
		srv.TLSConfig = certs.TLSConfig()
		go func() { served <- srv.ServeTLS(ln, "", "") }()
	} else {
		go func() { served <- srv.Serve(ln) }()
	}
	log.Info("site worker running", "sites", []string(slugs), "agents", *advertise, "public_url", c.PublicURL,
		"public_url_from_engine", askedURL != "", "cluster_admission", admission)
	select {
	case <-ctx.Done():
	case err := <-served:
		return err
	}
	cancelReqs()
	shutdown, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdown)
	if metricsSrv != nil {
		_ = metricsSrv.Shutdown(shutdown)
	}
	return nil
}

// workerLogSource names a worker's log file: worker-<its sites>, so
// workers of different sites sharing a log directory (one host) keep
// their own files; a name too long for a source is a hash of the sites.
func workerLogSource(slugs []string) string {
	sorted := slices.Sorted(slices.Values(slugs))
	name := "worker-" + strings.Join(sorted, "-")
	if logs.ValidSource(name) {
		return name
	}
	sum := sha256.Sum256([]byte(strings.Join(sorted, ",")))
	return "worker-" + hex.EncodeToString(sum[:6])
}

// joinedConfig reads the member file of a worker that joined the cluster
// (`cairn cluster join`), when there is one: its admission, and, when
// askURL (no public URL configured here), the Engine's public URL asked
// over the Internal class (GET /api/internal/job-scheduler/public-base-url)
// rather than guessed from this host's address.
func joinedConfig(ctx context.Context, memberFile, caFile, dataDir string, askURL bool) (admission, publicURL string, err error) {
	if memberFile == "" {
		memberFile = filepath.Join(dataDir, memberFileName)
		if _, err := os.Stat(memberFile); errors.Is(err, os.ErrNotExist) {
			return "", "", nil
		}
	}
	h, _, err := readMemberFile(memberFile)
	if err != nil {
		return "", "", err
	}
	if !askURL {
		return h.AdmissionID, "", nil
	}
	caller, err := internalCallerFrom(memberFile, caFile)
	if err != nil {
		return "", "", err
	}
	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	u, err := caller.publicBaseURL(actx)
	if err != nil {
		return "", "", fmt.Errorf("ask the Engine at %s for its public URL: %w", caller.base, err)
	}
	return h.AdmissionID, strings.TrimRight(u, "/"), nil
}
