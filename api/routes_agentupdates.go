package api

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/agentartifacts"
	"github.com/cairn-rmm/cairn/internal/agentupdates"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
	"github.com/cairn-rmm/cairn/workflowclient"
)

// AgentUpdatesArea are the routes of AgentUpdates, over the services only they use.
type AgentUpdatesArea struct {
	// Artifacts are the agent binaries this Engine serves.
	Artifacts *agentartifacts.Catalog
	// Updates records agent updates.
	Updates *agentupdates.Service
	// UpdateStarter starts and signals their workflows.
	UpdateStarter workflowclient.AgentUpdateStarter
}

type agentUpdatesAPI struct {
	*Server
	AgentUpdatesArea
}

func (d AgentUpdatesArea) routes(s *Server) []Route {
	a := &agentUpdatesAPI{Server: s, AgentUpdatesArea: d}
	return slices.Concat(a.agentArtifactRoutes(), a.agentUpdateRoutes())
}

// agentUpdateRoutes are agent updates (docs/api.md "Agent updates"): the
// operators' requests and history, and the agents' progress posts.
func (s *agentUpdatesAPI) agentUpdateRoutes() []Route {
	return []Route{
		{"POST", "/api/devices/agent-maintenance", AuthToken, jsonAction(s.Server, http.StatusAccepted, false, s.agentMaintenance).Errors(cairn.ECodeNotFound, cairn.ECodeAgentTooOld, devicetrust.ECodeDeviceQuarantined, devicetrust.ECodeDeviceRevoked, ECodeTemporalUnavailable, cairn.ECodeUnavailable), "Start agent maintenance on devices"},
		{"POST", "/api/device/update-agent/{hostname}", AuthToken, jsonAction(s.Server, http.StatusAccepted, true, s.updateAgent).Errors(cairn.ECodeNotFound, cairn.ECodeAgentSocketMissing, cairn.ECodeAgentTooOld, devicetrust.ECodeDeviceQuarantined, devicetrust.ECodeDeviceRevoked, agentupdates.ECodeUpdateInProgress, agentartifacts.ECodeUnavailable, ECodeTemporalUnavailable, cairn.ECodeUnavailable), "Update a device's agent"},
		{"GET", "/api/devices/{guid}/agent-updates", AuthToken, getAction(s.Server, s.agentUpdates).Query(queryInteger("limit", "entries, 1 to 100"), queryString("operation_id", "only this update operation")).Errors(cairn.ECodeNotFound), "List a device's agent updates"},
		{"POST", proto.PathUpdateProgress, AuthDevice, jsonAction(s.Server, http.StatusOK, false, s.agentUpdateProgress).Errors(cairn.ECodeNotFound, agentupdates.ECodeUpdateInProgress, ECodeTemporalUnavailable), "Report agent update progress"},
	}
}

type maintenanceReq struct {
	Action string   `json:"action"`
	GUIDs  []string `json:"guids" limit:"max=1000"`
}

func (q *maintenanceReq) validate() error {
	var v cairn.Validation
	if q.Action != "update_now" {
		v.Add("action", "must be update_now")
	}
	seen := map[string]bool{}
	switch {
	case len(q.GUIDs) == 0 || len(q.GUIDs) > agentupdates.MaxDevices:
		v.Add("guids", fmt.Sprintf("must list 1 to %d device GUIDs", agentupdates.MaxDevices))
	default:
		for _, g := range q.GUIDs {
			if strings.TrimSpace(g) == "" || len(g) > 64 {
				v.Add("guids", "must hold device GUIDs")
				break
			}
			if seen[g] {
				v.Add("guids", "must not repeat a GUID")
				break
			}
			seen[g] = true
		}
	}
	return v.Err()
}

type updateOpJSON struct {
	GUID        cairn.DeviceGUID  `json:"guid"`
	OperationID cairn.OperationID `json:"operation_id"`
}

type maintenanceJSON struct {
	RunID      cairn.RunID    `json:"run_id"`
	Operations []updateOpJSON `json:"operations"`
}

