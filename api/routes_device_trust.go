package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
	"github.com/cairn-rmm/cairn/internal/events"
)

// deviceTrustRoutes are the trust actions (Admin; SPEC "Device trust state").
func (s *Server) deviceTrustRoutes() []Route {
	return []Route{
		{"POST", "/api/devices/{guid}/quarantine", AuthAdmin, s.trustAction(devicetrust.ActionQuarantine)},
		{"POST", "/api/devices/{guid}/unquarantine", AuthAdmin, s.trustAction(devicetrust.ActionUnquarantine)},
		{"POST", "/api/devices/{guid}/revoke", AuthAdmin, s.trustAction(devicetrust.ActionRevoke)},
		{"POST", "/api/devices/{guid}/purge", AuthAdmin, s.trustAction(devicetrust.ActionPurge)},
	}
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

// recordTrust adds a trust action to the device's activity history with
// the operator's name (SPEC "Device trust state").
func (s *Server) recordTrust(r *http.Request, res devicetrust.TrustResult, action string) {
	p := principal(r.Context())
	guid := res.GUID
	if res.TrustState == "purged" {
		guid = "" // the device row is gone; history stays by hostname
	}
	s.activity(r.Context(), devices.NewActivity{GUID: guid, Hostname: res.Hostname, SiteID: res.SiteID,
		Kind: "device_" + action, Summary: trustSummary[action] + " by " + p.Username, Actor: p.Username,
		Metadata: map[string]any{"trust_state": res.TrustState, "token_version": res.TokenVersion}})
}

var trustSummary = map[string]string{
	devicetrust.ActionQuarantine:   "Quarantined",
	devicetrust.ActionUnquarantine: "Released from quarantine",
	devicetrust.ActionRevoke:       "Trust revoked",
	devicetrust.ActionPurge:        "Purged",
}
