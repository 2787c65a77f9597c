package api

import (
	"context"
	"net/http"
	"strings"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/cairn-rmm/cairn/internal/events"
	"github.com/cairn-rmm/cairn/internal/serveradmin"
	"github.com/cairn-rmm/cairn/workflows"
)

// ServerAdminArea are the read-only server administration routes of
// issue 26 (SPEC "Server administration", "Health and gateway").
type ServerAdminArea struct {
	// Started is when this process started.
	Started time.Time
	// LogDir holds the processes' JSON log files ("" when none are
	// written).
	LogDir string
	// Actions queues the service actions (workflowclient.ServiceActions).
	Actions ServiceActionRunner
	// Supervisor names what restarts this process ("" for none);
	// RestartEngine stops the process gracefully (nil: it cannot).
	Supervisor    string
	RestartEngine func()
}

type serverAdminAPI struct {
	*Server
	ServerAdminArea
}

func (d ServerAdminArea) routes(s *Server) []Route {
	a := &serverAdminAPI{Server: s, ServerAdminArea: d}
	return append(append(append(a.logRoutes(), a.serviceRoutes()...), a.internalKeyRoutes()...), []Route{
		{"GET", "/api/server/time", AuthAdmin, getAction(s, func(*http.Request) (serveradmin.Clock, error) {
			// The machine's wall clock, whatever clock the API is given.
			return serveradmin.ClockAt(time.Now(), time.Local), nil
		}), "Get the server's clock"},
		{"GET", "/api/server/timezones", AuthAdmin, getAction(s, func(*http.Request) (timezonesJSON, error) {
			now := time.Now()
			return timezonesJSON{Current: time.Local.String(), Changeable: false,
				Timezones: serveradmin.Timezones(serveradmin.RootFS(), serveradmin.ZoneTables, now, time.Local)}, nil
		}), "List the time zones the server knows"},
		{"GET", "/api/system/go-backend/status", AuthToken, getAction(s, a.backendStatus), "Get the Engine's runtime status"},
		{"GET", "/api/server/overview", AuthAdmin, getAction(s, a.overview), "Get the server overview"},
	}...)
}

type timezonesJSON struct {
	// Current is the server's own zone; Changeable is always false (SPEC:
	// no time zone change endpoint exists).
	Current    string             `json:"current"`
	Changeable bool               `json:"changeable"`
	Timezones  []serveradmin.Zone `json:"timezones"`
}

type backendStatusJSON struct {
	Status         string            `json:"status"`
	Build          serveradmin.Build `json:"build"`
	ReplicaID      string            `json:"replica_id"`
	StartedAt      time.Time         `json:"started_at"`
	UptimeSeconds  int64             `json:"uptime_seconds"`
	CipherUnlocked bool              `json:"cipher_unlocked"`
}

func (s *serverAdminAPI) backendStatus(*http.Request) (backendStatusJSON, error) {
	replica := ""
	if s.Presence != nil {
		replica = s.Presence.ReplicaID
	}
	return backendStatusJSON{Status: "ok", Build: serveradmin.BuildInfo(), ReplicaID: replica, StartedAt: s.Started.UTC(),
		UptimeSeconds: int64(time.Since(s.Started).Seconds()), CipherUnlocked: s.Cipher.Unlocked()}, nil
}

type adminServiceJSON struct {
	Key     string `json:"key"`
	Name    string `json:"name"`
	State   string `json:"state" openapi:"enum=running|starting|stopped|failed|unreachable"`
	Version string `json:"version"`
	Detail  string `json:"detail,omitempty"`
}

type hostRuntimeJSON struct {
	// WebUITrafficOwner is who serves the console: the Engine itself.
	WebUITrafficOwner string `json:"webui_traffic_owner"`
	WebUIUpstream     string `json:"webui_upstream"`
}

// overviewTunnelJSON is the WireGuard tunnel service as the overview
// shows it (the whole picture is GET /api/tunnel/status).
type overviewTunnelJSON struct {
	// Status is running (a replica holds the Engine's WireGuard under a
	// live lease), stopped (its lease lapsed) or idle (no tunnel asked for
	// yet, so no replica has taken the key and port).
	Status        string `json:"status"`
	Owner         string `json:"owner,omitempty"`
	ActiveTunnels int    `json:"active_tunnels"`
}

