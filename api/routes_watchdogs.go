package api

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/watchdogs"
	"github.com/cairn-rmm/cairn/workflowclient"
)

// WatchdogsArea are the watchdog and alert-queue routes (SPEC "Watchdogs
// and alerts", docs/api.md "Watchdogs").
type WatchdogsArea struct {
	Watchdogs *watchdogs.Service
	// Starter evaluates a saved watchdog at once and hands incident
	// changes to the incident's workflow.
	Starter workflowclient.WatchdogStarter
}

type watchdogsAPI struct {
	*Server
	WatchdogsArea
}

func (d WatchdogsArea) routes(s *Server) []Route {
	a := &watchdogsAPI{Server: s, WatchdogsArea: d}
	const one = "/api/watchdogs/{watchdog_id}"
	const incident = "/api/watchdogs/incidents/{incident_id}"
	const channel = "/api/watchdogs/channels/{channel_id}"
	const window = "/api/watchdogs/maintenance-windows/{window_id}"
	return []Route{
		{"GET", "/api/watchdogs", AuthToken, getAction(s, a.list), "List watchdogs"},
		{"POST", "/api/watchdogs", AuthToken, jsonAction(s, http.StatusCreated, false, a.create).
			Summary("Saving makes the watchdog live and evaluates it at once"), "Create a watchdog"},
		{"GET", "/api/watchdogs/metadata", AuthToken, getAction(s, a.metadata), "Get the watchdog editor's metadata"},
		{"POST", "/api/watchdogs/preview", AuthToken, jsonAction(s, http.StatusOK, false, a.preview).
			Summary("The draft's targets and what its rules say of each now; no incident opens"), "Preview a watchdog"},
		{"GET", "/api/watchdogs/incidents", AuthToken, getAction(s, a.incidents).
			Query(queryString("state", "Open, Acknowledged, Suppressed or Resolved (comma-separated)"),
				queryString("severity", "info, warning or critical"), queryInteger("watchdog_id", "one watchdog's incidents"),
				queryString("guid", "one device's incidents"), queryInteger("site_id", "one site's incidents"),
				queryInteger("limit", "incidents per page (1 to 500, default 100)"), queryInteger("offset", "incidents to skip")),
			"List incidents and the queue's counts"},
		{"POST", incident + "/acknowledge", AuthToken, jsonAction(s, http.StatusOK, true, a.acknowledge).
			Errors(cairn.ECodeNotFound, watchdogs.ECodeIncidentState), "Acknowledge an incident"},
		{"POST", incident + "/state", AuthToken, jsonAction(s, http.StatusOK, false, a.setState).
			Summary("Suppressing needs a non-empty reason; without one the incident is left as it is").
			Errors(cairn.ECodeNotFound, watchdogs.ECodeIncidentState), "Move an incident between Open and Suppressed"},
		{"GET", "/api/watchdogs/channels", AuthAdmin, getAction(s, a.listChannels), "List notification channels"},
		{"POST", "/api/watchdogs/channels", AuthAdmin, jsonAction(s, http.StatusCreated, false, a.createChannel).
			Summary("A webhook (HMAC-SHA256 signed) or an SMTP (STARTTLS) channel; its secret is sealed and never returned"),
			"Create a notification channel"},
		{"GET", channel, AuthAdmin, getAction(s, a.getChannel).Errors(cairn.ECodeNotFound), "Get a notification channel"},
		{"PUT", channel, AuthAdmin, jsonAction(s, http.StatusOK, false, a.updateChannel).
			Summary("A secret left out (null) keeps the saved one").Errors(cairn.ECodeNotFound), "Update a notification channel"},
		{"DELETE", channel, AuthAdmin, jsonAction(s, http.StatusNoContent, true, a.removeChannel).Errors(cairn.ECodeNotFound),
			"Delete a notification channel"},
		{"POST", channel + "/test", AuthAdmin, jsonAction(s, http.StatusOK, true, a.testChannel).
			Summary("Sends a made-up incident marked as a test the way an incident's notification goes and answers its outcome " +
				"(delivered, refused or failed) within 20 s; no delivery is recorded").Errors(cairn.ECodeNotFound),
			"Send a test notification"},
		{"GET", "/api/watchdogs/maintenance-windows", AuthAdmin, getAction(s, a.listWindows), "List maintenance windows"},
		{"POST", "/api/watchdogs/maintenance-windows", AuthAdmin, jsonAction(s, http.StatusCreated, false, a.createWindow).
			Summary("Notifications of the covered incidents are held back during the window; evaluation goes on"),
			"Create a maintenance window"},
		{"PUT", window, AuthAdmin, jsonAction(s, http.StatusOK, false, a.updateWindow).Errors(cairn.ECodeNotFound),
			"Update a maintenance window"},
		{"DELETE", window, AuthAdmin, jsonAction(s, http.StatusNoContent, true, a.removeWindow).Errors(cairn.ECodeNotFound),
			"Delete a maintenance window"},
		{"GET", incident + "/deliveries", AuthToken, getAction(s, a.deliveries).Errors(cairn.ECodeNotFound),
			"List an incident's notification deliveries"},
		{"GET", one, AuthToken, getAction(s, a.get).Errors(cairn.ECodeNotFound), "Get a watchdog"},
		{"PUT", one, AuthToken, jsonAction(s, http.StatusOK, false, a.update).
			Summary("Saving makes the change live and evaluates it at once; disabling resolves its incidents").
			Errors(cairn.ECodeNotFound), "Update a watchdog"},
		{"DELETE", one, AuthToken, jsonAction(s, http.StatusNoContent, true, a.remove).
			Summary("Its incidents, overrides and evaluation state go with it").Errors(cairn.ECodeNotFound), "Delete a watchdog"},
		{"GET", "/api/devices/{guid}/watchdogs", AuthToken, getAction(s, a.deviceTab).Errors(cairn.ECodeNotFound),
			"List a device's watchdogs"},
		{"POST", "/api/devices/{guid}/watchdogs/overrides", AuthToken, jsonAction(s, http.StatusOK, false, a.setOverride).
			Summary("Muting needs a non-empty reason and suppresses the watchdog's active incident on the device").
			Errors(cairn.ECodeNotFound), "Set or clear a device's watchdog override"},
	}
}

