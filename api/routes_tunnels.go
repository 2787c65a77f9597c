package api

import (
	"context"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
	"github.com/cairn-rmm/cairn/internal/gateway"
	"github.com/cairn-rmm/cairn/internal/tunnels"
	"github.com/cairn-rmm/cairn/workflowclient"
	"github.com/cairn-rmm/cairn/workflows"
)

// TunnelsArea are the managed WireGuard tunnel's routes (SPEC "Remote
// desktop, shell, tunnel", agent behaviour 9; docs/api.md "Tunnel").
type TunnelsArea struct {
	Tunnels *tunnels.Service
	// Server reaches the tunnels (probes go through it): this replica's
	// own end, or a gateway process's client (nil: neither).
	Server  tunnels.Reach
	Starter workflowclient.TunnelStarter
}

type tunnelsAPI struct {
	*Server
	TunnelsArea
}

// Probe bounds.
const (
	tunnelProbeWait = 5 * time.Second
)

func (d TunnelsArea) routes(s *Server) []Route {
	a := &tunnelsAPI{Server: s, TunnelsArea: d}
	guid := queryString("guid", "the device's GUID")
	guid.Required = true
	startErrors := []string{cairn.ECodeNotFound, devicetrust.ECodeDeviceQuarantined, devicetrust.ECodeDeviceRevoked,
		cairn.ECodeAgentTooOld, ECodeTemporalUnavailable, cairn.ECodeUnavailable}
	return []Route{
		{"POST", proto.PathVPNEnsure, AuthDevice, jsonAction(s, http.StatusOK, false, a.ensure).
			Summary("The device's persistent tunnel, made on first call: its address, the Engine's key and endpoint, and fallback_endpoint when the Engine has one. The agent's private key never leaves it.").
			Errors(tunnels.ECodeAddressesExhausted, tunnels.ECodeUnavailable), "Agent: ensure the VPN tunnel"},
		{"POST", proto.PathVPNReady, AuthDevice, jsonAction(s, http.StatusOK, false, a.ready).
			Summary("Report the tunnel's readiness (on Linux a fresh peer handshake) and the system:vpn_tunnel role row.").
			Errors(tunnels.ECodeNoTunnel, cairn.ECodeNotFound), "Agent: report VPN tunnel readiness"},
		{"GET", "/api/tunnel/status", AuthToken, getAction(s, a.status).Query(queryString("guid", "a device's GUID; without it, the Engine's side")).
			Errors(cairn.ECodeNotFound, tunnels.ECodeNoTunnel), "Get tunnel status"},
		{"GET", "/api/tunnel/connect/status", AuthToken, getAction(s, a.connectStatus).
			Query(guid, queryInteger("port", "a TCP port on the device's tunnel address to probe through the tunnel (1-65535)")).
			Summary("The device's tunnel, its latest establishment (the TunnelEstablish workflow's state) and, with port, a TCP probe through the tunnel that reads the service's first bytes (at most 12).").
			Errors(cairn.ECodeNotFound, tunnels.ECodeNoTunnel, tunnels.ECodeUnavailable, tunnels.ECodeUnreachable, ECodeTemporalUnavailable, cairn.ECodeUnavailable), "Get a tunnel's connection status"},
		{"GET", "/api/tunnel/active", AuthToken, getAction(s, a.active), "List active tunnels"},
		{"POST", "/api/server/wireguard/recover", AuthAdmin, jsonAction(s, http.StatusAccepted, true, a.recover).
			Summary("Reconcile the Engine's WireGuard and re-establish tunnels: the device's (guid), or every active tunnel's. Each runs the TunnelEstablish workflow on the device's site queue.").
			Errors(startErrors...), "Recover WireGuard tunnels"},
		{"POST", gateway.PathPrepare, AuthInternal, jsonAction(s, http.StatusOK, false, a.gatewayPrepare).
			Summary("A gateway process (`cairn gateway`) takes the Engine's WireGuard: the owner lease for its Internal key, and the WireGuard private key sealed to the X25519 public key it sent (NaCl anonymous box; never in clear on the wire), with the tunnel network, port and MTU. Refused while a serve replica or another gateway holds a live lease.").
			Errors(tunnels.ECodeUnavailable, cairn.ECodeUnavailable), "Gateway: prepare the Engine's WireGuard"},
		{"POST", gateway.PathSessions, AuthInternal, jsonAction(s, http.StatusOK, false, a.gatewaySessions).
			Summary("A gateway process renews its lease, reports the peer handshakes it saw (tunnel readiness reads them) and gets the peers to serve: every trusted device's tunnel with its address.").
			Errors(tunnels.ECodeUnavailable, cairn.ECodeUnavailable), "Gateway: renew the lease and list tunnel peers"},
	}
}

