// Package devtemporal embeds a single-process Temporal server (the shape
// `temporal server start-dev` runs: every service in one process, SQLite
// persistence) in the Engine process, for `make run` and integration tests
// when TEMPORAL_ADDRESS is unset. Its frontend can also serve TLS and
// require client certificates (Options.TLS), so tests can stand in for a
// production cluster that does. It is the only package that imports the
// Temporal server, so ordinary builds and unit tests do not pay for it.
package devtemporal

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/google/uuid"
	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uiserveroptions "github.com/temporalio/ui-server/v2/server/server_options"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	tlog "go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
	"go.temporal.io/server/common/membership/static"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	"go.temporal.io/server/components/callbacks"
	"go.temporal.io/server/components/nexusoperations"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
)

// Options configure Start.
type Options struct {
	// DatabaseFile is the SQLite file; empty keeps everything in memory.
	DatabaseFile string
	// PostgresURL, when set, keeps Temporal's state in PostgreSQL rather
	// than SQLite (DatabaseFile is then ignored): the databases
	// PostgresDatabases names on that server, created and their schema
	// set up or updated at every start with Temporal's own schema tool.
	PostgresURL string
	IP          string // default 127.0.0.1
	// FrontendIP is where the frontend alone listens, such as 0.0.0.0 in
	// a container other containers reach; default IP. The other services
	// and the server's own clients stay on IP.
	FrontendIP string
	Port       int // 0 picks a free port
	// UIPort serves the Temporal UI; 0 disables it.
	UIPort int
	// UICodecEndpoint is the codec server the UI asks to decode payloads
	// for display ("" for none).
	UICodecEndpoint string
	Namespace       string // default "default"
	// SearchAttributes are registered as Keyword attributes.
	SearchAttributes []string
	Logger           *slog.Logger
	LogLevel         slog.Level
	// TLS makes the frontend serve TLS, and with a client CA require a
	// client certificate; nil serves plain gRPC, as `temporal server
	// start-dev` does.
	TLS *TLS

	// memoryName names the in-memory database when DatabaseFile is empty.
	memoryName string
}

// TLS is the frontend's TLS. Every file is PEM.
type TLS struct {
	// CertFile and KeyFile are the frontend's certificate and key. The
	// certificate must name ServerName (by default the IP the server
	// listens on).
	CertFile, KeyFile string
	// ClientCAFile, when set, makes the frontend refuse a connection
	// without a client certificate issued by one of these CAs (mTLS).
	ClientCAFile string
	// RootCAFile holds the CA that issued CertFile: the server's own
	// clients of its frontend (its system worker and the UI) verify the
	// frontend against it.
	RootCAFile string
	// ClientCertFile and ClientKeyFile are the certificate those clients
	// present; required with ClientCAFile.
	ClientCertFile, ClientKeyFile string
	// ServerName is the name those clients verify; default the IP.
	ServerName string
}

// Server is a running embedded Temporal server.
type Server struct {
	srv       temporal.Server
	ui        *uiserver.Server
	memory    *memoryDatabase // nil with a DatabaseFile
	Address   string
	UIAddress string // empty when the UI is off
	Namespace string
}

// The cluster is alone: its names and failover version only need to agree
// with themselves (and with the SQLite file, which keeps the namespace).
const (
	clusterName            = "active"
	initialFailoverVersion = 1
	storeName              = "sqlite-default"
)

