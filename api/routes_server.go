package api

import (
	"context"
	"net/http"
	"time"

	"github.com/cairn-rmm/cairn"
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
	out := make([]workerJSON, len(list))
	for i, st := range list {
		wj := s.describeWorker(ctx, workflows.SiteTaskQueue(st.Slug), since)
		id, devices := st.ID, st.DeviceCount
		wj.SiteID, wj.Name, wj.Slug, wj.TotalDevices = &id, st.Name, st.Slug, &devices
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
	wj := workerJSON{TaskQueue: queue, State: workers.StateStopped, Pollers: []pollerJSON{}}
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
	wj.RecentWorkflows = info.RecentWorkflows
	return wj
}
