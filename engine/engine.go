// Package engine builds the Engine from one constructor that `cairn
// serve`, `cairn worker`, the API tests and the benchmark share: the
// shared domain services, the agent gateway, then each capability of
// Capabilities (capability.go), whose declarations give the Temporal
// workers their workflows and activities, the API its routes and error
// statuses, and the maintenance Schedules their jobs. A capability is its
// own engine/capability_<name>.go plus one line in Capabilities.
package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/netip"
	"slices"
	"sync"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/api"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/aegis"
	"github.com/cairn-rmm/cairn/internal/agentartifacts"
	"github.com/cairn-rmm/cairn/internal/agentgateway"
	"github.com/cairn-rmm/cairn/internal/agentupdates"
	"github.com/cairn-rmm/cairn/internal/auth"
	"github.com/cairn-rmm/cairn/internal/automation"
	"github.com/cairn-rmm/cairn/internal/backup"
	"github.com/cairn-rmm/cairn/internal/cluster"
	"github.com/cairn-rmm/cairn/internal/credentials"
	"github.com/cairn-rmm/cairn/internal/devicefilters"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
	"github.com/cairn-rmm/cairn/internal/directory"
	"github.com/cairn-rmm/cairn/internal/enrollment"
	"github.com/cairn-rmm/cairn/internal/events"
	"github.com/cairn-rmm/cairn/internal/flows"
	"github.com/cairn-rmm/cairn/internal/gateway"
	"github.com/cairn-rmm/cairn/internal/grants"
	"github.com/cairn-rmm/cairn/internal/installlinks"
	"github.com/cairn-rmm/cairn/internal/internalauth"
	"github.com/cairn-rmm/cairn/internal/logs"
	"github.com/cairn-rmm/cairn/internal/metadata"
	"github.com/cairn-rmm/cairn/internal/metrics"
	"github.com/cairn-rmm/cairn/internal/onboarding"
	"github.com/cairn-rmm/cairn/internal/passkeys"
	"github.com/cairn-rmm/cairn/internal/patches"
	"github.com/cairn-rmm/cairn/internal/payloadkeys"
	"github.com/cairn-rmm/cairn/internal/ratelimit"
	"github.com/cairn-rmm/cairn/internal/rdp"
	"github.com/cairn-rmm/cairn/internal/scheduledjobs"
	"github.com/cairn-rmm/cairn/internal/scriptsign"
	"github.com/cairn-rmm/cairn/internal/shells"
	"github.com/cairn-rmm/cairn/internal/sites"
	"github.com/cairn-rmm/cairn/internal/sourcehost"
	"github.com/cairn-rmm/cairn/internal/tlsca"
	"github.com/cairn-rmm/cairn/internal/transfers"
	"github.com/cairn-rmm/cairn/internal/tunnels"
	"github.com/cairn-rmm/cairn/internal/vnc"
	"github.com/cairn-rmm/cairn/internal/watchdogs"
	"github.com/cairn-rmm/cairn/workers"
	"github.com/cairn-rmm/cairn/workflowclient"
	"github.com/cairn-rmm/cairn/workflows"
)

// Role is what a process does.
type Role int

const (
	// RoleServe is `cairn serve`: the whole API, the engine queue's
	// worker and (unless SiteWorkers says otherwise) every site worker.
	RoleServe Role = iota
	// RoleSiteWorker is `cairn worker --site`: the named sites' workers
	// and their agents' sockets, behind an agent-only HTTP surface.
	RoleSiteWorker
)