// Start starts the server and returns once its frontend serves.
func Start(o Options) (*Server, error) {
	if o.IP == "" {
		o.IP = "127.0.0.1"
	}
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if err := o.TLS.check(); err != nil {
		return nil, err
	}
	var err error
	if o.Port == 0 {
		if o.Port, err = freePort(o.IP); err != nil {
			return nil, err
		}
	} else if err := checkPortFree(cmp.Or(o.FrontendIP, o.IP), o.Port); err != nil {
		return nil, fmt.Errorf("temporal frontend port %d: %w (set TEMPORAL_ADDRESS to use a running server, or CAIRN_TEMPORAL_PORT)", o.Port, err)
	}
	if o.UIPort != 0 {
		// The UI server exits the process on a busy port, so check first.
		if err := checkPortFree(o.IP, o.UIPort); err != nil {
			return nil, fmt.Errorf("temporal UI port %d: %w (set CAIRN_TEMPORAL_UI_PORT, 0 disables the UI)", o.UIPort, err)
		}
	}
	var memory *memoryDatabase
	if o.DatabaseFile == "" && o.PostgresURL == "" {
		o.memoryName = "cairn-temporal-" + uuid.NewString()
		if memory, err = holdMemoryDatabase(o.memoryName); err != nil {
			return nil, err
		}
	}
	s, err := o.start(memory)
	if err != nil {
		_ = memory.Close()
		return nil, err
	}
	return s, nil
}

func (o Options) start(memory *memoryDatabase) (*Server, error) {
	var err error
	// The other services, and the frontend's HTTP API, take free ports.
	ports := map[string]int{}
	for _, name := range []string{"frontend-http", "history", "matching", "worker"} {
		if ports[name], err = freePort(o.IP); err != nil {
			return nil, err
		}
	}
	conf, err := o.serverConfig(ports)
	if err != nil {
		return nil, err
	}
	log := slogLogger{log: o.Logger, level: o.LogLevel}
	hosts := map[primitives.ServiceName]static.Hosts{}
	for name, svc := range conf.Services {
		hosts[primitives.ServiceName(name)] = static.SingleLocalHost(net.JoinHostPort(o.IP, strconv.Itoa(svc.RPC.GRPCPort)))
	}
	srv, err := temporal.NewServer(
		temporal.WithConfig(conf),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithStaticHosts(hosts),
		temporal.WithLogger(log),
		// A development server has no authorization: whoever the frontend
		// lets in (any client, or with TLS.ClientCAFile any holder of a
		// certificate from those CAs) may do anything.
		temporal.WithAuthorizer(authorization.NewNoopAuthorizer()),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return authorization.NewNoopClaimMapper() }),
		temporal.WithDynamicConfigClient(o.dynamicConfig(ports["frontend-http"])),
	)
	if err != nil {
		return nil, fmt.Errorf("start embedded Temporal: %w", err)
	}
	s := &Server{srv: srv, memory: memory, Address: net.JoinHostPort(o.IP, strconv.Itoa(o.Port)), Namespace: o.Namespace}
	if o.UIPort != 0 {
		s.ui = uiserver.NewServer(uiserveroptions.WithConfigProvider(o.uiConfig()))
		s.UIAddress = "http://" + net.JoinHostPort(o.IP, strconv.Itoa(o.UIPort))
		// Start blocks while the UI serves.
		go func() {
			if err := s.ui.Start(); err != nil {
				o.Logger.Error("Temporal UI stopped", "err", err)
			}
		}()
	}
	if err := srv.Start(); err != nil {
		if s.ui != nil {
			s.ui.Stop()
		}
		return nil, fmt.Errorf("start embedded Temporal: %w", err)
	}
	return s, nil
}

// Stop shuts the server down.
func (s *Server) Stop() {
	if s.ui != nil {
		s.ui.Stop()
	}
	_ = s.srv.Stop()
	_ = s.memory.Close()
}

// check refuses a TLS setting the server could not serve.
func (t *TLS) check() error {
	if t == nil {
		return nil
	}
	switch {
	case t.CertFile == "" || t.KeyFile == "":
		return errors.New("embedded Temporal TLS: the frontend needs CertFile and KeyFile")
	case t.RootCAFile == "":
		return errors.New("embedded Temporal TLS: RootCAFile (the CA of CertFile) is needed by the server's own clients")
	case (t.ClientCertFile == "") != (t.ClientKeyFile == ""):
		return errors.New("embedded Temporal TLS: ClientCertFile and ClientKeyFile go together")
	case t.ClientCAFile != "" && t.ClientCertFile == "":
		return errors.New("embedded Temporal TLS: with ClientCAFile the server's own clients need ClientCertFile and ClientKeyFile")
	}
	return nil
}

