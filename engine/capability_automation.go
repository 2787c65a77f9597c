package engine

import (
	"net/http"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/api"
	"github.com/cairn-rmm/cairn/internal/automation"
	"github.com/cairn-rmm/cairn/workflows"
)

// automationCapability is assemblies (saved scripts) and quick runs: a
// JobRun workflow runs a signed script on each target device. Scheduled
// jobs and flows run scripts too, so core builds the automation service.
var automationCapability = Capability{
	Name: "automation",
	Codes: []cairn.Code{
		{ID: automation.ECodeAssemblyInUse, Status: http.StatusConflict},
		{ID: automation.ECodeContentUnverified, Status: http.StatusConflict},
		{ID: proto.CodeUnsupportedLanguage, Status: http.StatusUnprocessableEntity, Agent: true},
		// A playbook reached an agent without a usable ansible-playbook.
		{ID: proto.CodeAnsibleUnavailable, Status: http.StatusUnprocessableEntity, Agent: true},
		// User-context jobs (SPEC agent behaviour 12, docs/api.md "User-context
		// jobs"): the target cannot run one, or nobody is signed in.
		{ID: proto.CodeUserContextUnsupported, Status: http.StatusUnprocessableEntity, Agent: true},
		{ID: proto.CodeNoActiveUserSession, Status: http.StatusConflict, Agent: true},
		// Shared automation objects (docs/api.md "Shared objects: owner
		// and scope").
		{ID: cairn.ECodeDependantsExist, Status: http.StatusConflict},
		{ID: cairn.ECodeBundledReadOnly, Status: http.StatusConflict},
		{ID: cairn.ECodeAssemblyChanged, Status: http.StatusConflict},
	},
	API:       func(*Engine) api.Area { return api.AutomationArea },
	Workflows: []any{workflows.JobRun},
	Activities: func(e *Engine) []any {
		return []any{&activities.JobRuns{Runs: e.Automation, Gateway: e.Gateway, Devices: e.Devices}}
	},
	AgentOps: []string{proto.EventQuickJobRun},
}
