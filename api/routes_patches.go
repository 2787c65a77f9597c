package api

import (
	"net/http"
	"strconv"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
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
}

type patchesAPI struct {
	*Server
	PatchesArea
}

func (d PatchesArea) routes(s *Server) []Route {
	a := &patchesAPI{Server: s, PatchesArea: d}
	return []Route{
		{"GET", "/api/device/patches/{hostname}", AuthToken, getAction(s, a.devicePatches).Errors(cairn.ECodeNotFound),
			"List a device's patches"},
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
	}
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

// installProgressJSON says whether a progress report was recorded (false:
// the install is not this device's, not running, or the report is older
// than the last one).
type installProgressJSON struct {
	Recorded bool `json:"recorded"`
}

func (a *patchesAPI) installProgress(r *http.Request, req proto.PatchInstallProgress) (installProgressJSON, error) {
	ok, err := a.Patches.Progress(r.Context(), string(deviceFrom(r.Context()).GUID), req)
	return installProgressJSON{Recorded: ok}, err
}
