package api

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/workers"
	"github.com/cairn-rmm/cairn/workflows"
)

func (s *Server) serverRoutes() []Route {
	return []Route{
		{"GET", "/api/server/workers", AuthAdmin, raw(s.serverWorkers).Out(http.StatusOK, serverWorkersJSON{}).Query(queryInteger("history_seconds", "how far back the task counts reach, 0 to 86400 (default 3600)")), "List the Engine's workers"},
		{"GET", "/api/server/audit", AuthAdmin, getAction(s, s.auditList).Query(queryInteger("limit", "entries per page, 1 to 500 (default 100)"), queryInteger("before_id", "the page before this entry ID"), queryString("username", "only this operator's entries")), "List the audit log"},
	}
}

type pollerJSON struct {
	Identity       string    `json:"identity"`
	LastAccessTime time.Time `json:"last_access_time"`
}

type workerJSON struct {
	SiteID          *cairn.SiteID `json:"site_id,omitempty"`
	Name            string        `json:"name"`
	Slug            string        `json:"site_worker_slug,omitempty"`
	TaskQueue       string        `json:"task_queue"`
	State           string        `json:"state"`
	Local           bool          `json:"local"`
	Error           string        `json:"error,omitempty"`
	Pollers         []pollerJSON  `json:"pollers"`
	TotalDevices    *int64        `json:"total_devices,omitempty"`
	RecentWorkflows *int64        `json:"recent_workflows"`
	// RunningWorkflows are the queue's workflows running now (null when
	// Temporal's visibility did not answer).
	RunningWorkflows *int64 `json:"running_workflows"`
	// OnlineDevices heartbeated within the online window; ConnectedAgents
	// hold a live management socket on some site worker (sites only).
	OnlineDevices   *int64 `json:"online_devices,omitempty"`
	ConnectedAgents *int64 `json:"connected_agents,omitempty"`
	// AssignedWork is what the site's worker is doing or has waiting
	// (sites only).
	AssignedWork *assignedWorkJSON `json:"assigned_work,omitempty"`
	// TemporalUIURL lists the queue's workflows in the Temporal UI (absent
	// when no Temporal UI is configured).
	TemporalUIURL string `json:"temporal_ui_url,omitempty"`
	// RecentWorkflowRuns are the queue's newest workflows (at most 5).
	RecentWorkflowRuns []recentWorkflowJSON `json:"recent_workflow_runs"`
}

// recentWorkflowJSON is one of a queue's newest workflows.
type recentWorkflowJSON struct {
	WorkflowID string    `json:"workflow_id"`
	Type       string    `json:"type"`
	Status     string    `json:"status" openapi:"enum=running|completed|failed|canceled|terminated|continued_as_new|timed_out|unspecified"`
	StartTime  time.Time `json:"start_time"`
	// TemporalUIURL opens the run in the Temporal UI (absent without one).
	TemporalUIURL string `json:"temporal_ui_url,omitempty"`
}

// assignedWorkJSON is a site's work: agent operations sent and awaiting
// the agent's reply (running) or not yet written to its socket (queued),
// and job runs with one of the site's devices running (running) or only
// pending ones (queued).
type assignedWorkJSON struct {
	OperationsRunning int64 `json:"operations_running"`
	OperationsQueued  int64 `json:"operations_queued"`
	JobsRunning       int64 `json:"jobs_running"`
	JobsQueued        int64 `json:"jobs_queued"`
}

