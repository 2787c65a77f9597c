// Package agentgateway is the site-worker runtime that terminates agents'
// realtime WebSockets. A Hub per Engine process accepts the sockets of the
// sites whose workers it runs, acknowledges connect_agent, records in
// PostgreSQL which replica holds each socket (so every replica can route a
// message to any agent), keeps sockets alive with pings, and delivers
// Engine-to-agent messages: locally, or through a NOTIFY to the replica
// that holds the socket.
package agentgateway

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/events"
)

// Liveness. The agent drops a socket silent for 60 s (SPEC "Limits"), so
// the worker pings well inside that, and drops a socket silent as long.
// A replica refreshes socket_seen_at of all its sockets every
// SeenRefreshInterval; a socket counts as connected (agent_socket) while
// socket_replica is set and socket_seen_at is within SocketFreshFor, so
// the sockets of a replica that died stop counting within 90 s.
const (
	PingInterval        = 20 * time.Second
	IdleTimeout         = 60 * time.Second
	SeenRefreshInterval = 30 * time.Second
	SocketFreshFor      = 90 * time.Second
	ConnectTimeout      = 10 * time.Second
	WriteTimeout        = 10 * time.Second
	// MaxMessageBytes bounds one message from an agent: a reply carrying
	// MaxReplyBytes of JSON fits.
	MaxMessageBytes = 4 << 20
	// HeartbeatInterval is how often a holder heartbeats the activities
	// waiting on its sockets; the activities' heartbeat timeout is a
	// multiple of it.
	HeartbeatInterval = 10 * time.Second
)

// SiteRunner says whether this process runs a site's worker;
// *workers.Manager implements it.
type SiteRunner interface {
	Runs(slug string) bool
}

// Options tune a Hub; zero values take the package constants. Tests
// shorten the intervals.
type Options struct {
	ConnectTimeout  time.Duration
	PingInterval    time.Duration
	IdleTimeout     time.Duration
	SeenRefresh     time.Duration
	WriteTimeout    time.Duration
	MaxMessageBytes int64
	Log             *slog.Logger
	HeartbeatEvery  time.Duration
	// Completer completes command-path activities (nil: this process
	// takes sockets but runs no operations, as in some tests).
	Completer Completer
	// Endpoint is the http(s) address agents reach this process's
	// sockets at; when set it is recorded for the realtime route
	// (standalone site workers).
	Endpoint string
	// Now is the clock access-token expiries are read on (the Engine's,
	// which signs them); time.Now when nil.
	Now func() time.Time
	// QueueOf names a site's worker (its task queue) in routes and acks;
	// the Engine passes workflows.SiteTaskQueue (this package sits below
	// workflows, so it cannot import it).
	QueueOf func(slug string) string
	// Codes say which failure codes an agent may answer an operation with
	// (cairn.Code.Agent); any other becomes op_failed, so a device cannot
	// answer an operator with, say, "unauthorized". Nil: none pass.
	Codes *cairn.CodeBook
}

func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.ConnectTimeout, ConnectTimeout)
	def(&o.PingInterval, PingInterval)
	def(&o.IdleTimeout, IdleTimeout)
	def(&o.SeenRefresh, SeenRefreshInterval)
	def(&o.WriteTimeout, WriteTimeout)
	def(&o.HeartbeatEvery, HeartbeatInterval)
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = MaxMessageBytes
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.QueueOf == nil {
		o.QueueOf = func(slug string) string { return "site:" + slug }
	}
	return o
}

// Hub holds this process's agent sockets.
type Hub struct {
	replica string
	store   *db.Store
	bus     *events.Bus
	sites   SiteRunner
	opts    Options
	log     *slog.Logger

	inbox      <-chan []byte
	stopListen func()
	// resync receives after the bus's listener (re)connects.
	resync      <-chan struct{}
	stopRunning sync.Once
	beating     atomic.Bool

	mu      sync.Mutex
	conns   map[string]*conn // device GUID -> its socket on this replica
	stopped bool

	// stripes serialize recording and clearing a device's socket, so the
	// cleanup of a replaced socket cannot erase its successor's record.
	stripes [64]sync.Mutex

	// calls are the handlers of agent calls (calls.go).
	calls callTable
}

// New returns the hub of replica (an ID unique among live Engine
// processes). It subscribes to cross-replica deliveries at once, so none
// sent after New returns is missed once bus is listening; Run handles them.
func New(replica string, store *db.Store, bus *events.Bus, sites SiteRunner, opts Options) *Hub {
	opts = opts.withDefaults()
	h := &Hub{replica: replica, store: store, bus: bus, sites: sites, opts: opts,
		log: opts.Log.With("component", "agentgateway", "replica", replica), conns: map[string]*conn{}}
	h.inbox, h.stopListen = bus.Listen(events.ChannelAgents)
	h.resync = bus.OnControl(controlResync)
	return h
}