func (s *agentUpdatesAPI) agentMaintenance(r *http.Request, req maintenanceReq) (maintenanceJSON, error) {
	res, err := s.requestUpdates(r.Context(), req.GUIDs)
	if err != nil {
		return maintenanceJSON{}, err
	}
	out := maintenanceJSON{RunID: res.RunID, Operations: []updateOpJSON{}}
	for _, u := range res.Updates {
		out.Operations = append(out.Operations, updateOpJSON{GUID: u.Target.GUID, OperationID: u.OperationID})
	}
	return out, nil
}

// updateStartedJSON names the update a device was asked to make.
type updateStartedJSON struct {
	RunID       cairn.RunID       `json:"run_id"`
	OperationID cairn.OperationID `json:"operation_id"`
}

func (s *agentUpdatesAPI) updateAgent(r *http.Request, _ struct{}) (updateStartedJSON, error) {
	ctx := r.Context()
	t, err := s.Devices.OperationTarget(ctx, principal(ctx).SiteScope(), pathParam(r, "hostname"))
	if err != nil {
		return updateStartedJSON{}, err
	}
	res, err := s.requestUpdates(ctx, []string{string(t.GUID)})
	if err != nil {
		return updateStartedJSON{}, err
	}
	return updateStartedJSON{RunID: res.RunID, OperationID: res.Updates[0].OperationID}, nil
}

// requestUpdates records the updates and starts their workflows; one that
// cannot start ends failed with the reason (the rest go on).
func (s *agentUpdatesAPI) requestUpdates(ctx context.Context, guids []string) (agentupdates.Requested, error) {
	p := principal(ctx)
	res, err := s.Updates.Request(ctx, p.SiteScope(), p.Username, guids)
	if err != nil {
		return res, err
	}
	for _, u := range res.Updates {
		if err := s.UpdateStarter.Start(ctx, u); err != nil {
			s.ctxLog(ctx).Error("start agent update", "guid", u.Target.GUID, "operation", u.OperationID, "err", err)
			if _, ferr := s.Updates.Finish(context.WithoutCancel(ctx), string(u.OperationID), agentupdates.StatusFailed,
				"the Engine could not start the update: "+cairn.ErrorCode(err), ""); ferr != nil {
				s.ctxLog(ctx).Error("record agent update start failure", "operation", u.OperationID, "err", ferr)
			}
		}
	}
	return res, nil
}

func (s *agentUpdatesAPI) agentUpdates(r *http.Request) (agentupdates.History, error) {
	limit, err := queryInt(r, "limit", agentupdates.DefaultHistory, 1, agentupdates.MaxHistory)
	if err != nil {
		return agentupdates.History{}, err
	}
	opID := r.URL.Query().Get("operation_id")
	if len(opID) > 100 {
		return agentupdates.History{}, cairn.Invalid("operation_id", "must be at most 100 characters")
	}
	ctx := r.Context()
	return s.Updates.History(ctx, principal(ctx).SiteScope(), cairn.DeviceGUID(pathParam(r, "guid")), cairn.OperationID(opID), limit)
}

func (s *agentUpdatesAPI) agentUpdateProgress(r *http.Request, req proto.UpdateProgress) (proto.UpdateProgressResponse, error) {
	ctx := r.Context()
	d := deviceFrom(ctx)
	op, err := s.Updates.Progress(ctx, agentupdates.Device{GUID: d.GUID, Hostname: d.Hostname, SiteID: d.SiteID}, req)
	if err != nil {
		return proto.UpdateProgressResponse{}, err
	}
	if op.Reason == agentupdates.ReasonOperator {
		// The record is written: a lost signal only delays the workflow
		// until its next look at the record.
		if err := s.UpdateStarter.Progress(ctx, string(d.GUID), string(op.ID), op.Status); err != nil {
			s.ctxLog(ctx).Warn("signal agent update", "operation", op.ID, "err", err)
		}
	}
	return proto.UpdateProgressResponse{Status: op.Status}, nil
}
