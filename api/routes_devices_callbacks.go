package api

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
	"github.com/cairn-rmm/cairn/internal/enrollment"
	"github.com/cairn-rmm/cairn/internal/events"
)

// maxDetailsBody bounds a details post: a full inventory (thousands of
// packages and processes) is well under it.
const maxDetailsBody = 16 << 20

// agentCallbackRoutes are the agent's heartbeat, startup timeline and
// inventory posts (SPEC "Agent callbacks").
func (s *Server) agentCallbackRoutes() []Route {
	s.agentCallbackCalls()
	return []Route{
		{"POST", proto.PathHeartbeat, AuthDevice, jsonAction(s, http.StatusOK, false, func(r *http.Request, req proto.Heartbeat) (proto.HeartbeatResponse, error) {
			return s.agentHeartbeat(r.Context(), *deviceFrom(r.Context()), req)
		}), "Send an agent heartbeat"},
		{"POST", proto.PathStatus, AuthDevice, jsonAction(s, http.StatusNoContent, false, func(r *http.Request, req proto.Status) (struct{}, error) {
			return struct{}{}, s.Devices.Status(r.Context(), *deviceFrom(r.Context()), req)
		}), "Report agent status"},
		{"POST", proto.PathDetails, AuthDevice, withBodyLimit(maxDetailsBody, jsonAction(s, http.StatusOK, false, func(r *http.Request, req proto.Details) (proto.DetailsResponse, error) {
			return s.Devices.Details(r.Context(), *deviceFrom(r.Context()), req)
		})), "Report device details"},
	}
}

// agentHeartbeat is the heartbeat's answer, over REST (PathHeartbeat) or
// the realtime socket (proto.CallHeartbeat): the beat queued for the next
// flush, the metadata sync, and the script-signing trust.
func (s *Server) agentHeartbeat(ctx context.Context, dev devicetrust.Identity, req proto.Heartbeat) (proto.HeartbeatResponse, error) {
	resp, err := s.Devices.Heartbeat(ctx, dev, req)
	if err == nil {
		resp, err = s.metadataSync(ctx, dev.GUID, req, resp)
	}
	if err == nil && s.Signer != nil {
		resp.ScriptSigning = s.scriptTrust(ctx)
		if err := s.Signer.Report(ctx, dev.GUID, req.ScriptSigningKeyIDs); err != nil {
			s.ctxLog(ctx).Warn("could not record the agent's script-signing keys", "err", err)
		}
	}
	return resp, err
}

// enrolled records a new or returning device in its activity history and
// tells consoles. Failures are logged: the device is enrolled either way.
func (s *Server) enrolled(ctx context.Context, e enrollment.Enrolled) {
	summary := "Enrolled in site " + e.SiteSlug
	if e.Recreated {
		summary = "Enrolled again after a purge, in site " + e.SiteSlug
	}
	s.activity(ctx, devices.NewActivity{GUID: e.Device.Guid, Hostname: e.Device.Hostname, SiteID: e.Device.SiteID,
		Kind: "device_enrolled", Summary: summary, Metadata: map[string]any{"token_version": e.Device.TokenVersion}})
	data := map[string]any{"guid": e.Device.Guid, "hostname": e.Device.Hostname, "site_id": e.Device.SiteID, "phase": "enrolled"}
	if err := s.Bus.Publish(ctx, events.Event{ID: string(e.Device.Guid + ":enrolled"), Type: events.TypeAgentStatusChanged,
		SiteID: e.Device.SiteID, Data: mustJSON(data)}); err != nil {
		s.ctxLog(ctx).Warn("publish enrollment", "err", err)
	}
}

func (s *Server) activity(ctx context.Context, a devices.NewActivity) {
	if _, err := s.Devices.RecordActivity(context.WithoutCancel(ctx), a); err != nil {
		s.ctxLog(ctx).Warn("record device activity", "hostname", a.Hostname, "kind", a.Kind, "err", err)
	}
}

// mustJSON encodes event data; the maps built here always encode.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