// Config is everything that differs between processes and tests.
type Config struct {
	Role Role
	// Sites decides which site workers run here: nil runs every site,
	// NoSites none.
	Sites func(slug string) bool
	// PublicURL is the address operators and agents use; AgentURLs are
	// further origins agents may sign DPoP proofs for.
	PublicURL string
	AgentURLs []string
	// AgentEndpoint is where agents reach this process's sockets, recorded
	// for the realtime route ("" : not recorded; a serve replica answers
	// the route with the origin the agent used).
	AgentEndpoint string
	// EngineQueue is the Engine-wide queue (default "engine"); tests that
	// share one Temporal server give each database its own.
	EngineQueue string
	Namespace   string

	ApprovalTTL     time.Duration
	EnrollRateLimit int
	OnlineWindow    time.Duration
	GitHubAPIURL    string
	GitHubToken     string
	// AgentArtifacts is the directory of agent builds
	// (<platform>/cairn-agent[.exe]); "" serves none.
	AgentArtifacts string
	// ArtifactKey signs agent artifacts, apart from the script key (nil:
	// none; agents of protocol 3 then refuse updates). See
	// agentartifacts.EnvArtifactKeyFile and EnvArtifactPublicKey.
	ArtifactKey *agentartifacts.ArtifactKey
	// SessionIdle and SessionMax are the operator session lifetimes
	// (0: auth's defaults). EventKeepAlive is how often operator event
	// streams re-check their session (0: the API's default).
	SessionIdle, SessionMax time.Duration
	EventKeepAlive          time.Duration
	// ProofRateLimit is how many DPoP proofs without an access token one
	// address may present per minute (0: api.DefaultProofsPerAddress).
	ProofRateLimit int

	Console fs.FS
	TLS     *tlsca.Manager
	// TemporalUIOrigins may read the codec server's answers (CORS).
	TemporalUIOrigins []string
	// TrustedProxies are the peers whose X-Forwarded-For names the client.
	TrustedProxies []netip.Prefix
	Log            *slog.Logger
	// Started reports whether the process finished starting (for /startup).
	Started func() bool

	// Test seams: a clock, cheap key derivation and password hashing, and
	// no heartbeat flush loop (tests flush themselves).
	Now         func() time.Time
	KDF         *aegis.KDFParams
	Password    *auth.PasswordParams
	ManualFlush bool
	// UpdateDeadline bounds an agent update from request to check-in
	// (workflows default).
	UpdateDeadline time.Duration
	// NoSchedules leaves the maintenance schedules alone (tests share one
	// Temporal server and a schedule ID names one queue).
	NoSchedules bool
	// JobSchedulePrefix prefixes scheduled jobs' Temporal Schedule IDs
	// (default "scheduled-job:"); tests sharing a Temporal server give each
	// database its own. ScheduledCapacity is the slots of each site
	// worker's scheduled lane (default scheduledjobs.DefaultScheduledCapacity).
	JobSchedulePrefix string
	ScheduledCapacity int
	// TransferMaxBytes bounds one file transfer, TransferRetention keeps a
	// download's content after it ended (CAIRN_TRANSFER_MAX_BYTES,
	// CAIRN_TRANSFER_RETENTION; zero: the transfers defaults);
	// TransferStall is when a silent transfer is asked again (tests).
	TransferMaxBytes  int64
	TransferRetention time.Duration
	TransferStall     time.Duration
	// TransferQuotas bound what file transfers hold at once: staging
	// budgets, concurrency caps, disk headroom (CAIRN_TRANSFER_QUOTA_BYTES
	// and its siblings; zero values: unbounded).
	TransferQuotas transfers.Quotas
	// ShellTranscriptMax caps one shell session's transcript, whose
	// reaching ends the session (CAIRN_SHELL_TRANSCRIPT_MAX_BYTES; 0: the
	// default); ShellNoInputRecording leaves operators' keystrokes out of
	// transcripts (CAIRN_SHELL_RECORD_INPUT=0).
	ShellTranscriptMax    int64
	ShellNoInputRecording bool
	// LogDir holds the processes' rotating JSON log files the logs route
	// reads ("" when the file sink is off).
	LogDir string
	// Restart stops this process gracefully so that its supervisor
	// (systemd) starts it again (nil: the Engine cannot restart itself;
	// POST /api/server/services/engine/restart then answers
	// no_supervisor, as it does when no supervisor runs the process).
	Restart func()
	// ClusterAdmission is the admission this process joined the cluster
	// through (`cairn cluster join`), "" for one configured by hand.
	ClusterAdmission string
	// Tunnels configure the managed WireGuard tunnel: its UDP port,
	// endpoint, fallback IP and network (CAIRN_WIREGUARD_*; zero values:
	// the tunnels defaults).
	Tunnels tunnels.Config
	// GatewayURL is a gateway process's listener (`cairn gateway`,
	// CAIRN_GATEWAY_URL): with it, this serve binds no WireGuard and
	// relays desktop sockets and tunnel dials to the gateway.
	GatewayURL string
	// VNC are the remote desktop's SERVICE_VNC_* settings (nil: the
	// defaults; a site worker needs none, the workflow input carries the
	// timings).
	VNC *vnc.Config
}