func (a *watchdogsAPI) editor(r *http.Request) watchdogs.Editor {
	p := principal(r.Context())
	return watchdogs.Editor{Username: p.Username, Scope: p.SiteScope()}
}

func watchdogID(r *http.Request) (int64, error) {
	id, err := pathID(r, "watchdog_id")
	if err != nil {
		return 0, cairn.Errorf(cairn.ECodeNotFound, "watchdog not found")
	}
	return id, nil
}

func incidentID(r *http.Request) (int64, error) {
	id, err := pathID(r, "incident_id")
	if err != nil {
		return 0, cairn.Errorf(cairn.ECodeNotFound, "incident not found")
	}
	return id, nil
}

// watchdogRequest is the policy record a save sends.
type watchdogRequest struct {
	Name        string `json:"name" limit:"max=120"`
	Description string `json:"description" limit:"max=2000"`
	Severity    string `json:"severity"`
	// Enabled defaults to true.
	Enabled *bool `json:"enabled"`
	// SiteIDs is the scope: the sites the watchdog may apply to (null:
	// every site, for an all-sites operator).
	SiteIDs []int64            `json:"site_ids" limit:"max=1000"`
	Targets watchdogs.Targets  `json:"targets"`
	Match   string             `json:"match"`
	Rules   []watchdogs.Rule   `json:"rules" limit:"max=32"`
	Noise   watchdogs.Noise    `json:"noise"`
	Actions []watchdogs.Action `json:"actions" limit:"max=8"`
}

func (req watchdogRequest) policy() watchdogs.Policy {
	enabled := req.Enabled == nil || *req.Enabled
	return watchdogs.Policy{Name: req.Name, Description: req.Description, Severity: req.Severity, Enabled: enabled,
		SiteIDs: req.SiteIDs, Targets: req.Targets, Match: req.Match, Rules: req.Rules, Noise: req.Noise, Actions: req.Actions}
}