// serverName is the name the server's own clients verify the frontend as.
func (o Options) serverName() string {
	if o.TLS.ServerName != "" {
		return o.TLS.ServerName
	}
	return o.IP
}

func (o Options) serverConfig(ports map[string]int) (*config.Config, error) {
	frontend := net.JoinHostPort(o.IP, strconv.Itoa(o.Port))
	var conf config.Config
	conf.Global.Membership.MaxJoinDuration = 30 * time.Second
	conf.Global.Membership.BroadcastAddress = o.IP
	if t := o.TLS; t != nil {
		conf.Global.TLS.Frontend.Server = config.ServerTLS{CertFile: t.CertFile, KeyFile: t.KeyFile}
		if t.ClientCAFile != "" {
			conf.Global.TLS.Frontend.Server.ClientCAFiles = []string{t.ClientCAFile}
			conf.Global.TLS.Frontend.Server.RequireClientAuth = true
		}
		// The system worker is a client of the frontend like any other.
		conf.Global.TLS.SystemWorker = config.WorkerTLS{CertFile: t.ClientCertFile, KeyFile: t.ClientKeyFile,
			Client: config.ClientTLS{ServerName: o.serverName(), RootCAFiles: []string{t.RootCAFile}}}
	}

	if o.PostgresURL != "" {
		if err := o.postgresStores(&conf); err != nil {
			return nil, err
		}
	} else {
		sql, err := o.sqlConfig()
		if err != nil {
			return nil, err
		}
		conf.Persistence.DefaultStore = storeName
		conf.Persistence.VisibilityStore = storeName
		conf.Persistence.NumHistoryShards = 1
		conf.Persistence.DataStores = map[string]config.DataStore{storeName: {SQL: sql}}
	}

	conf.ClusterMetadata = &cluster.Config{
		FailoverVersionIncrement: 10,
		MasterClusterName:        clusterName,
		CurrentClusterName:       clusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{clusterName: {
			Enabled:                true,
			InitialFailoverVersion: initialFailoverVersion,
			RPCAddress:             frontend,
			HTTPAddress:            net.JoinHostPort(o.IP, strconv.Itoa(ports["frontend-http"])),
			ClusterID:              uuid.NewString(),
		}},
	}
	conf.DCRedirectionPolicy.Policy = "noop"
	service := func(grpcPort, httpPort int) config.Service {
		var s config.Service
		s.RPC.GRPCPort, s.RPC.HTTPPort, s.RPC.BindOnIP = grpcPort, httpPort, o.IP
		return s
	}
	frontendSvc := service(o.Port, ports["frontend-http"])
	if o.FrontendIP != "" {
		frontendSvc.RPC.BindOnIP = o.FrontendIP
	}
	conf.Services = map[string]config.Service{
		string(primitives.FrontendService): frontendSvc,
		string(primitives.HistoryService):  service(ports["history"], 0),
		string(primitives.MatchingService): service(ports["matching"], 0),
		string(primitives.WorkerService):   service(ports["worker"], 0),
	}
	conf.Archival.History.State = "disabled"
	conf.Archival.Visibility.State = "disabled"
	conf.NamespaceDefaults.Archival.History.State = "disabled"
	conf.NamespaceDefaults.Archival.Visibility.State = "disabled"
	conf.PublicClient.HostPort = frontend
	return &conf, nil
}