// serverWorkers reports every worker queue: what this process runs, and
// who polls each queue according to Temporal (any process).
func (s *Server) serverWorkers(w http.ResponseWriter, r *http.Request) {
	history, err := queryInt(r, "history_seconds", 3600, 0, 86400)
	if err != nil {
		writeError(w, r, s.Log, err)
		return
	}
	list, err := s.Sites.List(r.Context(), cairn.AllSites)
	if err != nil {
		writeError(w, r, s.Log, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	since := s.Now().Add(-time.Duration(history) * time.Second)
	engine := s.describeWorker(ctx, workflows.EngineTaskQueue, since)
	engine.Name = "Engine"
	online := devices.DefaultOnlineWindow
	if s.Devices != nil {
		online = s.Devices.OnlineWindow()
	}
	load, err := s.Store.ServerSiteWorkload(ctx, db.ServerSiteWorkloadParams{OnlineSeconds: online.Seconds(), SocketSeconds: devices.SocketWindow.Seconds()})
	if err != nil {
		writeError(w, r, s.Log, err)
		return
	}
	bySite := make(map[cairn.SiteID]db.ServerSiteWorkloadRow, len(load))
	for _, l := range load {
		bySite[l.SiteID] = l
	}
	out := make([]workerJSON, len(list))
	for i, st := range list {
		wj := s.describeWorker(ctx, workflows.SiteTaskQueue(st.Slug), since)
		id, total := st.ID, st.DeviceCount
		wj.SiteID, wj.Name, wj.Slug, wj.TotalDevices = &id, st.Name, st.Slug, &total
		l := bySite[st.ID]
		wj.OnlineDevices, wj.ConnectedAgents = &l.OnlineDevices, &l.ConnectedAgents
		wj.AssignedWork = &assignedWorkJSON{OperationsRunning: l.OperationsRunning, OperationsQueued: l.OperationsQueued,
			JobsRunning: l.JobsRunning, JobsQueued: l.JobsQueued}
		out[i] = wj
	}
	writeJSON(w, http.StatusOK, serverWorkersJSON{Engine: engine, Sites: out, HistorySeconds: history})
}

type serverWorkersJSON struct {
	Engine         workerJSON   `json:"engine"`
	Sites          []workerJSON `json:"sites"`
	HistorySeconds int          `json:"history_seconds"`
}

func (s *Server) describeWorker(ctx context.Context, queue string, since time.Time) workerJSON {
	wj := workerJSON{TaskQueue: queue, State: workers.StateStopped, Pollers: []pollerJSON{}, TemporalUIURL: s.temporalUIQueueURL(queue),
		RecentWorkflowRuns: []recentWorkflowJSON{}}
	if s.Workers != nil {
		for _, st := range s.Workers.Statuses() {
			if st.TaskQueue == queue {
				wj.Local, wj.State, wj.Error = true, st.State, st.Error
			}
		}
	}
	info, err := workers.Describe(ctx, s.Temporal, s.Namespace, queue, since)
	if err != nil {
		s.ctxLog(ctx).Warn("describe task queue", "task_queue", queue, "err", err)
		return wj
	}
	for _, p := range info.Pollers {
		wj.Pollers = append(wj.Pollers, pollerJSON{Identity: p.Identity, LastAccessTime: p.LastAccess})
	}
	// A queue polled within the last minute has a live worker somewhere,
	// even when it is not this process's.
	if info.Live && wj.State != workers.StateFailed {
		wj.State = workers.StateRunning
	}
	wj.RecentWorkflows, wj.RunningWorkflows = info.RecentWorkflows, info.RunningWorkflows
	for _, w := range info.Recent {
		rw := recentWorkflowJSON{WorkflowID: w.WorkflowID, Type: w.Type, Status: w.Status, StartTime: w.StartTime}
		if base := s.temporalUIBase(); base != "" {
			rw.TemporalUIURL = base + "/workflows/" + url.PathEscape(w.WorkflowID) + "/" + url.PathEscape(w.RunID)
		}
		wj.RecentWorkflowRuns = append(wj.RecentWorkflowRuns, rw)
	}
	return wj
}

// temporalUIQueueURL is the Temporal UI's list of queue's workflows, in
// the first Temporal UI the Engine knows ("" when none is).
func (s *Server) temporalUIQueueURL(queue string) string {
	base := s.temporalUIBase()
	if base == "" {
		return ""
	}
	return base + "/workflows?query=" + url.QueryEscape(fmt.Sprintf("TaskQueue=%q", queue))
}

// temporalUIBase is the namespace's page in the first Temporal UI the
// Engine knows ("" when none is).
func (s *Server) temporalUIBase() string {
	if len(s.TemporalUIOrigins) == 0 {
		return ""
	}
	ns := s.Namespace
	if ns == "" {
		ns = "default"
	}
	return strings.TrimRight(s.TemporalUIOrigins[0], "/") + "/namespaces/" + url.PathEscape(ns)
}
