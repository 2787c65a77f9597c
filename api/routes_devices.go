package api

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/devicefilters"
	"github.com/cairn-rmm/cairn/internal/devices"
)

// Device routes. Every one reads the operator's site scope: a device
// outside it answers 404 exactly like a missing one.
func (s *Server) deviceRoutes() []Route {
	return []Route{
		{"GET", "/api/agents", AuthToken, getAction(s, func(r *http.Request) (agentListJSON, error) {
			list, err := s.Devices.Online(r.Context(), principal(r.Context()).SiteScope())
			out := make([]agentJSON, len(list))
			for i, d := range list {
				out[i] = agentJSON{deviceJSON: newDeviceJSON(d), SiteSlug: d.SiteSlug, Context: proto.ContextPrivileged, HelperContexts: d.HelperContexts}
			}
			return agentListJSON{Agents: out}, err
		}), "List online agents"},
		{"GET", "/api/devices", AuthToken, getAction(s, s.deviceList).Query(queryInteger("site_id", "only this site's devices"), queryInteger("site", "the console's spelling of site_id"), queryString("status", "connected, disconnected or offline"), queryInteger("limit", "rows per page"), queryInteger("offset", "rows to skip"), queryString("sort", "a column, - first for descending"), queryInteger("filter_id", "a saved device filter"), queryString("filter", "a draft filter tree (JSON)")), "List devices"},
		{"GET", "/api/devices/search", AuthToken, getAction(s, s.deviceSearch).Query(queryInteger("limit", "devices to return"), queryString("hostname", "a hostname or part of one")), "Search devices"},
		{"GET", "/api/devices/{guid}", AuthToken, getAction(s, func(r *http.Request) (deviceSummaryJSON, error) {
			d, err := s.Devices.Get(r.Context(), principal(r.Context()).SiteScope(), cairn.DeviceGUID(pathParam(r, "guid")))
			return newDeviceSummaryJSON(d), err
		}).Errors(cairn.ECodeNotFound, cairn.ECodeNotFound), "Get a device"},
		{"GET", "/api/device/details/{hostname}", AuthToken, getAction(s, s.deviceDetails).Errors(cairn.ECodeNotFound), "Get a device's details"},
		{"POST", "/api/device/description/{hostname}", AuthToken, jsonAction(s, http.StatusOK, false, func(r *http.Request, req descriptionRequest) (deviceJSON, error) {
			d, err := s.Devices.SetDescription(r.Context(), principal(r.Context()).SiteScope(), pathParam(r, "hostname"), *req.Description)
			return newDeviceJSON(d), err
		}).Errors(cairn.ECodeNotFound), "Set a device's description"},
	}
}

// pathParam is a path parameter, unescaped.
func pathParam(r *http.Request, name string) string {
	v := chi.URLParam(r, name)
	if u, err := url.PathUnescape(v); err == nil {
		return u
	}
	return v
}

type deviceJSON struct {
	GUID               cairn.DeviceGUID `json:"guid"`
	AgentID            string           `json:"agent_id"`
	Hostname           string           `json:"hostname"`
	Description        string           `json:"description"`
	SiteID             cairn.SiteID     `json:"site_id"`
	SiteName           string           `json:"site_name"`
	LastSeen           *time.Time       `json:"last_seen"`
	AgentSocket        bool             `json:"agent_socket"`
	ConnectivityStatus string           `json:"connectivity_status"`
	OperatingSystem    string           `json:"operating_system"`
	AgentVersion       string           `json:"agent_version"`
	// AgentBuildID is the build the agent last reported in a status post.
	AgentBuildID string `json:"agent_build_id"`
	TrustState   string `json:"trust_state"`
	// MetadataFields are the set metadata values, decoded, by field number
	// (GET /api/devices fills them; other lists leave them empty).
	MetadataFields map[string]string `json:"metadata_fields"`
}

func newDeviceJSON(d devices.Device) deviceJSON {
	return deviceJSON{GUID: d.GUID, AgentID: d.AgentID, Hostname: d.Hostname, Description: d.Description,
		SiteID: d.SiteID, SiteName: d.SiteName, LastSeen: d.LastSeen, AgentSocket: d.AgentSocket,
		ConnectivityStatus: d.Connectivity, OperatingSystem: d.OperatingSystem, AgentVersion: d.AgentVersion,
		AgentBuildID: d.AgentBuildID, TrustState: d.TrustState, MetadataFields: map[string]string{}}
}

type agentJSON struct {
	deviceJSON
	SiteSlug string `json:"site_worker_slug"`
	// Context is the agent process the record describes: always the
	// privileged one, the only process that talks to the Engine.
	Context        string   `json:"context"`
	HelperContexts []string `json:"helper_contexts"`
}

type deviceSummaryJSON struct {
	deviceJSON
	SiteSlug       string         `json:"site_worker_slug"`
	BootID         string         `json:"boot_id"`
	HelperContexts []string       `json:"helper_contexts"`
	Metrics        *proto.Metrics `json:"metrics"`
	EnrolledAt     time.Time      `json:"enrolled_at"`
	// ClonedFrom is the device this one was copied from: a cloned agent
	// that enrolled with its clone ticket (docs/api.md "Cloned agents").
	ClonedFrom *cairn.DeviceGUID `json:"cloned_from"`
	// Capabilities are what the agent can be asked to do (docs/api.md
	// "Agent capabilities"): as reported at its last connect, or the
	// legacy set when it reported none.
	Capabilities []string `json:"capabilities"`
}

