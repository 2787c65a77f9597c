// Package devices is the Engine's device domain: what agents report
// through their callbacks (heartbeat, status, details), what operators
// read and edit (device lists, details, descriptions, site assignment),
// derived connectivity, and the device activity history.
package devices

import (
	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/metrics"

	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/events"
)

// HeartbeatIntervalSeconds is the cadence the Engine asks agents for.
const HeartbeatIntervalSeconds = 20

// Publisher sends operator events; *events.Bus is one.
type Publisher interface {
	Publish(ctx context.Context, e events.Event) error
}

// Config tunes the service; zero values take the defaults.
type Config struct {
	// OnlineWindow is how long after its last heartbeat a device still
	// counts as online (DefaultOnlineWindow).
	OnlineWindow time.Duration
	// FlushInterval is how often coalesced heartbeats are written (1 s).
	FlushInterval time.Duration
	// FlushSize queues this many devices' heartbeats before an early
	// flush (1000).
	FlushSize int
	Now       func() time.Time
	Log       *slog.Logger
	// Metrics counts heartbeats and operations (nil: not counted).
	Metrics *metrics.Metrics
}

// Service is the device domain.
type Service struct {
	store *db.Store
	bus   Publisher
	cfg   Config
	beats *heartbeats
}

// NewService returns the service. Call Run to flush heartbeats, and Flush
// at shutdown.
func NewService(store *db.Store, bus Publisher, cfg Config) *Service {
	if cfg.OnlineWindow <= 0 {
		cfg.OnlineWindow = DefaultOnlineWindow
	}
	if cfg.FlushInterval <= 0 {
		cfg.FlushInterval = time.Second
	}
	if cfg.FlushSize <= 0 {
		cfg.FlushSize = 1000
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Service{store: store, bus: bus, cfg: cfg, beats: newHeartbeats()}
}

// OnlineWindow is the configured online window.
func (s *Service) OnlineWindow() time.Duration { return s.cfg.OnlineWindow }

func (s *Service) now() time.Time { return s.cfg.Now().UTC() }

// Device is a device as operators see it.
type Device struct {
	GUID            cairn.DeviceGUID
	AgentID         string
	Hostname        string
	Description     string
	SiteID          cairn.SiteID
	SiteName        string
	SiteSlug        string
	LastSeen        *time.Time
	AgentSocket     bool
	Connectivity    string
	OperatingSystem string
	AgentVersion    string
	// AgentBuildID is the build the agent last reported ('' before).
	AgentBuildID   string
	TrustState     string
	BootID         string
	HelperContexts []string
	// Capabilities are what the agent can be asked to do.
	Capabilities AgentCapabilities
	// Metrics are the last heartbeat's, nil before the first.
	Metrics    *proto.Metrics
	EnrolledAt time.Time
	// ClonedFrom is the device this one was copied from (a cloned agent
	// that enrolled with its clone ticket), nil otherwise.
	ClonedFrom *cairn.DeviceGUID
}

func (s *Service) device(d db.Device, siteName, siteSlug string, now time.Time) Device {
	out := Device{
		GUID: d.Guid, AgentID: d.AgentID, Hostname: d.Hostname, Description: d.Description,
		SiteID: d.SiteID, SiteName: siteName, SiteSlug: siteSlug, LastSeen: d.LastSeen,
		AgentSocket:     AgentSocket(d.SocketReplica, d.SocketSeenAt, now),
		Connectivity:    Status(d.LastSeen, d.SocketReplica, d.SocketSeenAt, now, s.cfg.OnlineWindow),
		OperatingSystem: d.OperatingSystem, AgentVersion: d.AgentVersion, AgentBuildID: d.AgentBuildID, TrustState: d.TrustState,
		BootID: d.BootID, HelperContexts: d.HelperContexts, EnrolledAt: d.EnrolledAt,
		Capabilities: CapabilitiesFrom(d.Capabilities), ClonedFrom: d.ClonedFrom,
	}
	if out.HelperContexts == nil {
		out.HelperContexts = []string{}
	}
	var m proto.Metrics
	// metrics is '{}' until the first heartbeat: no metrics rather than zeros.
	if len(d.Metrics) > 2 && json.Unmarshal(d.Metrics, &m) == nil {
		if m.LoggedInUsers == nil {
			m.LoggedInUsers = []string{}
		}
		out.Metrics = &m
	}
	return out
}

// publish sends an operator event limited to the device's site. The change
// it reports is committed already, so a failure is logged, not returned:
// the console also polls.
func (s *Service) publish(ctx context.Context, typ string, siteID cairn.SiteID, data any) {
	b, err := json.Marshal(data)
	if err == nil {
		err = s.bus.Publish(ctx, events.Event{ID: uuid.NewString(), Type: typ, SiteID: siteID, Data: b})
	}
	if err != nil {
		s.cfg.Log.WarnContext(ctx, "publish device event", "type", typ, "err", err)
	}
}

// deviceEvent is the payload of the device events.
type deviceEvent struct {
	GUID     cairn.DeviceGUID `json:"guid"`
	Hostname string           `json:"hostname"`
	SiteID   cairn.SiteID     `json:"site_id"`
	Phase    string           `json:"phase,omitempty"`
	Parts    []string         `json:"parts,omitempty"`
}