type gatewayPrepareReq struct {
	gateway.PrepareRequest
}

func (q *gatewayPrepareReq) validate() error {
	var v cairn.Validation
	if q.PublicKey == "" || len(q.PublicKey) > 64 {
		v.Add("public_key", "must be a base64 X25519 public key")
	}
	if len(q.Name) > 200 {
		v.Add("name", "must be at most 200 characters")
	}
	if len(q.Version) > 100 {
		v.Add("version", "must be at most 100 characters")
	}
	return v.Err()
}

func (a *tunnelsAPI) gatewayPrepare(r *http.Request, req gatewayPrepareReq) (tunnels.GatewayConfig, error) {
	if e := auditFrom(r); e != nil {
		e.Target = "gateway=" + req.Name + " version=" + req.Version
	}
	return a.Tunnels.PrepareGateway(r.Context(), internalCaller(r.Context()), req.PublicKey)
}

type gatewaySessionsReq struct {
	gateway.SessionsRequest
}

func (q *gatewaySessionsReq) validate() error {
	if len(q.Handshakes) > 100000 {
		return cairn.Invalid("handshakes", "must be at most 100000")
	}
	return nil
}

func (a *tunnelsAPI) gatewaySessions(r *http.Request, req gatewaySessionsReq) (gateway.SessionsResponse, error) {
	peers, err := a.Tunnels.GatewaySessions(r.Context(), internalCaller(r.Context()), req.Handshakes)
	return gateway.SessionsResponse{Peers: peers}, err
}

func (a *tunnelsAPI) ensure(r *http.Request, req proto.VPNEnsureRequest) (proto.VPNEnsureResponse, error) {
	return a.Tunnels.Ensure(r.Context(), *deviceFrom(r.Context()), req)
}

// tunnelJSON is a device's tunnel with its role row.
type tunnelJSON struct {
	tunnels.Tunnel
	// Healthy: ready after the last ensure, with a handshake within the
	// last three minutes.
	Healthy bool `json:"healthy"`
	// Role is the agent's system:vpn_tunnel row (null until reported).
	Role *roleJSON `json:"role"`
}

func (a *tunnelsAPI) tunnelJSON(ctx context.Context, t tunnels.Tunnel) (tunnelJSON, error) {
	out := tunnelJSON{Tunnel: t, Healthy: t.Ready && tunnels.Fresh(t, time.Now())}
	role, err := a.Devices.RoleOf(ctx, string(t.DeviceGUID), proto.RoleKeyVPNTunnel)
	if err != nil || role == nil {
		return out, err
	}
	rj := newRoleJSON(*role)
	out.Role = &rj
	return out, nil
}

func (a *tunnelsAPI) ready(r *http.Request, req proto.VPNReadyRequest) (tunnelJSON, error) {
	id := *deviceFrom(r.Context())
	if req.Role != nil && req.Role.Key != proto.RoleKeyVPNTunnel {
		return tunnelJSON{}, cairn.Invalid("role.key", "must be "+proto.RoleKeyVPNTunnel)
	}
	if req.Role != nil {
		// Validated before anything is stored: no half-applied report.
		if err := devices.CheckRole("role", *req.Role); err != nil {
			return tunnelJSON{}, err
		}
	}
	t, err := a.Tunnels.Ready(r.Context(), id, req)
	if err != nil {
		return tunnelJSON{}, err
	}
	if req.Role != nil {
		if err := a.Devices.ReportRole(r.Context(), string(id.GUID), "role", *req.Role); err != nil {
			return tunnelJSON{}, err
		}
	}
	return a.tunnelJSON(r.Context(), t)
}