// watchdogJSON is a saved watchdog.
type watchdogJSON struct {
	ID          int64              `json:"id"`
	Name        string             `json:"name"`
	Description string             `json:"description"`
	Severity    string             `json:"severity"`
	Enabled     bool               `json:"enabled"`
	SiteIDs     []int64            `json:"site_ids" openapi:"nullable"`
	Targets     watchdogs.Targets  `json:"targets"`
	Match       string             `json:"match"`
	Rules       []watchdogs.Rule   `json:"rules"`
	Noise       watchdogs.Noise    `json:"noise"`
	Actions     []watchdogs.Action `json:"actions"`
	Revision    int64              `json:"revision"`
	EvaluatedAt *time.Time         `json:"evaluated_at"`
	CreatedBy   string             `json:"created_by"`
	CreatedAt   time.Time          `json:"created_at"`
	UpdatedBy   string             `json:"updated_by"`
	UpdatedAt   time.Time          `json:"updated_at"`
}

func toWatchdogJSON(w watchdogs.Watchdog) watchdogJSON {
	t := w.Targets
	if t.DeviceGUIDs == nil {
		t.DeviceGUIDs = []string{}
	}
	if t.FilterIDs == nil {
		t.FilterIDs = []int64{}
	}
	rules, actions := w.Rules, w.Actions
	if rules == nil {
		rules = []watchdogs.Rule{}
	}
	if actions == nil {
		actions = []watchdogs.Action{}
	}
	return watchdogJSON{ID: w.ID, Name: w.Name, Description: w.Description, Severity: w.Severity, Enabled: w.Enabled,
		SiteIDs: w.SiteIDs, Targets: t, Match: w.Match, Rules: rules, Noise: w.Noise, Actions: actions, Revision: w.Revision,
		EvaluatedAt: w.EvaluatedAt, CreatedBy: w.CreatedBy, CreatedAt: w.CreatedAt, UpdatedBy: w.UpdatedBy, UpdatedAt: w.UpdatedAt}
}

type watchdogListJSON struct {
	Watchdogs []watchdogJSON `json:"watchdogs"`
}

func (a *watchdogsAPI) list(r *http.Request) (watchdogListJSON, error) {
	list, err := a.Watchdogs.List(r.Context(), principal(r.Context()).SiteScope())
	out := watchdogListJSON{Watchdogs: make([]watchdogJSON, len(list))}
	for i, w := range list {
		out.Watchdogs[i] = toWatchdogJSON(w)
	}
	return out, err
}

func (a *watchdogsAPI) get(r *http.Request) (watchdogJSON, error) {
	id, err := watchdogID(r)
	if err != nil {
		return watchdogJSON{}, err
	}
	w, err := a.Watchdogs.Get(r.Context(), principal(r.Context()).SiteScope(), id)
	return toWatchdogJSON(w), err
}

// evaluateNow starts the save's evaluation. The save stands whatever
// happens: a Temporal away now leaves the evaluation to the maintenance
// schedule, within an interval.
func (a *watchdogsAPI) evaluateNow(r *http.Request, w watchdogs.Watchdog) {
	if !w.Enabled {
		return
	}
	if err := a.Starter.Evaluate(r.Context(), w); err != nil {
		a.Log.WarnContext(r.Context(), "evaluate saved watchdog", "watchdog_id", w.ID, "err", err)
	}
}

func (a *watchdogsAPI) create(r *http.Request, req watchdogRequest) (watchdogJSON, error) {
	w, err := a.Watchdogs.Create(r.Context(), a.editor(r), req.policy())
	if err != nil {
		return watchdogJSON{}, err
	}
	a.evaluateNow(r, w)
	return toWatchdogJSON(w), nil
}

func (a *watchdogsAPI) update(r *http.Request, req watchdogRequest) (watchdogJSON, error) {
	id, err := watchdogID(r)
	if err != nil {
		return watchdogJSON{}, err
	}
	w, ended, err := a.Watchdogs.Update(r.Context(), a.editor(r), id, req.policy())
	if err != nil {
		return watchdogJSON{}, err
	}
	a.endIncidents(r, ended)
	a.evaluateNow(r, w)
	return toWatchdogJSON(w), nil
}

func (a *watchdogsAPI) remove(r *http.Request, _ struct{}) (struct{}, error) {
	id, err := watchdogID(r)
	if err != nil {
		return struct{}{}, err
	}
	ended, err := a.Watchdogs.Delete(r.Context(), a.editor(r), id)
	if err != nil {
		return struct{}{}, err
	}
	a.endIncidents(r, ended)
	return struct{}{}, nil
}

