package api

import (
	"context"
	"net/http"
	"slices"

	"github.com/go-chi/chi/v5"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
	"github.com/cairn-rmm/cairn/workflowclient"
	"github.com/cairn-rmm/cairn/workflows"
)

// DeviceTrustArea are the routes of DeviceTrust, over the services only they use.
type DeviceTrustArea struct {
	// TrustActions starts the follow-up workflow of trust actions (its Client defaults to Temporal, its queue to the engine queue).
	TrustActions workflowclient.TrustStarter
}

type deviceTrustAPI struct {
	*Server
	DeviceTrustArea
}

func (d DeviceTrustArea) routes(s *Server) []Route {
	a := &deviceTrustAPI{Server: s, DeviceTrustArea: d}
	return slices.Concat(a.deviceTrustRoutes())
}

// deviceTrustRoutes are the trust actions (Admin; SPEC "Device trust state").
func (s *deviceTrustAPI) deviceTrustRoutes() []Route {
	return []Route{
		{"POST", "/api/devices/{guid}/quarantine", AuthAdmin, s.trustAction(devicetrust.ActionQuarantine).Errors(cairn.ECodeNotFound, cairn.ECodeConflict), "Quarantine a device"},
		{"POST", "/api/devices/{guid}/unquarantine", AuthAdmin, s.trustAction(devicetrust.ActionUnquarantine).Errors(cairn.ECodeNotFound, cairn.ECodeConflict), "Lift a device's quarantine"},
		{"POST", "/api/devices/{guid}/revoke", AuthAdmin, s.trustAction(devicetrust.ActionRevoke).Errors(cairn.ECodeNotFound, cairn.ECodeConflict), "Revoke a device"},
		{"POST", "/api/devices/{guid}/purge", AuthAdmin, s.trustAction(devicetrust.ActionPurge).Errors(cairn.ECodeNotFound, cairn.ECodeConflict), "Purge a device"},
	}
}

type trustJSON struct {
	GUID         cairn.DeviceGUID `json:"guid"`
	Hostname     string           `json:"hostname"`
	SiteID       cairn.SiteID     `json:"site_id"`
	TrustState   string           `json:"trust_state"`
	TokenVersion int32            `json:"token_version"`
}

// trustAction applies a trust action and answers with the device's new
// state; what the spec's trust table says also happens (the socket, and
// with it every remote path, ends for quarantine, revoke and purge; the
// action is recorded in the device's activity; consoles refresh) is the
// DeviceTrustAction workflow's, so a replica restart cannot lose it.
func (s *deviceTrustAPI) trustAction(action string) Endpoint {
	return jsonAction(s.Server, http.StatusOK, true, func(r *http.Request, _ struct{}) (trustJSON, error) {
		ctx, p := r.Context(), principal(r.Context())
		res, err := devicetrust.ApplyTrust(ctx, s.Store, p.SiteScope(), chi.URLParam(r, "guid"), action, p.Username, s.Now())
		if err != nil {
			return trustJSON{}, err
		}
		s.startTrustAction(context.WithoutCancel(ctx), res, action, p.Username)
		s.transfersEnded(ctx, res.EndedTransfers, action == devicetrust.ActionPurge)
		return trustJSON{GUID: res.GUID, Hostname: res.Hostname, SiteID: res.SiteID, TrustState: res.TrustState, TokenVersion: res.TokenVersion}, nil
	})
}

// startTrustAction starts the action's follow-up workflow. The state
// change is committed whatever happens here, so a failure to start is
// logged, not answered: the new token version already shuts the device out.
func (s *deviceTrustAPI) startTrustAction(ctx context.Context, res devicetrust.TrustResult, action, actor string) {
	in := workflows.TrustActionInput{GUID: res.GUID, Hostname: res.Hostname, SiteID: res.SiteID, Action: action,
		TrustState: res.TrustState, TokenVersion: res.TokenVersion, Actor: actor}
	if site, err := s.Sites.Get(ctx, res.SiteID); err == nil {
		in.SiteSlug = site.Slug
	}
	starter := s.TrustActions
	if starter.Client == nil {
		starter.Client = s.Temporal
	}
	if err := starter.Start(ctx, in); err != nil {
		s.ctxLog(ctx).Error("start the trust action workflow; socket drop, activity row and event are missing", "guid", res.GUID, "action", action, "err", err)
	}
}
