package api

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/devices"
)

func (s *Server) activityRoutes() []Route {
	return []Route{
		{"GET", "/api/device/activity/{hostname}", AuthToken, getAction(s, s.activityList).Query(queryInteger("limit", "entries per page"), queryInteger("before_id", "the page before this entry ID")).Errors(cairn.ECodeNotFound), "List a device's activity"},
		{"DELETE", "/api/device/activity/{hostname}", AuthToken, getAction(s, func(r *http.Request) (deletedCountJSON, error) {
			n, err := s.Devices.ClearActivity(r.Context(), principal(r.Context()).SiteScope(), pathParam(r, "hostname"))
			return deletedCountJSON{Deleted: n}, err
		}).Errors(cairn.ECodeNotFound, cairn.ECodeNotFound), "Clear a device's activity"},
		{"GET", "/api/device/activity/job/{id}", AuthToken, getAction(s, func(r *http.Request) (activityJSON, error) {
			id, err := strconv.ParseInt(pathParam(r, "id"), 10, 64)
			if err != nil || id <= 0 {
				return activityJSON{}, cairn.Invalid("id", "must be a positive integer")
			}
			a, err := s.Devices.GetActivity(r.Context(), principal(r.Context()).SiteScope(), id)
			return newActivityJSON(a), err
		}).Errors(cairn.ECodeNotFound), "Get an activity entry"},
	}
}

type activityJSON struct {
	ID         int64             `json:"id"`
	GUID       *cairn.DeviceGUID `json:"guid"`
	Hostname   string            `json:"hostname"`
	SiteID     *cairn.SiteID     `json:"site_id"`
	Kind       string            `json:"kind"`
	Summary    string            `json:"summary"`
	Actor      string            `json:"actor"`
	Status     string            `json:"status"`
	Metadata   json.RawMessage   `json:"metadata" openapi:"types=object"`
	CreatedAt  time.Time         `json:"created_at"`
	FinishedAt *time.Time        `json:"finished_at"`
}

func newActivityJSON(a devices.Activity) activityJSON {
	out := activityJSON{ID: a.ID, Hostname: a.Hostname, Kind: a.Kind, Summary: a.Summary, Actor: a.Actor, Status: a.Status,
		Metadata: a.Metadata, CreatedAt: a.CreatedAt, FinishedAt: a.FinishedAt}
	if a.GUID != "" {
		out.GUID = &a.GUID
	}
	if a.SiteID != 0 {
		out.SiteID = &a.SiteID
	}
	if len(out.Metadata) == 0 {
		out.Metadata = json.RawMessage(`{}`)
	}
	return out
}

type activityPageJSON struct {
	Activity     []activityJSON `json:"activity"`
	NextBeforeID *int64         `json:"next_before_id"`
}

func (s *Server) activityList(r *http.Request) (activityPageJSON, error) {
	limit, err := queryInt(r, "limit", devices.DefaultActivityPage, 1, devices.MaxActivityPage)
	if err != nil {
		return activityPageJSON{}, err
	}
	before, err := queryInt(r, "before_id", 0, 1, 1<<62)
	if err != nil {
		return activityPageJSON{}, err
	}
	rows, next, err := s.Devices.ListActivity(r.Context(), principal(r.Context()).SiteScope(), pathParam(r, "hostname"), int64(before), limit)
	if err != nil {
		return activityPageJSON{}, err
	}
	out := activityPageJSON{Activity: make([]activityJSON, len(rows)), NextBeforeID: next}
	for i, a := range rows {
		out.Activity[i] = newActivityJSON(a)
	}
	return out, nil
}

// deletedCountJSON answers a DELETE that removes many rows.
type deletedCountJSON struct {
	// Deleted is how many rows were removed.
	Deleted int64 `json:"deleted"`
}