// endIncidents tells the workflows of incidents a save resolved or a
// delete removed that they ended. A signal that fails is logged: the
// workflow finds out at its next look.
func (a *watchdogsAPI) endIncidents(r *http.Request, ids []int64) {
	for _, id := range ids {
		if err := a.Starter.EndIncident(r.Context(), id); err != nil {
			a.Log.WarnContext(r.Context(), "end incident workflow", "incident_id", id, "err", err)
			return
		}
	}
}

// watchdogMetadataJSON is what the editor offers.
type watchdogMetadataJSON struct {
	Subjects       []watchdogs.SubjectInfo `json:"subjects"`
	Severities     []string                `json:"severities"`
	Matches        []string                `json:"matches"`
	TargetKinds    []string                `json:"target_kinds"`
	Actions        []string                `json:"actions"`
	ServiceActions []string                `json:"service_actions"`
	States         []string                `json:"states"`
	// Noise control bounds, in seconds.
	MinIntervalSeconds     int `json:"min_interval_seconds"`
	DefaultIntervalSeconds int `json:"default_interval_seconds"`
	MaxSeconds             int `json:"max_seconds"`
}

func (a *watchdogsAPI) metadata(*http.Request) (watchdogMetadataJSON, error) {
	return watchdogMetadataJSON{Subjects: watchdogs.Subjects, Severities: watchdogs.Severities,
		Matches: []string{watchdogs.MatchAll, watchdogs.MatchAny}, TargetKinds: []string{watchdogs.TargetAll, watchdogs.TargetDevices, watchdogs.TargetFilters},
		Actions:        []string{watchdogs.ActionTrack, watchdogs.ActionToast, watchdogs.ActionServiceControl, watchdogs.ActionRunAssembly},
		ServiceActions: []string{"start", "stop", "restart"}, States: watchdogs.States,
		MinIntervalSeconds: watchdogs.MinInterval, DefaultIntervalSeconds: watchdogs.DefaultInterval, MaxSeconds: watchdogs.MaxSeconds}, nil
}

type previewDeviceJSON struct {
	GUID     string             `json:"guid"`
	Hostname string             `json:"hostname"`
	SiteID   int64              `json:"site_id"`
	Matched  bool               `json:"matched"`
	Samples  []watchdogs.Sample `json:"samples"`
}

type watchdogPreviewJSON struct {
	// Targets is how many devices the draft targets; Matched how many its
	// rules match now; Devices the first of them (at most 100).
	Targets int                 `json:"targets"`
	Matched int                 `json:"matched"`
	Devices []previewDeviceJSON `json:"devices"`
}

func (a *watchdogsAPI) preview(r *http.Request, req watchdogRequest) (watchdogPreviewJSON, error) {
	p, err := a.Watchdogs.Preview(r.Context(), a.editor(r), req.policy())
	if err != nil {
		return watchdogPreviewJSON{}, err
	}
	out := watchdogPreviewJSON{Targets: p.Targets, Matched: p.Matched, Devices: make([]previewDeviceJSON, len(p.Devices))}
	for i, d := range p.Devices {
		out.Devices[i] = previewDeviceJSON{GUID: d.GUID, Hostname: d.Hostname, SiteID: d.SiteID, Matched: d.Matched, Samples: d.Samples}
	}
	return out, nil
}

// incidentJSON is an incident.
type incidentJSON struct {
	ID           int64            `json:"id"`
	WatchdogID   int64            `json:"watchdog_id"`
	WatchdogName string           `json:"watchdog_name,omitempty"`
	GUID         cairn.DeviceGUID `json:"guid"`
	Hostname     string           `json:"hostname,omitempty"`
	SiteID       cairn.SiteID     `json:"site_id"`
	Severity     string           `json:"severity"`
	Title        string           `json:"title"`
	State        string           `json:"state"`
	// Sampled are the values the rules observed when it last matched.
	Sampled        []watchdogs.Sample  `json:"sampled"`
	OfflineOnly    bool                `json:"offline_only"`
	OpenedAt       time.Time           `json:"opened_at"`
	LastMatchedAt  time.Time           `json:"last_matched_at"`
	AcknowledgedBy *string             `json:"acknowledged_by"`
	AcknowledgedAt *time.Time          `json:"acknowledged_at"`
	SuppressedBy   *string             `json:"suppressed_by"`
	SuppressedAt   *time.Time          `json:"suppressed_at"`
	SuppressReason *string             `json:"suppress_reason"`
	ResolvedAt     *time.Time          `json:"resolved_at"`
	ResolveReason  *string             `json:"resolve_reason"`
	Outcomes       []watchdogs.Outcome `json:"outcomes"`
	UpdatedAt      time.Time           `json:"updated_at"`
}

