package api

import (
	"net/http"
	"slices"
	"strconv"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/flows"
)

// FlowsArea are the routes of Flows, over the services only they use.
type FlowsArea struct {
	// Flows are the multi-step automation workflows (/api/workflows).
	Flows *flows.Service
	// Webhooks are their inbound webhooks.
	Webhooks *flows.Webhooks
}

type flowsAPI struct {
	*Server
	FlowsArea
}

func (d FlowsArea) routes(s *Server) []Route {
	a := &flowsAPI{Server: s, FlowsArea: d}
	return slices.Concat(a.flowRoutes(), a.webhookRoutes(), a.nodeRoutes())
}

// flowRoutes are the multi-step automation workflows (docs/api.md
// "Automation: workflows").
func (s *flowsAPI) flowRoutes() []Route {
	const one = "/api/workflows/{id}"
	return []Route{
		{"GET", "/api/workflows", AuthToken, getAction(s.Server, func(r *http.Request) (flowListJSON, error) {
			list, err := s.Flows.List(r.Context())
			if list == nil {
				list = []flows.Flow{}
			}
			return flowListJSON{Workflows: list}, err
		}), "List workflows"},
		{"POST", "/api/workflows", AuthToken, jsonAction(s.Server, http.StatusCreated, false, func(r *http.Request, req flows.Input) (flows.Flow, error) {
			return s.Flows.Create(r.Context(), editor(r), req)
		}), "Create a workflow"},
		{"GET", "/api/workflows/runs/{run_id}", AuthToken, getAction(s.Server, func(r *http.Request) (flows.Run, error) {
			return s.Flows.GetRun(r.Context(), principal(r.Context()).SiteScope(), cairn.RunID(pathParam(r, "run_id")))
		}).Errors(cairn.ECodeNotFound), "Get a workflow run"},
		{"GET", one, AuthToken, getAction(s.Server, func(r *http.Request) (flows.Flow, error) {
			id, err := flowID(r)
			if err != nil {
				return flows.Flow{}, err
			}
			return s.Flows.Get(r.Context(), id)
		}).Errors(cairn.ECodeNotFound), "Get a workflow"},
		{"PUT", one, AuthToken, jsonAction(s.Server, http.StatusOK, false, func(r *http.Request, req flows.Input) (flows.Flow, error) {
			id, err := flowID(r)
			if err != nil {
				return flows.Flow{}, err
			}
			return s.Flows.Update(r.Context(), editor(r), id, req)
		}).Errors(cairn.ECodeNotFound, cairn.ECodeForbidden, cairn.ECodeDependantsExist), "Update a workflow"},
		{"DELETE", one, AuthToken, jsonAction(s.Server, http.StatusNoContent, true, func(r *http.Request, _ struct{}) (struct{}, error) {
			id, err := flowID(r)
			if err != nil {
				return struct{}{}, err
			}
			return struct{}{}, s.Flows.Delete(r.Context(), editor(r), id)
		}).Errors(cairn.ECodeNotFound, cairn.ECodeForbidden, flows.ECodeInUse), "Delete a workflow"},
		{"POST", one + "/start", AuthToken, jsonAction(s.Server, http.StatusAccepted, false, func(r *http.Request, req flowStartRequest) (jobRunIDJSON, error) {
			id, err := flowID(r)
			if err != nil {
				return jobRunIDJSON{}, err
			}
			p := principal(r.Context())
			runID, err := s.Flows.Start(r.Context(), p.SiteScope(), p.Username, id, req.DeviceGUIDs)
			return jobRunIDJSON{RunID: cairn.RunID(runID)}, err
		}).Errors(cairn.ECodeNotFound, ECodeTemporalUnavailable, cairn.ECodeUnavailable), "Start a workflow"},
		{"GET", one + "/runs", AuthToken, getAction(s.Server, func(r *http.Request) (flowRunsJSON, error) {
			id, err := flowID(r)
			if err != nil {
				return flowRunsJSON{}, err
			}
			limit, err := queryInt(r, "limit", 20, 1, 100)
			if err != nil {
				return flowRunsJSON{}, err
			}
			runs, err := s.Flows.Runs(r.Context(), principal(r.Context()).SiteScope(), id, limit)
			if runs == nil {
				runs = []flows.Run{}
			}
			return flowRunsJSON{Runs: runs}, err
		}).Query(queryInteger("limit", "runs to return, 1 to 100 (default 20)")).Errors(cairn.ECodeNotFound), "List a workflow's runs"},
	}
}

func flowID(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(pathParam(r, "id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, cairn.Invalid("id", "must be a positive integer")
	}
	return id, nil
}

type flowListJSON struct {
	Workflows []flows.Flow `json:"workflows"`
}

type flowRunsJSON struct {
	Runs []flows.Run `json:"runs"`
}

type flowStartRequest struct {
	DeviceGUIDs []string `json:"device_guids" limit:"max=1000"`
}
