package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
)

// RolesArea stops and starts an agent role on one device (issue 27 item
// 4): the desired state goes to the agent as role_desired_state through
// the command path, and the agent keeps it in agent.json.
var RolesArea Area = areaFunc((*Server).roleRoutes)

func (s *Server) roleRoutes() []Route {
	errs := append([]string{cairn.ECodeValidation, proto.CodeRoleNotStoppable}, operationErrors...)
	return []Route{
		{"POST", "/api/device/roles/{hostname}/desired-state", AuthToken,
			pendable(jsonAction(s, http.StatusOK, false, s.roleDesiredState).Errors(errs...)), "Stop or start an agent role"},
	}
}

type roleDesiredStateReq struct {
	// Role is the role's name without "system:", e.g. remote_shell.
	Role string `json:"role" limit:"max=64"`
	// Desired is running or stopped.
	Desired string `json:"desired" limit:"max=16"`
}

func (q *roleDesiredStateReq) validate() error {
	var v cairn.Validation
	if !slices.Contains(proto.RoleNames, q.Role) && !slices.Contains(proto.ConnectionRoles, q.Role) {
		v.Add("role", "must be a role name of the agent, e.g. remote_shell")
	}
	if q.Desired != proto.RoleDesiredRunning && q.Desired != proto.RoleDesiredStopped {
		v.Add("desired", "must be running or stopped")
	}
	if err := v.Err(); err != nil {
		return err
	}
	if !stoppableRole(q.Role) {
		return cairn.Errorf(proto.CodeRoleNotStoppable,
			"the %s role cannot be stopped: the agent needs it, or it has nothing an operator could stop", q.Role)
	}
	return nil
}

// roleStateJSON is the role's state after the change, as the agent
// answered it.
type roleStateJSON struct {
	Role     string `json:"role"`
	Desired  string `json:"desired"`
	Observed string `json:"observed"`
}

func (s *Server) roleDesiredState(r *http.Request, req roleDesiredStateReq) (roleStateJSON, error) {
	verb := map[string]string{proto.RoleDesiredRunning: "start", proto.RoleDesiredStopped: "stop"}[req.Desired]
	res, err := s.operate(r.Context(), pathParam(r, "hostname"), proto.EventRoleDesiredState,
		proto.RoleDesiredStateRequest{Role: req.Role, Desired: req.Desired}, "role_"+verb,
		fmt.Sprintf("%s role %s", map[string]string{"start": "Start", "stop": "Stop"}[verb], req.Role))
	if err != nil {
		return roleStateJSON{}, err
	}
	var out proto.RoleDesiredStateResult
	if err := json.Unmarshal(res.Payload, &out); err != nil {
		return roleStateJSON{}, fmt.Errorf("decode role desired state: %w", err)
	}
	return roleStateJSON(out), nil
}

// stoppableRole: an operator may stop the role (proto.StoppableRoles).
func stoppableRole(name string) bool { _, ok := proto.StoppableRoles[name]; return ok }