func newDeviceSummaryJSON(d devices.Device) deviceSummaryJSON {
	return deviceSummaryJSON{deviceJSON: newDeviceJSON(d), SiteSlug: d.SiteSlug, BootID: d.BootID,
		HelperContexts: d.HelperContexts, Metrics: d.Metrics, EnrolledAt: d.EnrolledAt, Capabilities: d.Capabilities.Names(),
		ClonedFrom: d.ClonedFrom}
}

// deviceList is the paged device list: limit, offset, sort, a saved
// filter (filter_id), a draft filter (filter, URL-encoded JSON) and the
// site/status drilldowns, all narrowing together.
func (s *Server) deviceList(r *http.Request) (devicePageJSON, error) {
	q := r.URL.Query()
	var (
		v  cairn.Validation
		pq devicefilters.PageQuery
	)
	// site is the console's drilldown spelling (/devices?site=<id>), site_id the API's.
	raw := q.Get("site_id")
	if raw == "" {
		raw = q.Get("site")
	}
	if raw != "" {
		id, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || id <= 0 {
			v.Add("site_id", "must be a positive integer")
		}
		pq.SiteID = cairn.SiteID(id)
	}
	if raw := q.Get("status"); raw != "" {
		st, ok := devices.ParseStatus(raw)
		if !ok {
			v.Add("status", "must be connected, disconnected or offline")
		}
		pq.Status = st
	}
	var err error
	if pq.Limit, err = queryInt(r, "limit", devicefilters.DefaultLimit, 1, devicefilters.MaxLimit); err != nil {
		v.Add("limit", fmt.Sprintf("must be an integer from 1 to %d", devicefilters.MaxLimit))
	}
	if pq.Offset, err = queryInt(r, "offset", 0, 0, math.MaxInt32); err != nil {
		v.Add("offset", "must be an integer of at least 0")
	}
	if pq.Sort, err = devicefilters.ParseSort("sort", q.Get("sort")); err != nil {
		v.Add("sort", "must be a column (hostname, site, status, last_seen, os, agent_version, description, trust_state, metadata:<n>), - first for descending")
	}
	if err := v.Err(); err != nil {
		return devicePageJSON{}, err
	}
	if raw := q.Get("filter_id"); raw != "" {
		id, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || id <= 0 {
			return devicePageJSON{}, cairn.Invalid("filter_id", "must be a saved device filter ID")
		}
		f, err := s.DeviceFilters.Get(r.Context(), id)
		if cairn.IsCode(err, cairn.ECodeNotFound) {
			return devicePageJSON{}, cairn.Invalid("filter_id", "is not a saved device filter")
		}
		if err != nil {
			return devicePageJSON{}, err
		}
		pq.Filters = append(pq.Filters, f.Tree)
	}
	if raw := q.Get("filter"); raw != "" {
		tree, err := devicefilters.Parse([]byte(raw), "filter")
		if err != nil {
			return devicePageJSON{}, err
		}
		pq.Filters = append(pq.Filters, tree)
	}
	page, err := s.DeviceFilters.Page(r.Context(), principal(r.Context()).SiteScope(), pq)
	if err != nil {
		return devicePageJSON{}, err
	}
	rows, err := s.deviceRows(r.Context(), page)
	if err != nil {
		return devicePageJSON{}, err
	}
	return devicePageJSON{Devices: rows, Total: page.Total, Limit: pq.Limit, Offset: pq.Offset,
		OnlineWindowSeconds: int(s.DeviceFilters.OnlineWindow().Seconds())}, nil
}

// devicePageJSON is GET /api/devices: one page of the device list.
type devicePageJSON struct {
	Devices []deviceJSON `json:"devices"`
	// Total counts every device the query matches, across pages.
	Total  int64 `json:"total"`
	Limit  int   `json:"limit"`
	Offset int   `json:"offset"`
	// OnlineWindowSeconds is how recent a heartbeat must be for a
	// device to count as connected.
	OnlineWindowSeconds int `json:"online_window_seconds"`
}

func (s *Server) deviceSearch(r *http.Request) (deviceSearchJSON, error) {
	limit, err := queryInt(r, "limit", devices.DefaultSearchResult, 1, devices.MaxSearchResult)
	if err != nil {
		return deviceSearchJSON{}, err
	}
	found, truncated, err := s.Devices.Search(r.Context(), principal(r.Context()).SiteScope(), r.URL.Query().Get("hostname"), limit)
	if err != nil {
		return deviceSearchJSON{}, err
	}
	out := make([]deviceJSON, len(found))
	for i, d := range found {
		out[i] = newDeviceJSON(d)
	}
	return deviceSearchJSON{Devices: out, Truncated: truncated}, nil
}

// deviceSearchJSON is GET /api/devices/search.
type deviceSearchJSON struct {
	Devices []deviceJSON `json:"devices"`
	// Truncated: more devices match than limit.
	Truncated bool `json:"truncated"`
}

type descriptionRequest struct {
	Description *string `json:"description" limit:"max=500"`
}

func (req *descriptionRequest) validate() error {
	if req.Description == nil {
		return cairn.Invalid("description", "is required (an empty string clears it)")
	}
	return nil
}

// agentListJSON is the devices whose agents are connected now.
type agentListJSON struct {
	Agents []agentJSON `json:"agents"`
}