func toIncidentJSON(i db.WatchdogIncident, watchdogName, hostname string) (incidentJSON, error) {
	out := incidentJSON{ID: i.ID, WatchdogID: i.WatchdogID, WatchdogName: watchdogName, GUID: i.DeviceGuid, Hostname: hostname,
		SiteID: i.SiteID, Severity: i.Severity, Title: i.Title, State: i.State, OfflineOnly: i.OfflineOnly, OpenedAt: i.OpenedAt,
		LastMatchedAt: i.LastMatchedAt, AcknowledgedBy: i.AcknowledgedBy, AcknowledgedAt: i.AcknowledgedAt, SuppressedBy: i.SuppressedBy,
		SuppressedAt: i.SuppressedAt, SuppressReason: i.SuppressReason, ResolvedAt: i.ResolvedAt, ResolveReason: i.ResolveReason,
		UpdatedAt: i.UpdatedAt, Sampled: []watchdogs.Sample{}, Outcomes: []watchdogs.Outcome{}}
	if len(i.Sampled) > 0 {
		if err := json.Unmarshal(i.Sampled, &out.Sampled); err != nil {
			return out, err
		}
	}
	if len(i.Outcomes) > 0 {
		if err := json.Unmarshal(i.Outcomes, &out.Outcomes); err != nil {
			return out, err
		}
	}
	if out.Sampled == nil {
		out.Sampled = []watchdogs.Sample{}
	}
	if out.Outcomes == nil {
		out.Outcomes = []watchdogs.Outcome{}
	}
	return out, nil
}

type queueCountJSON struct {
	State    string `json:"state"`
	Severity string `json:"severity"`
	Count    int64  `json:"count"`
}

// incidentQueueJSON is a page of the alert queue.
type incidentQueueJSON struct {
	Incidents []incidentJSON `json:"incidents"`
	// Total is how many incidents the filters match.
	Total int64 `json:"total"`
	// Counts are the queue's incidents per state and severity (inside the
	// caller's sites, whatever the filters); ByState sums them per state.
	Counts  []queueCountJSON `json:"counts"`
	ByState map[string]int64 `json:"by_state"`
}

func (a *watchdogsAPI) incidents(r *http.Request) (incidentQueueJSON, error) {
	q := watchdogs.IncidentQuery{Severity: r.URL.Query().Get("severity"), DeviceGUID: r.URL.Query().Get("guid")}
	if raw := r.URL.Query().Get("state"); raw != "" {
		q.States = strings.Split(raw, ",")
	}
	for _, p := range []struct {
		name string
		to   **int64
	}{{"watchdog_id", &q.WatchdogID}, {"site_id", &q.SiteID}} {
		if raw := r.URL.Query().Get(p.name); raw != "" {
			n, err := strconv.ParseInt(raw, 10, 64)
			if err != nil || n < 1 {
				return incidentQueueJSON{}, cairn.Invalid(p.name, "must be a positive integer")
			}
			*p.to = &n
		}
	}
	var err error
	if q.Limit, err = queryInt(r, "limit", 100, 1, 500); err != nil {
		return incidentQueueJSON{}, err
	}
	if q.Offset, err = queryInt(r, "offset", 0, 0, 1<<30); err != nil {
		return incidentQueueJSON{}, err
	}
	queue, err := a.Watchdogs.Incidents(r.Context(), principal(r.Context()).SiteScope(), q)
	if err != nil {
		return incidentQueueJSON{}, err
	}
	out := incidentQueueJSON{Incidents: make([]incidentJSON, len(queue.Incidents)), Total: queue.Total,
		Counts: make([]queueCountJSON, len(queue.Counts)), ByState: map[string]int64{}}
	for _, st := range watchdogs.States {
		out.ByState[st] = 0
	}
	for i, inc := range queue.Incidents {
		if out.Incidents[i], err = toIncidentJSON(inc.WatchdogIncident, inc.WatchdogName, inc.Hostname); err != nil {
			return out, err
		}
	}
	for i, c := range queue.Counts {
		out.Counts[i] = queueCountJSON{State: c.State, Severity: c.Severity, Count: c.Count}
		out.ByState[c.State] += c.Count
	}
	return out, nil
}