// sqlConfig is the SQLite store: the file (its schema set up when it is
// new) or a private in-memory database, with the namespace registered.
func (o Options) sqlConfig() (*config.SQL, error) {
	conf := &config.SQL{PluginName: sqliteplugin.PluginName}
	if o.DatabaseFile == "" {
		// The plugin sets the schema of an in-memory database up itself.
		conf.ConnectAttributes = map[string]string{"mode": "memory", "cache": "shared"}
		conf.DatabaseName = o.memoryName
	} else {
		conf.ConnectAttributes = map[string]string{"mode": "rwc"}
		conf.DatabaseName = o.DatabaseFile
		if _, err := os.Stat(o.DatabaseFile); errors.Is(err, os.ErrNotExist) {
			if _, err := os.Stat(filepath.Dir(o.DatabaseFile)); err != nil {
				return nil, fmt.Errorf("embedded Temporal database directory: %w", err)
			}
			if err := sqliteschema.SetupSchema(conf); err != nil {
				return nil, fmt.Errorf("embedded Temporal database schema: %w", err)
			}
		}
	}
	if err := o.createNamespace(conf); err != nil {
		return nil, err
	}
	return conf, nil
}

// postgresStores is the PostgreSQL store and visibility store, their
// databases created and their schemas brought up to date, with the
// namespace registered.
func (o Options) postgresStores(conf *config.Config) error {
	storeDB, visDB, err := PostgresDatabases(o.PostgresURL)
	if err != nil {
		return err
	}
	store, err := postgresSQL(o.PostgresURL, storeDB)
	if err != nil {
		return err
	}
	vis, err := postgresSQL(o.PostgresURL, visDB)
	if err != nil {
		return err
	}
	log := slogLogger{log: o.Logger, level: max(o.LogLevel, slog.LevelWarn)}
	if err := setupPostgres(store, pgSchema, log); err != nil {
		return fmt.Errorf("embedded Temporal on PostgreSQL: %w", err)
	}
	if err := setupPostgres(vis, pgVisibilitySchema, log); err != nil {
		return fmt.Errorf("embedded Temporal on PostgreSQL: %w", err)
	}
	if err := o.createNamespace(store); err != nil {
		return err
	}
	conf.Persistence.DefaultStore = pgStore
	conf.Persistence.VisibilityStore = pgVisStore
	conf.Persistence.NumHistoryShards = pgHistoryShards
	conf.Persistence.DataStores = map[string]config.DataStore{pgStore: {SQL: store}, pgVisStore: {SQL: vis}}
	return nil
}

// createNamespace registers the namespace, with the search attributes as
// Keyword aliases of the SQL visibility's custom columns, unless the
// store has it already (the SQLite helper writes through Temporal's
// generic SQL persistence, so it serves PostgreSQL too).
func (o Options) createNamespace(conf *config.SQL) error {
	attrs := map[string]enumspb.IndexedValueType{}
	for _, name := range o.SearchAttributes {
		attrs[name] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
	}
	ns, err := sqliteschema.NewNamespaceConfig(clusterName, o.Namespace, false, attrs)
	if err != nil {
		return fmt.Errorf("embedded Temporal namespace: %w", err)
	}
	if err := sqliteschema.CreateNamespaces(conf, ns); err != nil {
		return fmt.Errorf("embedded Temporal namespace: %w", err)
	}
	return nil
}

// dynamicConfig holds the values `temporal server start-dev` sets, and
// workflow updates.
func (o Options) dynamicConfig(httpPort int) dynamicconfig.StaticClient {
	httpAddr := net.JoinHostPort(o.IP, strconv.Itoa(httpPort))
	scheme := "http"
	if o.TLS != nil {
		scheme = "https"
	}
	return dynamicconfig.StaticClient{
		dynamicconfig.HistoryCacheHostLevelMaxSize.Key():                 8096,
		dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Key(): 100,
		nexusoperations.CallbackURLTemplate.Key():                        scheme + "://" + httpAddr + "/namespaces/{{.NamespaceName}}/nexus/callback",
		callbacks.AllowedAddresses.Key(): []struct {
			Pattern       string
			AllowInsecure bool
		}{{Pattern: httpAddr, AllowInsecure: true}},
		"frontend.enableUpdateWorkflowExecution":              true,
		"frontend.enableUpdateWorkflowExecutionAsyncAccepted": true,
	}
}

