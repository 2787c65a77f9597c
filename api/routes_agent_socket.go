package api

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
	"github.com/cairn-rmm/cairn/internal/events"
)

// agentSocketRoutes are the realtime route and socket (Device) and the
// trust actions (Admin), which end a device's socket.
func (s *Server) agentSocketRoutes() []Route {
	return []Route{
		{"GET", proto.PathRealtimeRoute, AuthDevice, getAction(s, func(r *http.Request) (proto.Route, error) {
			if s.Sockets == nil {
				return proto.Route{}, cairn.Errorf(cairn.ECodeUnavailable, "this Engine runs no site workers")
			}
			return s.Sockets.Route(*deviceFrom(r.Context()), s.originFor(r)), nil
		})},
		{"GET", proto.PathRealtimeWS, AuthDevice, func(w http.ResponseWriter, r *http.Request) {
			if s.Sockets == nil {
				writeError(w, r, s.Log, cairn.Errorf(cairn.ECodeWrongWorker, "this Engine runs no site workers"))
				return
			}
			s.Sockets.Serve(w, r, *deviceFrom(r.Context()))
		}},
		{"POST", "/api/devices/{guid}/quarantine", AuthAdmin, s.trustAction(devicetrust.ActionQuarantine)},
		{"POST", "/api/devices/{guid}/unquarantine", AuthAdmin, s.trustAction(devicetrust.ActionUnquarantine)},
		{"POST", "/api/devices/{guid}/revoke", AuthAdmin, s.trustAction(devicetrust.ActionRevoke)},
		{"POST", "/api/devices/{guid}/purge", AuthAdmin, s.trustAction(devicetrust.ActionPurge)},
	}
}

// originFor is the Engine origin the agent reached: the agent URL whose
// scheme and host match the request, else the public URL.
func (s *Server) originFor(r *http.Request) *url.URL {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	for _, o := range s.agentOrigins {
		if o.Scheme == scheme && strings.EqualFold(o.Host, r.Host) {
			return o
		}
	}
	for _, o := range s.agentOrigins {
		if o.Scheme == scheme {
			return o
		}
	}
	if len(s.agentOrigins) > 0 {
		return s.agentOrigins[0]
	}
	return &url.URL{Scheme: scheme, Host: r.Host}
}

type trustJSON struct {
	GUID         string `json:"guid"`
	Hostname     string `json:"hostname"`
	SiteID       int64  `json:"site_id"`
	TrustState   string `json:"trust_state"`
	TokenVersion int32  `json:"token_version"`
}

// trustAction applies a trust action, then carries out what the spec's
// trust table says also happens: the socket (and with it every remote
// path) ends for quarantine, revoke and purge, the action is recorded in
// the device's activity, and consoles refresh.
func (s *Server) trustAction(action string) http.HandlerFunc {
	return jsonAction(s, http.StatusOK, true, func(r *http.Request, _ struct{}) (trustJSON, error) {
		ctx, p := r.Context(), principal(r.Context())
		res, err := devicetrust.ApplyTrust(ctx, s.Store, p.SiteScope(), chi.URLParam(r, "guid"), action, p.Username, s.Now())
		if err != nil {
			return trustJSON{}, err
		}
		if action != devicetrust.ActionUnquarantine && s.Sockets != nil {
			if err := s.Sockets.Drop(ctx, res.GUID, "device "+res.TrustState); err != nil {
				s.Log.Warn("drop socket after trust action", "guid", res.GUID, "action", action, "err", err)
			}
		}
		s.recordTrust(r, res, action)
		data := map[string]any{"guid": res.GUID, "hostname": res.Hostname, "site_id": res.SiteID, "trust_state": res.TrustState}
		if err := s.Bus.Publish(ctx, events.Event{ID: uuid.NewString(), Type: events.TypeAgentStatusChanged, SiteID: res.SiteID, Data: mustJSON(data)}); err != nil {
			s.Log.Warn("publish trust change", "err", err)
		}
		return trustJSON{GUID: res.GUID, Hostname: res.Hostname, SiteID: res.SiteID, TrustState: res.TrustState, TokenVersion: res.TokenVersion}, nil
	})
}
