package api

import (
	"net/http"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/tunnels"
)

// RDPArea is the agent's side of the RDP role (SPEC agent behaviour 14;
// docs/api.md "Remote desktop (RDP)"). RDP sessions themselves are
// established through /api/vnc/establish with protocol rdp (VNCArea).
type RDPArea struct {
	Tunnels *tunnels.Service
}

type rdpAPI struct {
	*Server
	RDPArea
}

func (d RDPArea) routes(s *Server) []Route {
	a := &rdpAPI{Server: s, RDPArea: d}
	return []Route{
		{"POST", proto.PathRDPEnsure, AuthDevice, jsonAction(s, http.StatusOK, false, a.ensure).
			Summary("Advertise the RDP role's state and store its system:rdp row; answers the tunnel firewall scope (TCP 3389 from the Engine's tunnel /32 to the agent's). Never carries login credentials."),
			"Agent: ensure the RDP role"},
	}
}

func (a *rdpAPI) ensure(r *http.Request, req proto.RDPEnsureRequest) (proto.RDPEnsureResponse, error) {
	id := *deviceFrom(r.Context())
	var v cairn.Validation
	if req.Role != nil && req.Role.Key != proto.RoleKeyRDP {
		v.Add("role.key", "must be "+proto.RoleKeyRDP)
	}
	if req.Port < 0 || req.Port > 65535 {
		v.Add("port", "must be a TCP port")
	}
	if len(req.Error) > 2000 {
		v.Add("error", "must be at most 2000 characters")
	}
	if err := v.Err(); err != nil {
		return proto.RDPEnsureResponse{}, err
	}
	if req.Role != nil {
		if err := devices.CheckRole("role", *req.Role); err != nil {
			return proto.RDPEnsureResponse{}, err
		}
		if err := a.Devices.ReportRole(r.Context(), string(id.GUID), "role", *req.Role); err != nil {
			return proto.RDPEnsureResponse{}, err
		}
	}
	out := proto.RDPEnsureResponse{EngineIP: a.Tunnels.EngineIP().String(), Port: proto.RDPPort}
	// The agent's own /32 when it has a tunnel (none yet: the rule waits).
	if t, err := a.Tunnels.Get(r.Context(), id.GUID); err == nil {
		out.AgentIP = t.VirtualIP
	}
	return out, nil
}