// NoSites runs no site workers.
func NoSites(string) bool { return false }

// Engine is one process's Engine.
type Engine struct {
	cfg      Config
	Store    *db.Store
	Temporal client.Client
	Log      *slog.Logger
	// Metrics is this Engine's private Prometheus registry and series,
	// served by MetricsHandler.
	Metrics *metrics.Metrics

	Cipher *aegis.Cipher
	// PayloadKeys seal Temporal payloads (Codec); Grants authorise what
	// reaches agents (docs/architecture.md "Trust boundaries").
	PayloadKeys *payloadkeys.Keys
	Codec       *workers.PayloadCodec
	Data        converter.DataConverter
	Grants      *grants.Service
	Auth        *auth.Service
	Directory   *directory.Service
	Bus         *events.Bus
	Presence    *events.Presence
	Sites       *sites.Service
	Passkeys    *passkeys.Service
	Enrollment  *enrollment.Service
	Approvals   workflowclient.EnrollmentStarter
	Tokens      *devicetrust.Tokens
	DPoP        *devicetrust.Verifier
	// Internal verifies service components' HMAC-signed requests.
	Internal *internalauth.Service
	// Cluster keeps the deployment's members and admissions.
	Cluster *cluster.Service
	Devices *devices.Service
	Filters *devicefilters.Service
	Gateway *agentgateway.Hub
	Shells  *shells.Service
	// Credentials are the stored remote-session credentials; SourceHost
	// the source-hosting token.
	Credentials *credentials.Service
	SourceHost  *sourcehost.Service
	Jobs        *scheduledjobs.Service
	JobSched    workflowclient.JobScheduler
	Slots       *scheduledjobs.Slots
	Flows       *flows.Service
	JobRuns     scheduledjobs.RunCreator
	Signer      *scriptsign.Signer
	Updates     *agentupdates.Service
	Automation  *automation.Service
	Metadata    *metadata.Service
	Transfers   *transfers.Service
	Backups     *backup.Service
	Watchdogs   *watchdogs.Service
	Patches     *patches.Service
	Workers     *workers.Manager
	API         *api.Server

	// FlowWebhooks are flows' inbound webhooks (flows capability).
	FlowWebhooks *flows.Webhooks
	// Onboarding is agent redeploys (onboarding capability).
	Onboarding *onboarding.Service
	// Tunnels are the WireGuard tunnels; TunnelServer this serve
	// replica's end of them (nil in a site worker).
	Tunnels *tunnels.Service
	// VNC keeps remote desktop sessions (vncCapability).
	VNC          *vnc.Service
	TunnelServer *tunnels.Server
	// TunnelReach reaches the tunnels: TunnelServer, or DesktopGateway
	// when a gateway process holds the WireGuard (nil: neither).
	TunnelReach    tunnels.Reach
	DesktopGateway *gateway.Client
	// RDP runs this process's RDP bridges (rdpCapability).
	RDP *rdp.Service
	// Artifacts are the agent builds; InstallLinks the signed links to them.
	Artifacts    *agentartifacts.Catalog
	InstallLinks *installlinks.Service

	bg      context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	stopHub context.CancelFunc
	hubDone chan struct{}
	// stopTemporal ends the wait for Temporal; temporalDone closes when it
	// has ended.
	stopTemporal context.CancelFunc
	temporalDone chan struct{}
	// gate is the Temporal client of everything but the workers; it fails
	// fast while Temporal is known to be away (temporal_gate.go).
	gate *temporalGate
	// siteChanges asks the site-worker loop to sync again.
	siteChanges chan struct{}
	// reconcileSchedules is ensureSchedules, for capabilities' activities
	// (a restore): a field, since a capability naming the method would make
	// Capabilities refer to itself through MaintenanceJobs.
	reconcileSchedules func(context.Context) error
}

