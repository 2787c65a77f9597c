package engine

import (
	"context"

	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/api"
	"github.com/cairn-rmm/cairn/internal/enrollment"
	"github.com/cairn-rmm/cairn/internal/ratelimit"
	"github.com/cairn-rmm/cairn/workflowclient"
	"github.com/cairn-rmm/cairn/workflows"
)

// enrollmentCapability is enrollment codes, agents' requests and their
// approval, a workflow that waits for an operator or auto-approval.
var enrollmentCapability = Capability{
	Name: "enrollment",
	Wire: func(ctx context.Context, e *Engine) error {
		e.Approvals = workflowclient.EnrollmentStarter{Client: e.client(), TaskQueue: e.cfg.EngineQueue}
		cfg := enrollment.Config{ApprovalTTL: e.cfg.ApprovalTTL, Starter: e.Approvals, Now: e.cfg.Now}
		if e.cfg.EnrollRateLimit > 0 {
			cfg.RequestsPerAddress = ratelimit.Rule{Limit: e.cfg.EnrollRateLimit, Window: enrollment.RequestsPerAddress.Window}
		}
		var err error
		e.Enrollment, err = enrollment.New(ctx, e.Store, e.Cipher, cfg)
		return err
	},
	API:        func(e *Engine) api.Area { return api.EnrollmentArea{Enrollment: e.Enrollment, Approvals: e.Approvals} },
	Workflows:  []any{workflows.EnrollmentApproval},
	Activities: func(e *Engine) []any { return []any{&activities.Enrollment{Service: e.Enrollment}} },
}
