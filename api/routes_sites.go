package api

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/sites"
	"github.com/cairn-rmm/cairn/workflows"
)

func (s *Server) siteRoutes() []Route {
	return []Route{
		{"GET", "/api/sites", AuthToken, getAction(s, func(r *http.Request) (siteListJSON, error) {
			list, err := s.Sites.List(r.Context(), principal(r.Context()).SiteScope())
			if err != nil {
				return siteListJSON{}, err
			}
			out, err := s.sitesJSON(r.Context(), list...)
			return siteListJSON{Sites: out}, err
		}), "List sites"},
		{"POST", "/api/sites", AuthAdmin, jsonAction(s, http.StatusCreated, false, func(r *http.Request, req siteCreateRequest) (siteJSON, error) {
			st, err := s.Sites.Create(r.Context(), req.Name, req.Slug)
			if err != nil {
				return siteJSON{}, err
			}
			return s.oneSiteJSON(r.Context(), st)
		}).Errors(cairn.ECodeConflict), "Create a site"},
		{"POST", "/api/sites/rename", AuthAdmin, jsonAction(s, http.StatusOK, false, func(r *http.Request, req siteRenameRequest) (siteJSON, error) {
			st, err := s.Sites.Rename(r.Context(), req.SiteID, req.Name, req.Slug)
			if err != nil {
				return siteJSON{}, err
			}
			return s.oneSiteJSON(r.Context(), st)
		}).Errors(cairn.ECodeNotFound, cairn.ECodeConflict), "Rename a site"},
		{"POST", "/api/sites/delete", AuthAdmin, jsonAction(s, http.StatusOK, false, func(r *http.Request, req siteDeleteRequest) (siteDeleteJSON, error) {
			return siteDeleteJSON{Deleted: req.SiteIDs}, s.Sites.Delete(r.Context(), req.SiteIDs)
		}).Errors(cairn.ECodeNotFound, cairn.ECodeSiteNotEmpty), "Delete a site"},
		{"GET", "/api/sites/device_map", AuthToken, getAction(s, func(r *http.Request) (deviceMapJSON, error) {
			m, err := s.Sites.DeviceMap(r.Context(), principal(r.Context()).SiteScope())
			out := make(map[string]deviceSiteJSON, len(m))
			for host, ds := range m {
				out[host] = deviceSiteJSON{SiteID: ds.SiteID, SiteName: ds.SiteName}
			}
			return deviceMapJSON{DeviceMap: out}, err
		}), "Get the device-to-site map"},
		{"POST", "/api/sites/assign", AuthAdmin, jsonAction(s, http.StatusOK, false, func(r *http.Request, req siteAssignRequest) (siteAssignJSON, error) {
			res, err := s.Devices.AssignSite(r.Context(), req.GUIDs, req.SiteID, principal(r.Context()).Username)
			s.transfersEnded(r.Context(), res.EndedTransfers, false)
			return siteAssignJSON{SiteID: req.SiteID, Assigned: res.GUIDs}, err
		}).Errors(cairn.ECodeNotFound), "Assign devices to a site"},
		{"POST", "/api/sites/{site_id}/auto-approval", AuthAdmin, jsonAction(s, http.StatusOK, false, s.siteAutoApproval).Errors(cairn.ECodeNotFound), "Set a site's auto-approval"},
	}
}

type siteListJSON struct {
	Sites []siteJSON `json:"sites"`
}

type siteAssignRequest struct {
	GUIDs  []string     `json:"guids"`
	SiteID cairn.SiteID `json:"site_id"`
}

type siteAssignJSON struct {
	SiteID   cairn.SiteID `json:"site_id"`
	Assigned []string     `json:"assigned"`
}

type autoApprovalRequest struct {
	Enabled         *bool  `json:"enabled"`
	DurationSeconds *int64 `json:"duration_seconds"`
}

func (req *autoApprovalRequest) validate() error {
	if req.Enabled == nil {
		return cairn.Invalid("enabled", "is required")
	}
	return nil
}

type autoApprovalJSON struct {
	SiteID           cairn.SiteID `json:"site_id"`
	Enabled          bool         `json:"enabled"`
	AutoApproveUntil *time.Time   `json:"auto_approve_until"`
}

