package engine

import (
	"context"
	"net/http"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/api"
	"github.com/cairn-rmm/cairn/internal/onboarding"
	"github.com/cairn-rmm/cairn/workflowclient"
	"github.com/cairn-rmm/cairn/workflows"
)

// onboardingCapability is agent redeploys (/api/onboarding/jobs): a new
// one-time enrollment code sent to the agent (agent behaviour 16), each
// job an OnboardingRedeploy workflow on the device's site queue.
var onboardingCapability = Capability{
	Name: "onboarding",
	Codes: []cairn.Code{
		{ID: onboarding.ECodeJobOpen, Status: http.StatusConflict},
		{ID: onboarding.ECodeDeviceNotActive, Status: http.StatusConflict},
		{ID: onboarding.ECodeJobFinished, Status: http.StatusConflict},
	},
	Wire: func(_ context.Context, e *Engine) error {
		e.Onboarding = onboarding.New(e.Store, e.Enrollment, e.cfg.Now)
		return nil
	},
	API: func(e *Engine) api.Area {
		return api.OnboardingArea{Onboarding: e.Onboarding, Starter: workflowclient.OnboardingStarter{Client: e.client(), Grants: e.Grants}}
	},
	Workflows:  []any{workflows.OnboardingRedeploy},
	Activities: func(e *Engine) []any { return []any{&activities.Onboarding{Service: e.Onboarding}} },
	AgentOps:   []string{proto.EventAgentRedeploy},
}
