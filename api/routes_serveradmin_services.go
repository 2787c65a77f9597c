package api

import (
	"context"
	"net/http"

	"github.com/google/uuid"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/serveradmin"
	"github.com/cairn-rmm/cairn/workflowclient"
	"github.com/cairn-rmm/cairn/workflows"
)

// ServiceActionRunner queues service actions and reads their outcome
// (workflowclient.ServiceActions).
type ServiceActionRunner interface {
	Start(ctx context.Context, in workflows.ServiceActionInput) (workflowclient.ServiceActionView, error)
	List(ctx context.Context, limit int) ([]workflowclient.ServiceActionView, error)
	Get(ctx context.Context, workflowID string) (workflowclient.ServiceActionView, error)
}

// serviceRoutes are POST /api/server/services/<service_key>/action and
// /restart (SPEC "Server administration") and the actions' outcomes.
func (s *serverAdminAPI) serviceRoutes() []Route {
	return []Route{
		{"POST", "/api/server/services/{service_key}/action", AuthAdmin, jsonAction(s.Server, http.StatusAccepted, false, s.serviceAction).
			Errors(ECodeTemporalUnavailable), "Queue a service action"},
		{"POST", "/api/server/services/{service_key}/restart", AuthAdmin, raw(s.serviceRestart).In(serviceRestartRequest{}, true).
			Out(http.StatusAccepted, serviceRestartJSON{}).Errors(serveradmin.ECodeNoSupervisor, ECodeTemporalUnavailable), "Queue a safe detached restart"},
		{"GET", "/api/server/service-actions", AuthAdmin, getAction(s.Server, s.serviceActions), "List recent service actions"},
		{"GET", "/api/server/service-actions/{workflow_id}", AuthAdmin, getAction(s.Server, func(r *http.Request) (workflowclient.ServiceActionView, error) {
			return s.Actions.Get(r.Context(), pathParam(r, "workflow_id"))
		}).Errors(cairn.ECodeNotFound), "Get a service action's outcome"},
	}
}

type serviceActionRequest struct {
	// Action is restart (worker:site:<slug>), reload_certificate (edge)
	// or reconcile_tunnels (tunnels).
	Action string `json:"action" openapi:"enum=restart|reload_certificate|reconcile_tunnels"`
}

// parse validates the path's service key with the body's action.
func (s *serverAdminAPI) parseAction(r *http.Request, action string) (serveradmin.ServiceAction, error) {
	list, err := s.Sites.List(r.Context(), cairn.AllSites)
	if err != nil {
		return serveradmin.ServiceAction{}, err
	}
	return serveradmin.ParseServiceAction(pathParam(r, "service_key"), action, func(slug string) bool {
		for _, st := range list {
			if st.Slug == slug {
				return true
			}
		}
		return false
	})
}

func (s *serverAdminAPI) serviceAction(r *http.Request, req serviceActionRequest) (workflowclient.ServiceActionView, error) {
	a, err := s.parseAction(r, req.Action)
	if err != nil {
		return workflowclient.ServiceActionView{}, err
	}
	return s.Actions.Start(r.Context(), workflows.ServiceActionInput{ID: uuid.NewString(), Action: a, Actor: principal(r.Context()).Username})
}

type serviceRestartRequest struct{}

type serviceRestartJSON struct {
	ServiceKey string `json:"service_key"`
	Status     string `json:"status" openapi:"enum=queued"`
	// Supervisor restarts the Engine after it exits (systemd); absent for
	// a site worker, whose restart is a service action.
	Supervisor string                            `json:"supervisor,omitempty"`
	Action     *workflowclient.ServiceActionView `json:"action,omitempty"`
	Detail     string                            `json:"detail"`
}

// serviceRestart restarts a site worker (as its restart action) or the
// Engine process answering: that one exits gracefully after answering,
// and only where a supervisor will start it again.
func (s *serverAdminAPI) serviceRestart(w http.ResponseWriter, r *http.Request) {
	var req serviceRestartRequest
	if err := decodeJSON(w, r, &req, true); err != nil {
		writeError(w, r, s.Log, err)
		return
	}
	key := pathParam(r, "service_key")
	if key != serveradmin.ServiceEngine {
		a, err := s.parseAction(r, serveradmin.ActionRestart)
		if err != nil {
			if cairn.IsCode(err, cairn.ECodeValidation) {
				err = cairn.Invalid("service_key", "must be engine or worker:site:<slug>")
			}
			writeError(w, r, s.Log, err)
			return
		}
		v, err := s.Actions.Start(r.Context(), workflows.ServiceActionInput{ID: uuid.NewString(), Action: a, Actor: principal(r.Context()).Username})
		if err != nil {
			writeError(w, r, s.Log, err)
			return
		}
		writeJSON(w, http.StatusAccepted, serviceRestartJSON{ServiceKey: key, Status: "queued", Action: &v, Detail: "the site worker's restart is queued"})
		return
	}
	if s.Supervisor == "" || s.RestartEngine == nil {
		writeError(w, r, s.Log, cairn.Errorf(serveradmin.ECodeNoSupervisor,
			"no supervisor (systemd) runs this Engine, so it would not start again after exiting: restart it the way it was started"))
		return
	}
	s.ctxLog(r.Context()).Warn("engine restart requested", "supervisor", s.Supervisor)
	writeJSON(w, http.StatusAccepted, serviceRestartJSON{ServiceKey: key, Status: "queued", Supervisor: s.Supervisor,
		Detail: "this Engine replica stops gracefully after answering; " + s.Supervisor + " starts it again"})
	_ = http.NewResponseController(w).Flush()
	// The graceful stop lets this answer finish.
	s.RestartEngine()
}

type serviceActionsJSON struct {
	Actions []workflowclient.ServiceActionView `json:"actions"`
}

func (s *serverAdminAPI) serviceActions(r *http.Request) (serviceActionsJSON, error) {
	list, err := s.Actions.List(r.Context(), 20)
	return serviceActionsJSON{Actions: list}, err
}
