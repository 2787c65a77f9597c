package api

import (
	"context"
	"net/http"
	"strconv"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
	"github.com/cairn-rmm/cairn/internal/patches"
	"github.com/cairn-rmm/cairn/workflowclient"
)

// PatchesArea is patch management (SPEC "Patch management", docs/api.md
// "Patches"): a device's normalised patch rows, the fleet audit and the
// agent's install progress. Installs run in each device's patch lane
// (workflows.PatchLane), handed over by Lanes.
type PatchesArea struct {
	Patches *patches.Service
	// Lanes hands installs to their devices' patch lanes.
	Lanes workflowclient.PatchLaneStarter
	// Fires fires the immediate patch_install jobs an evaluation creates
	// (workflowclient.JobScheduler).
	Fires activities.PatchJobFirer
}

type patchesAPI struct {
	*Server
	PatchesArea
}

func (d PatchesArea) routes(s *Server) []Route {
	a := &patchesAPI{Server: s, PatchesArea: d}
	return append([]Route{
		{"GET", "/api/device/patches/{hostname}", AuthToken, getAction(s, a.devicePatches).Errors(cairn.ECodeNotFound),
			"List a device's patches"},
		{"POST", "/api/device/patches/{hostname}/reboot", AuthToken, jsonAction(s, http.StatusAccepted, true, a.reboot).
			Summary("A patch_reboot_request in the device's patch lane, after the installs queued before it; the agent skips it with skipped_logged_in_user while a user is signed in (only a policy forces)").
			Errors(cairn.ECodeNotFound, cairn.ECodeAgentTooOld, devicetrust.ECodeDeviceQuarantined, devicetrust.ECodeDeviceRevoked, ECodeTemporalUnavailable),
			"Reboot a device after patch installs"},
		{"POST", "/api/device/patches/{hostname}/install-draft", AuthToken, jsonAction(s, http.StatusOK, false, a.installDraft).
			Summary("A scheduled-job draft with job_kind=patch_install for the device's pending rows (all when patch_keys is empty); nothing is stored: the operator reviews it and saves it with POST /api/scheduled_jobs").
			Errors(cairn.ECodeNotFound), "Open a patch install job draft"},
		{"GET", "/api/patches/audit", AuthToken, getAction(s, a.audit).Query(
			queryInteger("site_id", "only this site's devices"),
			queryString("hostname", "only this device"),
			queryString("state", "pending or installed"),
			queryString("source", "apt, dnf, wua_pending, wua_history, quick_fix_engineering, apt_history, dnf_history, ..."),
			queryString("severity", "the provider's severity (Critical, Important, ...), case-insensitive"),
			queryString("kb", "a KB number (KB5034441, 5034441)"),
			queryString("q", "a case-insensitive substring of the title"),
			QueryParam{Name: "security", Type: "boolean", Description: "only updates from a security source"},
			QueryParam{Name: "reboot_required", Type: "boolean", Description: "only devices waiting for a reboot"},
			queryInteger("limit", "rows per page (1 to 1000, default 200)"),
			queryString("cursor", "next_cursor of the previous page"),
		), "Audit patches across devices"},
		{"POST", "/api/agent/patches/install-progress", AuthDevice, jsonAction(s, http.StatusOK, false, a.installProgress),
			"Agent: report patch install progress"},
	}, a.policyRoutes(s)...)
}

func (a *patchesAPI) devicePatches(r *http.Request) (patches.DeviceView, error) {
	return a.Patches.Device(r.Context(), principal(r.Context()).SiteScope(), pathParam(r, "hostname"))
}

func queryBool(r *http.Request, name string) (bool, error) {
	raw := r.URL.Query().Get(name)
	if raw == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(raw)
	if err != nil {
		return false, cairn.Invalid(name, "must be true or false")
	}
	return b, nil
}

func (a *patchesAPI) audit(r *http.Request) (patches.AuditPage, error) {
	qs := r.URL.Query()
	q := patches.AuditQuery{Hostname: qs.Get("hostname"), State: qs.Get("state"), Source: qs.Get("source"),
		Severity: qs.Get("severity"), KB: qs.Get("kb"), Q: qs.Get("q"), Cursor: qs.Get("cursor")}
	site, err := queryInt(r, "site_id", 0, 1, 1<<62)
	if err != nil {
		return patches.AuditPage{}, err
	}
	q.SiteID = int64(site)
	if q.Limit, err = queryInt(r, "limit", patches.DefaultAuditLimit, 1, patches.MaxAuditLimit); err != nil {
		return patches.AuditPage{}, err
	}
	if q.SecurityOnly, err = queryBool(r, "security"); err != nil {
		return patches.AuditPage{}, err
	}
	if q.RebootRequired, err = queryBool(r, "reboot_required"); err != nil {
		return patches.AuditPage{}, err
	}
	return a.Patches.Audit(r.Context(), principal(r.Context()).SiteScope(), q)
}