// uiConfig is the UI's: it reaches the frontend as the server's own
// clients do. With TLS it holds their client certificate, so anyone who
// reaches the UI port acts with it: keep the UI on loopback.
func (o Options) uiConfig() *uiconfig.Config {
	c := &uiconfig.Config{
		Host:                o.IP,
		Port:                o.UIPort,
		TemporalGRPCAddress: net.JoinHostPort(o.IP, strconv.Itoa(o.Port)),
		EnableUI:            true,
		// The Engine's codec server knows an administrator by the session
		// cookie: the UI sends credentials with its codec requests.
		Codec: uiconfig.Codec{Endpoint: o.UICodecEndpoint, IncludeCredentials: o.UICodecEndpoint != "",
			DefaultErrorMessage: "Sign in to the Cairn console as an administrator (same host name as this page) to read payloads."},
		CORS:     uiconfig.CORS{CookieInsecure: true},
		HideLogs: true,
	}
	if net.ParseIP(o.IP).To4() == nil && net.ParseIP(o.IP) != nil {
		c.Host = "[" + o.IP + "]"
	}
	if t := o.TLS; t != nil {
		c.TLS = uiconfig.TLS{CaFile: t.RootCAFile, CertFile: t.ClientCertFile, KeyFile: t.ClientKeyFile,
			ServerName: o.serverName(), EnableHostVerification: true}
	}
	return c
}

// freePort is a port on ip nothing listens on. On Linux the kernel may hand
// a just-closed ephemeral port out again at once; a connection closed from
// the listening side first leaves the port in TIME_WAIT, where bind(:0)
// skips it while an explicit bind (SO_REUSEADDR) still takes it.
func freePort(ip string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, fmt.Errorf("embedded Temporal: no free port on %s: %w", ip, err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	if runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		return port, nil // these hand ephemeral ports out in turn
	}
	c, err := net.Dial("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		return 0, fmt.Errorf("embedded Temporal: no free port on %s: %w", ip, err)
	}
	defer c.Close()
	s, err := l.Accept()
	if err != nil {
		return 0, fmt.Errorf("embedded Temporal: no free port on %s: %w", ip, err)
	}
	_ = s.Close()
	return port, nil
}

func checkPortFree(ip string, port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		return err
	}
	return l.Close()
}

// slogLogger is the server's logger over slog, dropping lines below level.
type slogLogger struct {
	log   *slog.Logger
	level slog.Level
}

var (
	_ tlog.Logger      = slogLogger{}
	_ tlog.SLogWrapper = slogLogger{}
)

func (s slogLogger) Debug(msg string, tags ...tag.Tag) { s.write(slog.LevelDebug, msg, tags) }
func (s slogLogger) Info(msg string, tags ...tag.Tag)  { s.write(slog.LevelInfo, msg, tags) }
func (s slogLogger) Warn(msg string, tags ...tag.Tag)  { s.write(slog.LevelWarn, msg, tags) }
func (s slogLogger) Error(msg string, tags ...tag.Tag) { s.write(slog.LevelError, msg, tags) }

// The server's panics and fatals are logged as errors: they must not take
// the Engine down.
func (s slogLogger) DPanic(msg string, tags ...tag.Tag) { s.write(slog.LevelError, msg, tags) }
func (s slogLogger) Panic(msg string, tags ...tag.Tag)  { s.write(slog.LevelError, msg, tags) }
func (s slogLogger) Fatal(msg string, tags ...tag.Tag)  { s.write(slog.LevelError, msg, tags) }

func (s slogLogger) SLog() *slog.Logger { return s.log }

func (s slogLogger) write(level slog.Level, msg string, tags []tag.Tag) {
	if level < s.level || !s.log.Enabled(context.Background(), level) {
		return
	}
	attrs := make([]slog.Attr, len(tags))
	for i, t := range tags {
		attrs[i] = slog.Any(t.Key(), t.Value())
	}
	s.log.LogAttrs(context.Background(), level, msg, attrs...)
}
