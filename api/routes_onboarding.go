package api

import (
	"context"
	"net/http"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/onboarding"
)

// OnboardingStarter starts and cancels redeploy jobs' workflows
// (workflowclient.OnboardingStarter).
type OnboardingStarter interface {
	Start(ctx context.Context, p onboarding.Plan) error
	Cancel(ctx context.Context, jobID string) error
}

// OnboardingArea are the routes of agent redeploys (docs/api.md
// "Onboarding: agent redeploy").
type OnboardingArea struct {
	Onboarding *onboarding.Service
	Starter    OnboardingStarter
}

type onboardingAPI struct {
	*Server
	OnboardingArea
}

func (d OnboardingArea) routes(s *Server) []Route {
	a := &onboardingAPI{Server: s, OnboardingArea: d}
	const jobs = "/api/onboarding/jobs"
	const one = jobs + "/{job_id}"
	return []Route{
		{"POST", jobs, AuthToken, jsonAction(s, http.StatusAccepted, false, func(r *http.Request, in onboarding.RedeployInput) (onboarding.RedeployStarted, error) {
			p := principal(r.Context())
			return a.start(r, in, p.Username, nil)
		}).Errors(cairn.ECodeNotFound, onboarding.ECodeJobOpen, onboarding.ECodeDeviceNotActive, cairn.ECodeAegisLocked,
			ECodeTemporalUnavailable, cairn.ECodeUnavailable).
			Summary("Answers the job with its one-time enrollment_code (shown this once, for a manual install when the agent is not connected)."),
			"Redeploy a device's agent"},
		{"GET", jobs, AuthToken, getAction(s, func(r *http.Request) (onboardingJobsJSON, error) {
			limit, err := queryInt(r, "limit", 50, 1, 200)
			if err != nil {
				return onboardingJobsJSON{}, err
			}
			list, err := a.Onboarding.List(r.Context(), principal(r.Context()).SiteScope(), r.URL.Query().Get("device_guid"), limit)
			return onboardingJobsJSON{Jobs: list}, err
		}).Query(queryString("device_guid", "only this device's jobs"), queryInteger("limit", "jobs to return, 1 to 200 (default 50)")),
			"List redeploy jobs"},
		{"GET", one, AuthToken, getAction(s, func(r *http.Request) (onboarding.RedeployJob, error) {
			return a.Onboarding.Get(r.Context(), principal(r.Context()).SiteScope(), pathParam(r, "job_id"))
		}).Errors(cairn.ECodeNotFound), "Get a redeploy job"},
		{"POST", one + "/cancel", AuthToken, jsonAction(s, http.StatusAccepted, true, func(r *http.Request, _ struct{}) (onboarding.RedeployJob, error) {
			ctx := r.Context()
			j, err := a.Onboarding.Get(ctx, principal(ctx).SiteScope(), pathParam(r, "job_id"))
			if err != nil {
				return j, err
			}
			if err := onboarding.CheckCancel(j); err != nil {
				return j, err
			}
			if err := a.Starter.Cancel(ctx, j.ID); err != nil {
				if cairn.ErrorCode(err) != cairn.ECodeNotFound {
					return j, err
				}
				// No workflow runs it any more: record the cancel here.
				return a.Onboarding.SetStatus(ctx, j.ID, onboarding.StatusCanceled, "")
			}
			return j, nil
		}).Errors(cairn.ECodeNotFound, onboarding.ECodeJobFinished, ECodeTemporalUnavailable, cairn.ECodeUnavailable).
			Summary("The workflow cancels the job and expires its code; the answer is the job as it was, follow it with GET."),
			"Cancel a redeploy job"},
		{"POST", one + "/retry", AuthToken, jsonAction(s, http.StatusAccepted, true, func(r *http.Request, _ struct{}) (onboarding.RedeployStarted, error) {
			ctx := r.Context()
			p := principal(ctx)
			j, err := a.Onboarding.Get(ctx, p.SiteScope(), pathParam(r, "job_id"))
			if err != nil {
				return onboarding.RedeployStarted{}, err
			}
			in, err := onboarding.RetryInput(j)
			if err != nil {
				return onboarding.RedeployStarted{}, err
			}
			return a.start(r, in, p.Username, &j.ID)
		}).Errors(cairn.ECodeNotFound, onboarding.ECodeJobFinished, onboarding.ECodeJobOpen, onboarding.ECodeDeviceNotActive,
			cairn.ECodeAegisLocked, ECodeTemporalUnavailable, cairn.ECodeUnavailable).
			Summary("A new job for the same device and site, with a new code; the old job names it in retry_of."),
			"Retry a redeploy job"},
	}
}

// start records a job and starts its workflow; a job whose workflow
// cannot start is recorded failed (its code expired), never left open.
func (a *onboardingAPI) start(r *http.Request, in onboarding.RedeployInput, actor string, retryOf *string) (onboarding.RedeployStarted, error) {
	ctx := r.Context()
	started, plan, err := a.Onboarding.Create(ctx, principal(ctx).SiteScope(), actor, in, retryOf)
	if err != nil {
		return started, err
	}
	if err := a.Starter.Start(ctx, plan); err != nil {
		_, _ = a.Onboarding.SetStatus(context.WithoutCancel(ctx), started.ID, onboarding.StatusFailed, "the workflow could not be started")
		return onboarding.RedeployStarted{}, err
	}
	return started, nil
}

type onboardingJobsJSON struct {
	Jobs []onboarding.RedeployJob `json:"jobs"`
}