// installDraftRequest names the pending rows to install (none: all).
type installDraftRequest struct {
	PatchKeys []string `json:"patch_keys" limit:"max=200"`
}

func (a *patchesAPI) installDraft(r *http.Request, req installDraftRequest) (patches.Draft, error) {
	return a.Patches.InstallDraft(r.Context(), scopeOf(r), pathParam(r, "hostname"), req.PatchKeys)
}

// rebootRequest is an operator's reboot. Forced is refused: only a patch
// policy forces a reboot while users are signed in.
type rebootRequest struct {
	// WhenRequired reboots only if the device says it needs a reboot.
	WhenRequired bool  `json:"when_required"`
	Forced       *bool `json:"forced,omitempty"`
}

func (a *patchesAPI) reboot(r *http.Request, req rebootRequest) (patches.Reboot, error) {
	if req.Forced != nil && *req.Forced {
		return patches.Reboot{}, cairn.Invalid("forced", "only a patch policy forces a reboot while users are signed in")
	}
	p := principal(r.Context())
	t, err := a.Devices.OperationTarget(r.Context(), p.SiteScope(), pathParam(r, "hostname"))
	if err != nil {
		return patches.Reboot{}, err
	}
	if err := t.Require(proto.CapPatchReboot); err != nil {
		return patches.Reboot{}, err
	}
	rb, err := a.Patches.RequestReboot(r.Context(), patches.RebootRequest{DeviceGUID: t.GUID, WhenRequired: req.WhenRequired, Actor: p.Username})
	if err != nil {
		return patches.Reboot{}, err
	}
	err = a.Patches.EnqueueAll(r.Context(), []patches.Queued{{Reboot: &rb, Target: patches.Target{GUID: t.GUID, Hostname: t.Hostname,
		SiteSlug: t.SiteSlug}}}, func(ctx context.Context, q patches.Queued) error {
		return a.Lanes.EnqueueReboot(ctx, *q.Reboot, q.Target, p.Username)
	})
	return rb, err
}

// installProgressJSON says whether a progress report was recorded (false:
// the install is not this device's, not running, or the report is older
// than the last one).
type installProgressJSON struct {
	Recorded bool `json:"recorded"`
}

func (a *patchesAPI) installProgress(r *http.Request, req proto.PatchInstallProgress) (installProgressJSON, error) {
	ok, err := a.Patches.Progress(r.Context(), deviceFrom(r.Context()).GUID, req)
	return installProgressJSON{Recorded: ok}, err
}

// policyID is the {policy_id} of a policy route (not_found when not a
// number, like a missing policy).
func policyID(r *http.Request) (int64, error) {
	id, err := pathID(r, "policy_id")
	if err != nil {
		return 0, cairn.Errorf(cairn.ECodeNotFound, "patch policy not found")
	}
	return id, nil
}

// policyRoutes are the patch policy routes (SPEC "Patch management").
func (a *patchesAPI) policyRoutes(s *Server) []Route {
	const one = "/api/patches/policies/{policy_id}"
	return []Route{
		{"GET", "/api/patches/policies", AuthToken, getAction(s, a.listPolicies).
			Query(queryString("type", "global, site or device_filter")), "List patch policies with their counts"},
		{"POST", "/api/patches/policies", AuthAdmin, jsonAction(s, http.StatusCreated, false, a.createPolicy).
			Summary("Only site and device_filter policies: global ones are seeded and locked (409 conflict)").
			Errors(cairn.ECodeNotFound, cairn.ECodeConflict, patches.ECodePolicyConflict), "Create a patch policy"},
		{"GET", "/api/patches/policies/metadata", AuthToken, getAction(s, a.policyMetadata),
			"Patch policy editor metadata"},
		{"POST", "/api/patches/policies/evaluate", AuthAdmin, jsonAction(s, http.StatusOK, true, a.evaluatePolicies).
			Summary("Approved pending updates of devices inside their maintenance window become installs in each device's patch lane").
			Errors(cairn.ECodeNotFound), "Evaluate patch policies now"},
		{"GET", "/api/patches/policies/effective", AuthToken, getAction(s, a.effectivePolicy).
			Query(queryString("hostname", "the device (required)")).Errors(cairn.ECodeNotFound),
			"A device's effective patch policy hierarchy"},
		{"POST", "/api/patches/policies/conflicts", AuthToken, jsonAction(s, http.StatusOK, false, a.policyConflicts).
			Errors(cairn.ECodeNotFound), "Preview a draft patch policy's coverage and conflicts"},
		{"GET", one, AuthToken, getAction(s, a.getPolicy).Errors(cairn.ECodeNotFound), "Get a patch policy"},
		{"PUT", one, AuthAdmin, jsonAction(s, http.StatusOK, false, a.updatePolicy).
			Summary("Same-layer conflicts answer policy_conflict, as do approvals of what a parent blocks without confirm_parent_override").
			Errors(cairn.ECodeNotFound, cairn.ECodeConflict, patches.ECodePolicyConflict), "Update a patch policy"},
		{"DELETE", one, AuthAdmin, jsonAction(s, http.StatusNoContent, true, a.deletePolicy).
			Errors(cairn.ECodeNotFound, cairn.ECodeConflict), "Delete an unlocked patch policy"},
		{"POST", one + "/preview", AuthToken, jsonAction(s, http.StatusOK, true, a.previewPolicy).
			Errors(cairn.ECodeNotFound), "Preview a patch policy's targets, counts and conflicts"},
	}
}