// siteAutoApproval sets or clears temporary auto-approval; without
// duration_seconds it lasts sites.DefaultAutoApproval, and turning it off
// ignores duration_seconds.
func (s *Server) siteAutoApproval(r *http.Request, req autoApprovalRequest) (autoApprovalJSON, error) {
	id, err := strconv.ParseInt(pathParam(r, "site_id"), 10, 64)
	if err != nil || id <= 0 {
		return autoApprovalJSON{}, cairn.Invalid("site_id", "must be a positive integer")
	}
	d := sites.DefaultAutoApproval
	if n := req.DurationSeconds; n != nil && *req.Enabled {
		// Checked here as well as in the domain: a huge value would
		// overflow time.Duration before the domain saw it.
		if *n < int64(sites.MinAutoApproval.Seconds()) || *n > int64(sites.MaxAutoApproval.Seconds()) {
			return autoApprovalJSON{}, cairn.Invalid("duration_seconds", fmt.Sprintf("must be from %d to %d seconds",
				int(sites.MinAutoApproval.Seconds()), int(sites.MaxAutoApproval.Seconds())))
		}
		d = time.Duration(*n) * time.Second
	}
	now := s.Now()
	st, err := s.Sites.SetAutoApproval(r.Context(), cairn.SiteID(id), *req.Enabled, d, now)
	if err != nil {
		return autoApprovalJSON{}, err
	}
	out := autoApprovalJSON{SiteID: st.ID, Enabled: st.AutoApproving(now)}
	if out.Enabled {
		out.AutoApproveUntil = st.AutoApproveUntil
	}
	return out, nil
}

type siteJSON struct {
	SiteID         cairn.SiteID `json:"site_id"`
	Name           string       `json:"name"`
	Slug           string       `json:"site_worker_slug"`
	WorkerName     string       `json:"site_worker_name"`
	PublicBaseURL  string       `json:"public_base_url"`
	PublicHostname string       `json:"public_hostname"`
	DeviceCount    int64        `json:"device_count"`
	// AutoApproveUntil is set while temporary auto-approval is on.
	AutoApproveUntil *time.Time `json:"auto_approve_until"`
	CreatedAt        time.Time  `json:"created_at"`
	UpdatedAt        time.Time  `json:"updated_at"`
	// AgentBinarySource is where installers get the agent: "engine" (the
	// Engine's own artifacts, through the signed install links).
	AgentBinarySource string `json:"agent_binary_source"`
	// InstallLinks has one signed link per platform the Engine has an
	// artifact for (empty when it has none).
	InstallLinks map[string]installLinkJSON `json:"install_links"`
}

// sitesJSON encodes sites with their install links.
func (s *Server) sitesJSON(ctx context.Context, list ...sites.Site) ([]siteJSON, error) {
	ids := make([]int64, len(list))
	for i, st := range list {
		ids[i] = int64(st.ID)
	}
	links, err := s.InstallLinks.ForSites(ctx, s.PublicURL, ids)
	if err != nil {
		return nil, err
	}
	out := make([]siteJSON, len(list))
	for i, st := range list {
		out[i] = s.siteJSON(st)
		out[i].AgentBinarySource = "engine"
		out[i].InstallLinks = map[string]installLinkJSON{}
		for p, l := range links[int64(st.ID)] {
			out[i].InstallLinks[p] = newInstallLinkJSON(l)
		}
	}
	return out, nil
}

func (s *Server) oneSiteJSON(ctx context.Context, st sites.Site) (siteJSON, error) {
	out, err := s.sitesJSON(ctx, st)
	if err != nil {
		return siteJSON{}, err
	}
	return out[0], nil
}

func (s *Server) siteJSON(st sites.Site) siteJSON {
	host := ""
	if u, err := url.Parse(s.PublicURL); err == nil {
		host = u.Hostname()
	}
	out := siteJSON{SiteID: st.ID, Name: st.Name, Slug: st.Slug, WorkerName: workflows.SiteTaskQueue(st.Slug),
		PublicBaseURL: s.PublicURL, PublicHostname: host, DeviceCount: st.DeviceCount, CreatedAt: st.CreatedAt, UpdatedAt: st.UpdatedAt}
	// An expired window is reported as off rather than as a past time.
	if st.AutoApproving(s.Now()) {
		out.AutoApproveUntil = st.AutoApproveUntil
	}
	return out
}

type deviceSiteJSON struct {
	SiteID   cairn.SiteID `json:"site_id"`
	SiteName string       `json:"site_name"`
}

type siteCreateRequest struct {
	Name string `json:"name" limit:"max=100"`
	Slug string `json:"site_worker_slug" limit:"max=51"`
}

type siteRenameRequest struct {
	SiteID cairn.SiteID `json:"site_id"`
	Name   string       `json:"name" limit:"max=100"`
	Slug   string       `json:"site_worker_slug" limit:"max=51"`
}

type siteDeleteRequest struct {
	SiteIDs []int64 `json:"site_ids"`
}

func (req *siteDeleteRequest) validate() error {
	if len(req.SiteIDs) == 0 {
		return cairn.Invalid("site_ids", "must name at least one site")
	}
	return nil
}

type siteDeleteJSON struct {
	// Deleted are the site IDs the request named.
	Deleted []int64 `json:"deleted"`
}

type deviceMapJSON struct {
	// DeviceMap is keyed by hostname.
	DeviceMap map[string]deviceSiteJSON `json:"device_map"`
}