func (a *watchdogsAPI) acknowledge(r *http.Request, _ struct{}) (incidentJSON, error) {
	id, err := incidentID(r)
	if err != nil {
		return incidentJSON{}, err
	}
	p := principal(r.Context())
	if err := a.Watchdogs.CheckChange(r.Context(), p.SiteScope(), id, "", "", true); err != nil {
		return incidentJSON{}, err
	}
	inc, err := a.Starter.Acknowledge(r.Context(), activities.IncidentChange{IncidentID: id, Actor: p.Username, Scope: p.SiteScope()})
	if err != nil {
		return incidentJSON{}, err
	}
	return toIncidentJSON(inc, "", "")
}

type incidentStateRequest struct {
	// State is Open or Suppressed.
	State string `json:"state"`
	// Reason is required (non-blank) to suppress.
	Reason string `json:"reason" limit:"max=2000"`
}

func (a *watchdogsAPI) setState(r *http.Request, req incidentStateRequest) (incidentJSON, error) {
	id, err := incidentID(r)
	if err != nil {
		return incidentJSON{}, err
	}
	p := principal(r.Context())
	if err := a.Watchdogs.CheckChange(r.Context(), p.SiteScope(), id, req.State, req.Reason, false); err != nil {
		return incidentJSON{}, err
	}
	inc, err := a.Starter.SetState(r.Context(), activities.IncidentChange{IncidentID: id, Actor: p.Username, Scope: p.SiteScope(),
		State: req.State, Reason: req.Reason})
	if err != nil {
		return incidentJSON{}, err
	}
	return toIncidentJSON(inc, "", "")
}

type deviceOverrideJSON struct {
	Reason    string    `json:"reason"`
	CreatedBy string    `json:"created_by"`
	CreatedAt time.Time `json:"created_at"`
}

type deviceWatchdogJSON struct {
	Watchdog watchdogJSON `json:"watchdog"`
	// Targeted: the watchdog applies to the device now.
	Targeted bool                `json:"targeted"`
	Override *deviceOverrideJSON `json:"override"`
	Incident *incidentJSON       `json:"incident"`
}

// deviceWatchdogsJSON is the device's Watchdogs tab.
type deviceWatchdogsJSON struct {
	Watchdogs []deviceWatchdogJSON `json:"watchdogs"`
}

func (a *watchdogsAPI) deviceTab(r *http.Request) (deviceWatchdogsJSON, error) {
	tab, err := a.Watchdogs.DeviceTab(r.Context(), principal(r.Context()).SiteScope(), pathParam(r, "guid"))
	if err != nil {
		return deviceWatchdogsJSON{}, err
	}
	out := deviceWatchdogsJSON{Watchdogs: make([]deviceWatchdogJSON, len(tab))}
	for i, dw := range tab {
		row := deviceWatchdogJSON{Watchdog: toWatchdogJSON(dw.Watchdog), Targeted: dw.Targeted}
		if dw.Override != nil {
			row.Override = &deviceOverrideJSON{Reason: dw.Override.Reason, CreatedBy: dw.Override.CreatedBy, CreatedAt: dw.Override.CreatedAt}
		}
		if dw.Incident != nil {
			inc, err := toIncidentJSON(*dw.Incident, dw.Watchdog.Name, "")
			if err != nil {
				return out, err
			}
			row.Incident = &inc
		}
		out.Watchdogs[i] = row
	}
	return out, nil
}

type overrideRequest struct {
	WatchdogID int64 `json:"watchdog_id"`
	// Muted sets the override (reason required) or clears it.
	Muted  bool   `json:"muted"`
	Reason string `json:"reason" limit:"max=2000"`
}

func (a *watchdogsAPI) setOverride(r *http.Request, req overrideRequest) (deviceWatchdogsJSON, error) {
	p := principal(r.Context())
	if req.WatchdogID < 1 {
		return deviceWatchdogsJSON{}, cairn.Invalid("watchdog_id", "is required")
	}
	if err := a.Watchdogs.SetOverride(r.Context(), p.SiteScope(), p.Username, pathParam(r, "guid"), req.WatchdogID, req.Muted, req.Reason); err != nil {
		return deviceWatchdogsJSON{}, err
	}
	return a.deviceTab(r)
}