// New builds an Engine over an open database. topts say how to reach
// Temporal (address, namespace, TLS, credentials, logger); the Engine dials
// lazily with its own payload codec, so what it writes to Temporal is
// sealed by keys under its master cipher. Nothing runs until Start.
func New(ctx context.Context, store *db.Store, topts client.Options, cfg Config) (*Engine, error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.EngineQueue = cmp.Or(cfg.EngineQueue, workflows.EngineTaskQueue)
	cfg.Namespace = cmp.Or(cfg.Namespace, "default")
	kdf := aegis.DefaultKDF
	if cfg.KDF != nil {
		kdf = *cfg.KDF
	}
	// Whatever logger the caller hands in, no line carries a secret.
	cfg.Log = slog.New(logs.Redact(cfg.Log.Handler()))
	log := cfg.Log
	e := &Engine{cfg: cfg, Store: store, Log: log, Metrics: metrics.New()}
	e.reconcileSchedules = e.ensureSchedules
	e.Metrics.WatchPool(store.Pool.Stat)

	e.Cipher = aegis.New(aegis.PGStore{Q: store.Queries, S: store}, kdf)
	e.Cipher.Register(SealedColumns()...)
	e.PayloadKeys = payloadkeys.New(store.Queries, e.Cipher)
	e.Codec = workers.NewPayloadCodec(e.PayloadKeys)
	e.Data = workers.DataConverter(e.Codec)
	topts.DataConverter, topts.FailureConverter = e.Data, workers.FailureConverter(e.Data)
	topts.Namespace = cmp.Or(topts.Namespace, cfg.Namespace)
	tc, err := client.NewLazyClient(topts)
	if err != nil {
		return nil, fmt.Errorf("Temporal client for %s: %w", topts.HostPort, err)
	}
	e.Temporal, e.gate = tc, &temporalGate{Client: tc}
	e.bg, e.cancel = context.WithCancel(context.Background())
	e.temporalDone = make(chan struct{})
	// Workers get the SDK's client; every caller that starts or reaches a
	// workflow (routes, starters, activities) the gated one.
	workerClient := tc
	tc = e.gate

	e.Directory = directory.NewService(store, e.Cipher, log)
	if e.Auth, err = auth.NewService(ctx, store, e.Cipher, auth.Config{Password: cfg.Password, Now: cfg.Now, Directory: e.Directory,
		SessionIdle: cfg.SessionIdle, SessionMax: cfg.SessionMax}); err != nil {
		return nil, err
	}
	e.Bus = events.NewBus(store, log)
	e.Sites = sites.NewService(store, func(ctx context.Context) error { return e.Bus.Signal(ctx, events.ControlSites) })
	e.Presence = events.NewPresence(store, e.Bus, log)
	if e.Passkeys, err = passkeys.NewService(store, e.Auth, cfg.PublicURL, cfg.Now); err != nil {
		return nil, err
	}
	e.Tokens = devicetrust.NewTokens(store, e.Cipher, cfg.PublicURL, cfg.Now)
	e.DPoP = devicetrust.NewVerifier(store, devicetrust.Options{Now: cfg.Now})
	e.Internal = internalauth.New(store.Queries, e.Cipher, cfg.Now)
	e.Devices = devices.NewService(store, e.Bus, devices.Config{OnlineWindow: cfg.OnlineWindow, Log: log.With("component", "devices"),
		Metrics: e.Metrics})
	// Filters judge connection status on the same clock the device service
	// stamps last_seen with (the wall clock, not cfg.Now, which tests move
	// for TOTP), so a filter and a device row never disagree on a status.
	e.Filters = devicefilters.New(store, devicefilters.Config{OnlineWindow: e.Devices.OnlineWindow(), SocketWindow: devices.SocketWindow})
	e.Signer = scriptsign.New(store, e.Cipher)
	e.Grants = grants.New(store, e.Cipher, e.Signer, cfg.Now)
	e.Automation = automation.NewService(store, e.Signer, e.Devices)
	e.JobRuns = scheduledjobs.AutomationRuns{Svc: e.Automation}
	e.Metadata = metadata.New(store, e.Bus, e.Devices, cfg.Now, log.With("component", "metadata"))
	if cfg.Role == RoleServe {
		// The scripts linked to reserved metadata fields 1 and 2.
		if err := metadata.SeedBundled(ctx, e.Automation); err != nil {
			return nil, fmt.Errorf("bundled assemblies: %w", err)
		}
	}

	e.JobSched = workflowclient.JobScheduler{Client: tc, TaskQueue: cfg.EngineQueue, Prefix: cfg.JobSchedulePrefix, Data: e.Data}
	e.Jobs = scheduledjobs.New(store, e.JobSched, cfg.Now, log.With("component", "scheduledjobs"))
	e.Jobs.SetContentSigner(scheduledjobs.AutomationRuns{Svc: e.Automation})
	e.Jobs.SetFilterMatcher(e.Filters)
	e.Slots = scheduledjobs.NewSlots(store, cfg.ScheduledCapacity)
	e.Flows = flows.New(store, workflowclient.FlowStarter{Client: tc, TaskQueue: cfg.EngineQueue})

	if cfg.ArtifactKey != nil {
		e.Signer.SetArtifactKeys([]string{cfg.ArtifactKey.PublicBase64()})
	}
	e.Artifacts = agentartifacts.New(cfg.AgentArtifacts, agentartifacts.Options{Store: store, Signer: e.Signer,
		ArtifactKey: cfg.ArtifactKey, Log: log.With("component", "agentartifacts")})
	e.InstallLinks = installlinks.New(store, e.Cipher, e.Artifacts, cfg.Now, log.With("component", "installlinks"))
	e.Updates = agentupdates.New(store, e.Devices, e.Bus, updateArtifacts{e.Artifacts}, log.With("component", "agentupdates"))

	e.Workers = workers.NewManager(workerClient, log, cfg.Sites)
	// Workflow payloads are sealed under the master cipher: a process
	// runs workers only while it holds it (docs/architecture.md "Trust
	// boundaries"), stops them when it locks and starts them on unlock.
	e.siteChanges = make(chan struct{}, 1)
	e.Workers.SetReady(e.Cipher.Unlocked)
	e.Cipher.OnUnlock(e.afterUnlock)
	e.Cipher.OnLock(e.Workers.Stop)
	book, err := Codes()
	if err != nil {
		return nil, fmt.Errorf("capabilities' error codes: %w", err)
	}
	cairn.Declare(book)
	gw := agentgateway.Options{Log: log, Now: cfg.Now, QueueOf: workflows.SiteTaskQueue, Completer: activities.Completer{Client: tc},
		Endpoint: cfg.AgentEndpoint, Codes: book}
	e.Gateway = agentgateway.New(e.Presence.ReplicaID, store, e.Bus, e.Workers, gw)
	e.Metrics.WatchAgents(e.Gateway.ConnectedBySite)
	e.Workers.OnSiteStop(e.Gateway.DropSite)

	// Each capability builds the services only it uses; then every
	// worker registers every capability's workflows and activities, and
	// the API serves every capability's routes.
	for _, c := range Capabilities {
		if c.Wire == nil {
			continue
		}
		if err := c.Wire(ctx, e); err != nil {
			return nil, fmt.Errorf("capability %s: %w", c.Name, err)
		}
	}
	e.Workers.RegisterWorkflows(Workflows()...)
	e.Workers.Register(activitiesOf(e)...)

	deps := api.Deps{
		Store: store, Auth: e.Auth, Cipher: e.Cipher, Sites: e.Sites, Passkeys: e.Passkeys,
		Bus: e.Bus, Presence: e.Presence, EventKeepAlive: cfg.EventKeepAlive, Temporal: tc, Workers: e.Workers, Namespace: cfg.Namespace,
		Console: cfg.Console, PublicURL: cfg.PublicURL, TrustedProxies: cfg.TrustedProxies, Log: log, Started: cfg.Started, TLS: cfg.TLS,
		Sockets: e.Gateway, DeviceTokens: e.Tokens, DPoP: e.DPoP,
		AgentURLs: cfg.AgentURLs, ProofsPerAddress: ratelimit.Rule{Limit: cfg.ProofRateLimit, Window: api.DefaultProofsPerAddress.Window},
		Devices: e.Devices, Operations: workflowclient.OperationRunner{Client: tc, Grants: e.Grants, Record: e.Devices}, PayloadCodec: e.Codec, TemporalUIOrigins: cfg.TemporalUIOrigins,
		AgentOnly: cfg.Role == RoleSiteWorker, Signer: e.Signer, InstallLinks: e.InstallLinks,
		Automation: e.Automation, Runs: workflowclient.JobRunStarter{Client: tc, TaskQueue: cfg.EngineQueue},
		Jobs: e.Jobs, Slots: e.Slots,
		DeviceFilters: e.Filters,
		Metadata:      e.Metadata,
		Metrics:       e.Metrics,
		Codes:         book,
		Internal:      e.Internal,
	}
	e.API = api.New(deps, areas(e)...)
	return e, nil
}

