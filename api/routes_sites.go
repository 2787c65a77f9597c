package api

import (
	"net/http"
	"net/url"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/sites"
	"github.com/cairn-rmm/cairn/workflows"
)

func (s *Server) siteRoutes() []Route {
	return []Route{
		{"GET", "/api/sites", AuthToken, getAction(s, func(r *http.Request) (map[string][]siteJSON, error) {
			list, err := s.Sites.List(r.Context(), principal(r.Context()).SiteScope())
			out := make([]siteJSON, len(list))
			for i, st := range list {
				out[i] = s.siteJSON(st)
			}
			return map[string][]siteJSON{"sites": out}, err
		})},
		{"POST", "/api/sites", AuthAdmin, jsonAction(s, http.StatusCreated, false, func(r *http.Request, req siteCreateRequest) (siteJSON, error) {
			st, err := s.Sites.Create(r.Context(), req.Name, req.Slug)
			return s.siteJSON(st), err
		})},
		{"POST", "/api/sites/rename", AuthAdmin, jsonAction(s, http.StatusOK, false, func(r *http.Request, req siteRenameRequest) (siteJSON, error) {
			st, err := s.Sites.Rename(r.Context(), req.SiteID, req.Name, req.Slug)
			return s.siteJSON(st), err
		})},
		{"POST", "/api/sites/delete", AuthAdmin, jsonAction(s, http.StatusOK, false, func(r *http.Request, req siteDeleteRequest) (map[string][]int64, error) {
			return map[string][]int64{"deleted": req.SiteIDs}, s.Sites.Delete(r.Context(), req.SiteIDs)
		})},
		{"GET", "/api/sites/device_map", AuthToken, getAction(s, func(r *http.Request) (map[string]map[string]deviceSiteJSON, error) {
			m, err := s.Sites.DeviceMap(r.Context(), principal(r.Context()).SiteScope())
			out := make(map[string]deviceSiteJSON, len(m))
			for host, ds := range m {
				out[host] = deviceSiteJSON{SiteID: ds.SiteID, SiteName: ds.SiteName}
			}
			return map[string]map[string]deviceSiteJSON{"device_map": out}, err
		})},
	}
}

type siteJSON struct {
	SiteID         int64     `json:"site_id"`
	Name           string    `json:"name"`
	Slug           string    `json:"site_worker_slug"`
	WorkerName     string    `json:"site_worker_name"`
	PublicBaseURL  string    `json:"public_base_url"`
	PublicHostname string    `json:"public_hostname"`
	DeviceCount    int64     `json:"device_count"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
}

func (s *Server) siteJSON(st sites.Site) siteJSON {
	host := ""
	if u, err := url.Parse(s.PublicURL); err == nil {
		host = u.Hostname()
	}
	return siteJSON{SiteID: st.ID, Name: st.Name, Slug: st.Slug, WorkerName: workflows.SiteTaskQueue(st.Slug),
		PublicBaseURL: s.PublicURL, PublicHostname: host, DeviceCount: st.DeviceCount, CreatedAt: st.CreatedAt, UpdatedAt: st.UpdatedAt}
}

type deviceSiteJSON struct {
	SiteID   int64  `json:"site_id"`
	SiteName string `json:"site_name"`
}

type siteCreateRequest struct {
	Name string `json:"name"`
	Slug string `json:"site_worker_slug"`
}

type siteRenameRequest struct {
	SiteID int64  `json:"site_id"`
	Name   string `json:"name"`
	Slug   string `json:"site_worker_slug"`
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