// Replica is the ID this hub records in devices.socket_replica.
func (h *Hub) Replica() string { return h.replica }

// Run handles deliveries from other replicas, refreshes socket_seen_at and
// sweeps (sweep.go) after each refresh and each listener reconnect, until
// ctx ends; then it closes every socket (going away) and waits up to 10 s
// for their records to be cleared. A stopped hub refuses new sockets.
func (h *Hub) Run(ctx context.Context) {
	kick := make(chan struct{}, 1)
	swept := make(chan struct{})
	go func() { defer close(swept); h.sweeper(ctx, kick) }()
	sweep := func() {
		select {
		case kick <- struct{}{}:
		default: // one is due already
		}
	}
	tick := time.NewTicker(h.opts.SeenRefresh)
	defer tick.Stop()
	beat := time.NewTicker(h.opts.HeartbeatEvery)
	defer beat.Stop()
	var endpoint <-chan time.Time
	if h.opts.Endpoint != "" {
		h.recordEndpoint(ctx)
		t := time.NewTicker(EndpointRefresh)
		defer t.Stop()
		endpoint = t.C
		defer h.forgetEndpoint()
	}
	inbox := h.inbox
	for {
		select {
		case <-ctx.Done():
			h.shutdown()
			<-swept
			return
		case <-h.resync:
			sweep()
		case payload, ok := <-inbox:
			if !ok {
				inbox = nil
				continue
			}
			h.handleDelivery(payload)
		case <-tick.C:
			if _, err := h.refreshSeen(ctx); err != nil && ctx.Err() == nil {
				h.log.Error("refresh agent sockets", "err", err)
			}
			sweep()
		case <-endpoint:
			h.recordEndpoint(ctx)
		case <-beat.C:
			// Off the loop (one Temporal call per waiting request), and
			// never two rounds at once.
			if h.beating.CompareAndSwap(false, true) {
				go func() { defer h.beating.Store(false); h.heartbeatPending(ctx) }()
			}
		}
	}
}

func (h *Hub) shutdown() {
	h.stopRunning.Do(h.stopListen)
	h.mu.Lock()
	h.stopped = true
	conns := make([]*conn, 0, len(h.conns))
	for _, c := range h.conns {
		conns = append(conns, c)
	}
	h.mu.Unlock()
	for _, c := range conns {
		c.stop(closeGoingAway, "server shutting down")
	}
	deadline := time.After(10 * time.Second)
	for _, c := range conns {
		select {
		case <-c.done:
		case <-deadline:
			h.log.Warn("agent sockets still open at shutdown")
			return
		}
	}
}

// refreshSeen confirms every socket of this hub in one statement.
func (h *Hub) refreshSeen(ctx context.Context) (int64, error) {
	h.mu.Lock()
	guids := make([]string, 0, len(h.conns))
	for guid := range h.conns {
		guids = append(guids, guid)
	}
	h.mu.Unlock()
	if len(guids) == 0 {
		return 0, nil
	}
	return h.store.DeviceSocketTouchMany(ctx, db.DeviceSocketTouchManyParams{Replica: h.replica, Guids: guids})
}

// ConnectedBySite counts the sockets this hub holds, by site slug (the
// connected-agents gauge reads it at each scrape).
func (h *Hub) ConnectedBySite() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]int{}
	for _, c := range h.conns {
		out[c.dev.SiteSlug]++
	}
	return out
}

// local returns this replica's socket of guid, or nil.
func (h *Hub) local(guid cairn.DeviceGUID) *conn {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.conns[string(guid)]
}

func (h *Hub) stripe(guid cairn.DeviceGUID) *sync.Mutex {
	f := fnv.New32a()
	_, _ = f.Write([]byte(guid))
	return &h.stripes[f.Sum32()%uint32(len(h.stripes))]
}

// statusData is agent_status_changed's data for a socket change.
type statusData struct {
	GUID        cairn.DeviceGUID `json:"guid"`
	Hostname    string           `json:"hostname"`
	SiteID      cairn.SiteID     `json:"site_id"`
	AgentSocket bool             `json:"agent_socket"`
}

// publishStatus tells the consoles that may see the device (its site's
// operators and admins) that its socket changed.
func (h *Hub) publishStatus(c *conn, connected bool) {
	data, _ := json.Marshal(statusData{GUID: c.dev.GUID, Hostname: c.hostname, SiteID: cairn.SiteID(c.siteID), AgentSocket: connected})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := h.bus.Publish(ctx, events.Event{ID: uuid.NewString(), Type: events.TypeAgentStatusChanged, SiteID: cairn.SiteID(c.siteID), Data: data})
	if err != nil {
		h.log.Warn("publish agent status", "guid", c.dev.GUID, "err", err)
	}
}