func scopeOf(r *http.Request) cairn.SiteScope { return principal(r.Context()).SiteScope() }

// policyListJSON is the policy list.
type policyListJSON struct {
	Policies []patches.PolicyRow `json:"policies"`
}

func (a *patchesAPI) listPolicies(r *http.Request) (policyListJSON, error) {
	rows, err := a.Patches.ListPolicies(r.Context(), scopeOf(r), r.URL.Query().Get("type"))
	return policyListJSON{Policies: rows}, err
}

func (a *patchesAPI) createPolicy(r *http.Request, in patches.PolicyInput) (patches.PolicyRow, error) {
	return a.Patches.CreatePolicy(r.Context(), scopeOf(r), principal(r.Context()).Username, in)
}

func (a *patchesAPI) policyMetadata(r *http.Request) (patches.Metadata, error) {
	return a.Patches.PolicyMetadata(r.Context(), scopeOf(r))
}

// evaluateRequest names one policy to evaluate (0 or absent: all).
type evaluateRequest struct {
	PolicyID int64 `json:"policy_id"`
}

func (a *patchesAPI) evaluatePolicies(r *http.Request, req evaluateRequest) (patches.EvaluateResult, error) {
	if req.PolicyID < 0 {
		return patches.EvaluateResult{}, cairn.Invalid("policy_id", "must be a policy ID")
	}
	actor := principal(r.Context()).Username
	res, queued, err := a.Patches.Evaluate(r.Context(), scopeOf(r), actor, req.PolicyID)
	if err != nil {
		return res, err
	}
	if err := activities.FirePatchJobs(r.Context(), a.Patches, a.Fires, res.Jobs, actor); err != nil {
		return res, err
	}
	err = a.Patches.EnqueueAll(r.Context(), queued, func(ctx context.Context, q patches.Queued) error {
		return activities.EnqueueQueued(ctx, a.Lanes, q, actor)
	})
	return res, err
}

func (a *patchesAPI) effectivePolicy(r *http.Request) (patches.Effective, error) {
	return a.Patches.EffectiveFor(r.Context(), scopeOf(r), r.URL.Query().Get("hostname"))
}

func (a *patchesAPI) policyConflicts(r *http.Request, in patches.PolicyInput) (patches.ConflictReport, error) {
	return a.Patches.Conflicts(r.Context(), scopeOf(r), in, 0)
}

func (a *patchesAPI) getPolicy(r *http.Request) (patches.PolicyRow, error) {
	id, err := policyID(r)
	if err != nil {
		return patches.PolicyRow{}, err
	}
	return a.Patches.GetPolicy(r.Context(), scopeOf(r), id)
}

func (a *patchesAPI) updatePolicy(r *http.Request, in patches.PolicyInput) (patches.PolicyRow, error) {
	id, err := policyID(r)
	if err != nil {
		return patches.PolicyRow{}, err
	}
	return a.Patches.UpdatePolicy(r.Context(), scopeOf(r), id, in)
}

func (a *patchesAPI) deletePolicy(r *http.Request, _ struct{}) (struct{}, error) {
	id, err := policyID(r)
	if err != nil {
		return struct{}{}, err
	}
	return struct{}{}, a.Patches.DeletePolicy(r.Context(), scopeOf(r), id)
}

func (a *patchesAPI) previewPolicy(r *http.Request, _ struct{}) (patches.ConflictReport, error) {
	id, err := policyID(r)
	if err != nil {
		return patches.ConflictReport{}, err
	}
	return a.Patches.Preview(r.Context(), scopeOf(r), id)
}