// engineTunnelJSON is the Engine's side.
type engineTunnelJSON struct {
	EngineIP         string `json:"engine_ip"`
	Network          string `json:"network"`
	Endpoint         string `json:"endpoint"`
	FallbackEndpoint string `json:"fallback_endpoint"`
	Port             int    `json:"port"`
	PublicKey        string `json:"public_key"`
	// Owner is the replica that holds the Engine's key and port, and
	// OwnerLive whether its lease is current; ThisReplica whether it is
	// the one answering.
	Owner         string `json:"owner"`
	OwnerLive     bool   `json:"owner_live"`
	ThisReplica   bool   `json:"this_replica"`
	ActiveTunnels int    `json:"active_tunnels"`
	// Peers is how many peers this replica's WireGuard serves (0 on a
	// replica that is not the owner).
	Peers int `json:"peers"`
}

type tunnelStatusJSON struct {
	Engine engineTunnelJSON `json:"engine"`
	Tunnel *tunnelJSON      `json:"tunnel"`
}

func (a *tunnelsAPI) status(r *http.Request) (tunnelStatusJSON, error) {
	ctx := r.Context()
	var out tunnelStatusJSON
	cfg := a.Tunnels.Config()
	out.Engine = engineTunnelJSON{EngineIP: a.Tunnels.EngineIP().String(), Network: cfg.Network.String(), Endpoint: cfg.Endpoint,
		Port: cfg.Port}
	if srv, ok := a.TunnelsArea.Server.(*tunnels.Server); ok {
		out.Engine.ThisReplica, out.Engine.Peers = srv.Owner(), len(srv.Peers())
	}
	if cfg.FallbackIP.IsValid() {
		out.Engine.FallbackEndpoint = cfg.FallbackIP.String()
	}
	owner, err := a.Store.WireguardOwnerGet(ctx)
	switch {
	case err == nil:
		out.Engine.Owner, out.Engine.OwnerLive = owner.Replica, owner.Live
	case !db.IsNoRows(err):
		return out, err
	}
	if row, err := a.Store.WireguardServerGet(ctx); err == nil {
		out.Engine.PublicKey = row.PublicKey
	} else if !db.IsNoRows(err) {
		return out, err
	}
	scope := principal(ctx).SiteScope()
	active, err := a.Tunnels.Active(ctx, scope)
	if err != nil {
		return out, err
	}
	out.Engine.ActiveTunnels = len(active)
	guid := cairn.DeviceGUID(r.URL.Query().Get("guid"))
	if guid == "" {
		return out, nil
	}
	t, err := a.deviceTunnel(ctx, scope, guid)
	if err != nil {
		return out, err
	}
	out.Tunnel = &t
	return out, nil
}

// deviceTunnel is an in-scope device's tunnel.
func (a *tunnelsAPI) deviceTunnel(ctx context.Context, scope cairn.SiteScope, guid cairn.DeviceGUID) (tunnelJSON, error) {
	if _, err := a.Devices.Get(ctx, scope, guid); err != nil {
		return tunnelJSON{}, err
	}
	t, err := a.Tunnels.Get(ctx, guid)
	if err != nil {
		return tunnelJSON{}, err
	}
	return a.tunnelJSON(ctx, t)
}

type connectStatusJSON struct {
	GUID string `json:"guid"`
	// Tunnel is null while the device has none.
	Tunnel *tunnelJSON `json:"tunnel"`
	// Establishment is the latest TunnelEstablish's state (null: never).
	Establishment *workflows.TunnelStatus `json:"establishment"`
	// Probe is the TCP probe's outcome when port was given.
	Probe *tunnels.Probe `json:"probe"`
}