// SealedColumns are every column the master cipher seals, which a
// data-key rotation re-seals (issue 13 item 14). A package that seals a
// new column adds it here; TestEverySealedColumnIsResealed compares this
// list with the schema's *_sealed columns.
func SealedColumns() []aegis.Column {
	return slices.Concat(auth.SealedColumns(), enrollment.SealedColumns(), directory.SealedColumns(),
		credentials.SealedColumns(), sourcehost.SealedColumns(), scriptsign.SealedColumns(), aegis.ServerKeyColumns(),
		payloadkeys.SealedColumns(), tunnels.SealedColumns(), watchdogs.ChannelSealedColumns(), internalauth.SealedColumns(),
		flows.WebhookSealedColumns())
}

// updateArtifacts hands agent updates the catalog's signed artifacts.
type updateArtifacts struct{ c *agentartifacts.Catalog }

func (u updateArtifacts) Current(ctx context.Context, platform string) (agentupdates.Artifact, error) {
	a, err := u.c.SignedCurrent(ctx, platform)
	if err != nil {
		return agentupdates.Artifact{}, err
	}
	return agentupdates.Artifact{ID: a.ID, Platform: a.Platform, BuildID: a.BuildID, SHA256: a.SHA256, Size: a.Size,
		Signature: a.Signature, ArtifactSignature: a.ArtifactSignature}, nil
}