type edgeLocalCAJSON struct {
	Fingerprint string `json:"fingerprint"`
}

type edgeCertificateJSON struct {
	Profile         string           `json:"profile"`
	CertificateMode string           `json:"certificate_mode"`
	ExpiresAt       time.Time        `json:"expires_at"`
	Severity        string           `json:"severity" openapi:"enum=ok|warning|critical"`
	Domains         []string         `json:"domains"`
	Source          string           `json:"source"`
	Fingerprint     string           `json:"fingerprint"`
	LocalCA         *edgeLocalCAJSON `json:"local_ca"`
}

type overviewJSON struct {
	Services    []adminServiceJSON   `json:"services"`
	HostRuntime hostRuntimeJSON      `json:"host_runtime"`
	Tunnel      overviewTunnelJSON   `json:"tunnel"`
	Certificate *edgeCertificateJSON `json:"certificate"`
	Presence    events.Snapshot      `json:"presence"`
	Build       serveradmin.Build    `json:"build"`
}

// overview is SPEC's dashboard snapshot. Each dependency is asked with a
// short deadline: an unreachable one is a state, not an error.
func (s *serverAdminAPI) overview(r *http.Request) (overviewJSON, error) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	build := serveradmin.BuildInfo()
	out := overviewJSON{Build: build, Services: []adminServiceJSON{{Key: "engine", Name: "Engine", State: "running", Version: build.Version,
		Detail: "replica " + s.Presence.ReplicaID}},
		HostRuntime: hostRuntimeJSON{WebUITrafficOwner: "engine", WebUIUpstream: s.PublicURL},
		Tunnel:      overviewTunnelJSON{Status: "idle"}}
	if owner, err := s.Store.WireguardOwnerGet(ctx); err == nil {
		out.Tunnel.Owner, out.Tunnel.Status = owner.Replica, "stopped"
		if owner.Live {
			out.Tunnel.Status = "running"
		}
	}
	if active, err := s.Store.TunnelListActive(ctx); err == nil {
		out.Tunnel.ActiveTunnels = len(active)
	}
	pg := adminServiceJSON{Key: "postgresql", Name: "PostgreSQL", State: "running"}
	if v, err := s.Store.Queries.ServerPostgresVersion(ctx); err != nil {
		pg.State, pg.Detail = "unreachable", "the database did not answer"
	} else {
		pg.Version = v
	}
	tp := adminServiceJSON{Key: "temporal", Name: "Temporal", State: "running"}
	if s.Temporal == nil {
		tp.State = "unreachable"
	} else if _, err := s.Temporal.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		tp.State, tp.Detail = "unreachable", "the Temporal frontend did not answer"
	}
	out.Services = append(out.Services, pg, tp)
	if s.Workers != nil {
		for _, st := range s.Workers.Statuses() {
			name := "Engine worker"
			if slug, ok := strings.CutPrefix(st.TaskQueue, workflows.SiteTaskQueue("")); ok {
				name = "Site worker " + slug
			}
			out.Services = append(out.Services, adminServiceJSON{Key: "worker:" + st.TaskQueue, Name: name, State: st.State,
				Version: build.Version, Detail: st.Error})
		}
	}
	if s.TLS != nil {
		info := s.TLS.Info()
		c := &edgeCertificateJSON{Profile: string(info.Mode), CertificateMode: string(info.Mode), ExpiresAt: info.NotAfter,
			Severity: serveradmin.CertificateSeverity(s.Now(), info.NotAfter), Domains: append(append([]string{}, info.DNSNames...), info.IPAddresses...),
			Source: "provided certificate files", Fingerprint: info.Fingerprint}
		if info.CAFingerprint != "" {
			c.Source, c.LocalCA = "the Engine's local CA", &edgeLocalCAJSON{Fingerprint: info.CAFingerprint}
		}
		out.Certificate = c
	}
	p, err := s.Presence.Snapshot(ctx)
	if err != nil {
		return overviewJSON{}, err
	}
	if p.Operators == nil {
		p.Operators = []events.OperatorPresence{}
	}
	out.Presence = p
	return out, nil
}