func (a *tunnelsAPI) connectStatus(r *http.Request) (connectStatusJSON, error) {
	ctx := r.Context()
	guid := r.URL.Query().Get("guid")
	if guid == "" {
		return connectStatusJSON{}, cairn.Invalid("guid", "is required")
	}
	port, err := queryInt(r, "port", 0, 1, 65535)
	if err != nil {
		return connectStatusJSON{}, err
	}
	scope := principal(ctx).SiteScope()
	if _, err := a.Devices.Get(ctx, scope, cairn.DeviceGUID(guid)); err != nil {
		return connectStatusJSON{}, err
	}
	out := connectStatusJSON{GUID: guid}
	if t, err := a.deviceTunnel(ctx, scope, cairn.DeviceGUID(guid)); err == nil {
		out.Tunnel = &t
	} else if !cairn.IsCode(err, tunnels.ECodeNoTunnel) {
		return out, err
	}
	if a.Starter.Client != nil {
		st, err := a.Starter.State(ctx, guid)
		if err != nil {
			return out, err
		}
		out.Establishment = st
	}
	if port > 0 {
		if out.Tunnel == nil {
			return out, cairn.Errorf(tunnels.ECodeNoTunnel, "the device has no tunnel to probe through")
		}
		if a.TunnelsArea.Server == nil {
			return out, cairn.Errorf(tunnels.ECodeUnavailable, "this process serves no tunnels")
		}
		p, err := a.Tunnels.ProbeThrough(ctx, a.TunnelsArea.Server, cairn.DeviceGUID(guid), port, tunnelProbeWait)
		if err != nil {
			return out, err
		}
		out.Probe = &p
	}
	return out, nil
}

type activeTunnelsJSON struct {
	Tunnels []tunnelJSON `json:"tunnels"`
}

func (a *tunnelsAPI) active(r *http.Request) (activeTunnelsJSON, error) {
	list, err := a.Tunnels.Active(r.Context(), principal(r.Context()).SiteScope())
	if err != nil {
		return activeTunnelsJSON{}, err
	}
	out := activeTunnelsJSON{Tunnels: make([]tunnelJSON, 0, len(list))}
	for _, t := range list {
		j, err := a.tunnelJSON(r.Context(), t)
		if err != nil {
			return out, err
		}
		out.Tunnels = append(out.Tunnels, j)
	}
	return out, nil
}

// recoverRequest: one device's tunnel, or (no guid) every active one.
type recoverRequest struct {
	GUID string `json:"guid,omitempty"`
}

type recoverJSON struct {
	// Queued are the establishments started (or joined), by workflow ID.
	Queued []string `json:"queued"`
}

func (a *tunnelsAPI) recover(r *http.Request, req recoverRequest) (recoverJSON, error) {
	ctx := r.Context()
	p := principal(ctx)
	out := recoverJSON{Queued: []string{}}
	guids := []string{req.GUID}
	if req.GUID == "" {
		active, err := a.Tunnels.Active(ctx, p.SiteScope())
		if err != nil {
			return out, err
		}
		guids = guids[:0]
		for _, t := range active {
			guids = append(guids, string(t.DeviceGUID))
		}
	}
	for _, guid := range guids {
		target, err := a.Devices.OperationTargetByGUID(ctx, p.SiteScope(), cairn.DeviceGUID(guid))
		if err == nil {
			err = target.Require(proto.CapTunnel)
		}
		if err != nil {
			if req.GUID == "" {
				continue // moved, quarantined or too old meanwhile: nothing to recover
			}
			return out, err
		}
		id, err := a.Starter.Start(ctx, workflows.TunnelInput{OperationID: uuid.NewString(), Target: target, Actor: p.Username,
			Reason: "recover"})
		if err != nil {
			return out, err
		}
		out.Queued = append(out.Queued, id)
	}
	return out, nil
}