// Handler serves the API (and the console) of this process.
func (e *Engine) Handler() http.Handler { return e.API.Handler() }

// MetricsHandler serves GET /metrics (Prometheus). cmd/cairn mounts it on
// its own listener (CAIRN_METRICS_ADDR, optionally behind a bearer token),
// never on the API's: the series name sites and routes.
func (e *Engine) MetricsHandler() http.Handler { return e.Metrics.Handler() }

// Start runs the background parts: the event bus, presence, the cipher's
// reset watch, heartbeat batching, the agent gateway and the workers.
//
// Temporal may be away when the Engine starts (TEMPORAL_ADDRESS names a
// server that is down or restarting): sign-in, agent callbacks and the
// console need only PostgreSQL, so Start does not wait for it. The
// Temporal-side set-up (search attributes, schedules, the engine worker)
// then runs in the background as soon as Temporal answers, and the site
// workers start with it.
func (e *Engine) Start() error {
	e.goBG(e.Bus.Run)
	e.goBG(e.Presence.Run)
	self := e.clusterSelf()
	e.goBG(func(ctx context.Context) { e.Cluster.Run(ctx, self, e.Log) })
	e.goBG(func(ctx context.Context) { e.Cipher.Watch(ctx, e.Bus.OnControl(events.ControlAegis), e.Log) })
	if !e.cfg.ManualFlush {
		e.goBG(e.Devices.Run)
	}
	e.goBG(e.API.Run)
	if e.TunnelServer != nil {
		// The Engine's WireGuard: on the replica holding the owner lease,
		// once a tunnel exists (internal/tunnels).
		e.goBG(e.TunnelServer.Run)
	}

	hubCtx, stopHub := context.WithCancel(context.Background())
	e.stopHub, e.hubDone = stopHub, make(chan struct{})
	go func() { defer close(e.hubDone); e.Gateway.Run(hubCtx) }()

	if e.cfg.Role == RoleServe {
		// Manifest signatures need the unlocked cipher of a serve process.
		e.goBG(e.Artifacts.Run)
	}
	// Site workers resync when a site changes, once Temporal is back and
	// when the cipher is unlocked.
	changes := e.siteChanges
	siteChanges := e.Bus.OnControl(events.ControlSites)
	e.goBG(func(ctx context.Context) {
		for {
			select {
			case <-ctx.Done():
				return
			case <-siteChanges:
				poke(changes)
			}
		}
	})

	tctx, stopTemporal := context.WithCancel(context.Background())
	e.stopTemporal = stopTemporal
	err := e.probeTemporal(tctx)
	if err == nil {
		// A Temporal that answers its health check can still time out on
		// the set-up calls (a dev server just restarted on a loaded
		// machine): that is Temporal being away, not a reason to exit.
		if err = e.startDurable(e.bg); err != nil {
			e.Metrics.TemporalError("start")
		}
	}
	if err == nil {
		close(e.temporalDone)
	} else {
		e.Log.Warn("Temporal cannot be reached; sign-in and agent callbacks go on, durable operations wait for it", "err", err)
		go func() {
			defer close(e.temporalDone)
			if e.awaitTemporal(tctx) {
				poke(changes)
			}
		}()
	}
	e.goBG(func(ctx context.Context) { e.Workers.Run(ctx, e.Sites.Slugs, changes) })
	e.goBG(e.watchTemporal)
	return nil
}

