package engine

import (
	"net/http"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/api"
)

// rolesCapability stops and starts agent roles (issue 27 item 4): a
// role_desired_state operation on the command path; the agent keeps the
// desired state in agent.json and refuses a stopped role's requests.
var rolesCapability = Capability{
	Name: "roles",
	Codes: []cairn.Code{
		{ID: proto.CodeRoleStopped, Status: http.StatusConflict, Agent: true},
		{ID: proto.CodeRoleNotStoppable, Status: http.StatusConflict, Agent: true},
	},
	API:      func(*Engine) api.Area { return api.RolesArea },
	AgentOps: []string{proto.EventRoleDesiredState},
}