func poke(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// temporalProbe bounds one Temporal health check.
const temporalProbe = 5 * time.Second

// probeTemporal checks Temporal's health and tells the gate.
func (e *Engine) probeTemporal(ctx context.Context) error {
	started := time.Now()
	pctx, cancel := context.WithTimeout(ctx, temporalProbe)
	defer cancel()
	_, err := e.Temporal.CheckHealth(pctx, &client.CheckHealthRequest{})
	if ctx.Err() == nil { // a probe cut short by shutdown says nothing
		e.gate.report(err == nil, started)
		if err != nil {
			e.Metrics.TemporalError("health_check")
		}
	}
	return err
}

// startDurable does the Temporal side of Start: search attributes, the
// engine queue's worker, the maintenance schedules and the scheduled jobs'
// schedules. Every step is idempotent, so a failed attempt is retried
// whole. Schedules carry sealed payloads, so while this process's cipher
// is locked they wait for its unlock (ensureSchedulesOnUnlock).
func (e *Engine) startDurable(ctx context.Context) error {
	if err := workers.EnsureSearchAttributes(ctx, e.Temporal, e.cfg.Namespace); err != nil {
		return err
	}
	if e.cfg.Role != RoleServe {
		return nil
	}
	if !e.Cipher.Unlocked() {
		e.Log.Info("the engine worker and the schedules start once the master cipher is unlocked (workflow payloads are sealed under it)")
		return nil
	}
	if err := e.Workers.StartEngineOn(e.cfg.EngineQueue); err != nil {
		return fmt.Errorf("start engine worker: %w", err)
	}
	return e.ensureSchedules(ctx)
}

// ensureSchedules makes the maintenance schedules and the scheduled jobs'
// schedules what this Engine wants.
func (e *Engine) ensureSchedules(ctx context.Context) error {
	if !e.cfg.NoSchedules {
		// Clean-up runs as Temporal Schedules, once per deployment.
		if err := workers.EnsureSchedules(ctx, e.Temporal, e.Data, e.cfg.EngineQueue, MaintenanceJobs()); err != nil {
			return fmt.Errorf("maintenance schedules: %w", err)
		}
	}
	// PostgreSQL is the source of truth of scheduled jobs: a wiped or
	// restored Temporal gets their schedules back here.
	if err := e.ReconcileJobSchedules(ctx); err != nil {
		return fmt.Errorf("scheduled job schedules: %w", err)
	}
	return nil
}

// afterUnlock starts what waited for the cipher: the site workers, and
// (once Temporal's side is set up) the engine worker and the schedules,
// retrying while Temporal fails.
func (e *Engine) afterUnlock(context.Context) {
	poke(e.siteChanges)
	if e.cfg.Role != RoleServe {
		return
	}
	e.goBG(func(ctx context.Context) {
		select {
		case <-ctx.Done():
			return
		case <-e.temporalDone:
		}
		for backoff := time.Second; ; backoff = min(backoff*2, 15*time.Second) {
			err := e.Workers.StartEngineOn(e.cfg.EngineQueue)
			if err == nil {
				err = e.ensureSchedules(ctx)
			}
			if err == nil || ctx.Err() != nil || errors.Is(err, workers.ErrNotReady) {
				return // done, stopping, or locked again (the next unlock starts over)
			}
			e.Log.Warn("engine worker and schedules after unlock", "err", err, "retry_in", backoff)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
		}
	})
}

// awaitTemporal retries the Temporal side of Start until it succeeds (true)
// or ctx ends (false).
func (e *Engine) awaitTemporal(ctx context.Context) bool {
	backoff := time.Second
	for {
		err := e.probeTemporal(ctx)
		if err == nil {
			if err = e.startDurable(ctx); err != nil {
				e.Metrics.TemporalError("start")
			} else {
				e.Log.Info("Temporal reached; durable operations and workers started")
				return true
			}
		}
		e.Log.Warn("Temporal still unavailable", "err", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 15*time.Second)
	}
}

// ReconcileJobSchedules makes Temporal's scheduled-job schedules match
// PostgreSQL (create missing, update drifted, delete orphans).
func (e *Engine) ReconcileJobSchedules(ctx context.Context) error {
	jobs, err := e.Jobs.Schedulable(ctx)
	if err != nil {
		return err
	}
	n, deleted, err := e.JobSched.Reconcile(ctx, jobs)
	e.Log.Info("scheduled job schedules reconciled", "schedules", n, "orphans_deleted", deleted)
	return err
}

func (e *Engine) goBG(f func(context.Context)) {
	e.wg.Add(1)
	go func() { defer e.wg.Done(); f(e.bg) }()
}

// Stop stops what Start started, in reverse: the gateway (closing sockets
// and clearing their records), the workers, the queued heartbeats, then
// the background loops. The caller closes the database and Temporal.
func (e *Engine) Stop(ctx context.Context) {
	if e.stopTemporal != nil {
		// No worker may start behind the workers' Stop.
		e.stopTemporal()
		<-e.temporalDone
	}
	if e.stopHub != nil {
		e.stopHub()
		<-e.hubDone
	}
	e.Workers.Stop()
	if err := e.Devices.Flush(ctx); err != nil && !errors.Is(err, context.Canceled) {
		e.Log.Error("flush heartbeats at shutdown", "err", err)
	}
	e.cancel()
	e.wg.Wait()
	if e.RDP != nil {
		// The RDP bridges' processes end with the Engine.
		e.RDP.Close()
	}
	e.Temporal.Close()
}
