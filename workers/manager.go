// Package workers wires Temporal workers: the Engine queue and one worker
// per site, started and stopped as sites come and go without a restart.
package workers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"sync"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/workflows"
)

// Worker states reported by the manager.
const (
	StateStarting = "starting"
	StateRunning  = "running"
	StateFailed   = "failed"
	StateStopped  = "stopped"
)

// Status describes one worker of this process.
type Status struct {
	TaskQueue string
	State     string
	Error     string
	Since     time.Time
}

// Manager runs this process's workers.
type Manager struct {
	client   client.Client
	log      *slog.Logger
	identity string
	// serves decides which site slugs this process runs workers for
	// (`cairn serve` runs them all; `cairn worker --site` some).
	serves func(slug string) bool

	// activities are the activity structs (with their dependencies) every
	// worker registers besides the probe.
	activities []any
	// workflows are every capability's workflow functions.
	workflows []any

	mu      sync.Mutex
	running map[string]*managed // task queue -> worker
	// restarts are the restart requests this process carried out, by
	// task queue: a retried request restarts nothing twice.
	restarts map[string]string
	onStop   []func(slug string)
	// ready says whether workers may run here now (nil: always): a
	// process whose master cipher is locked can neither open nor seal
	// workflow payloads, so it polls no task queue.
	ready func() bool
}

// ErrNotReady: this process may not run workers now (SetReady).
var ErrNotReady = errors.New("workers: this process cannot run workers now (its master cipher is locked)")

// SetReady sets what decides whether workers may run; call it before the
// first worker starts.
func (m *Manager) SetReady(f func() bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ready = f
}

func (m *Manager) isReady() bool {
	m.mu.Lock()
	f := m.ready
	m.mu.Unlock()
	return f == nil || f()
}

type managed struct {
	w      worker.Worker
	status Status
}

// NewManager returns a manager; serves nil means every site.
func NewManager(c client.Client, log *slog.Logger, serves func(slug string) bool) *Manager {
	host, _ := os.Hostname()
	if serves == nil {
		serves = func(string) bool { return true }
	}
	return &Manager{
		client:   c,
		log:      log,
		identity: fmt.Sprintf("cairn@%s:%d", host, os.Getpid()),
		serves:   serves,
		running:  map[string]*managed{},
		restarts: map[string]string{},
	}
}

// Identity names this process to Temporal (cairn@host:pid).
func (m *Manager) Identity() string { return m.identity }

// Status returns the status of this process's worker of queue.
func (m *Manager) Status(queue string) (Status, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.running[queue]
	if !ok {
		return Status{}, false
	}
	return r.status, true
}

// RestartAfter restarts this process's worker of queue (stopped, what it
// held let go, started again) once after closes: an activity running on
// that very worker asks, and the worker's stop must not wait on it. A
// request already carried out here is not carried out again (a retried
// activity): done is false then. ok is false when this process runs no
// worker of queue.
func (m *Manager) RestartAfter(queue, request string, after <-chan struct{}) (done, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, running := m.running[queue]; !running {
		return false, false
	}
	if m.restarts[queue] == request {
		return false, true
	}
	m.restarts[queue] = request
	go func() {
		<-after
		m.stopQueue(queue)
		if err := m.start(queue); err != nil {
			m.log.Error("restart worker", "task_queue", queue, "err", err)
		}
	}()
	return true, true
}

// Register adds activity structs every worker of this process registers;
// call it before the first worker starts.
func (m *Manager) Register(acts ...any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.activities = append(m.activities, acts...)
}

// RegisterWorkflows adds workflow functions every worker of this process
// registers; call it before the first worker starts.
func (m *Manager) RegisterWorkflows(wfs ...any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.workflows = append(m.workflows, wfs...)
}

// register puts every workflow and activity on a worker. All queues carry
// the same registrations; which work lands where is decided by the
// task queue the starter names. The caller holds m.mu.
func (m *Manager) register(w worker.Worker, identity string) {
	for _, wf := range m.workflows {
		w.RegisterWorkflow(wf)
	}
	w.RegisterActivity(&activities.Probe{Identity: identity})
	for _, a := range m.activities {
		w.RegisterActivity(a)
	}
}

// StartEngine starts the worker of the engine queue.
func (m *Manager) StartEngine() error {
	return m.start(workflows.EngineTaskQueue)
}

// StartEngineOn starts the Engine-wide worker on another queue name: tests
// that share one Temporal server give each Engine database its own queue,
// so one test's worker never runs another's approvals.
func (m *Manager) StartEngineOn(queue string) error {
	return m.start(queue)
}

// Sync makes the running site workers match slugs (those this process
// serves); none while the process is not ready.
func (m *Manager) Sync(slugs []string) {
	want := map[string]bool{}
	ready := m.isReady()
	for _, s := range slugs {
		if ready && m.serves(s) {
			want[workflows.SiteTaskQueue(s)] = true
		}
	}
	m.mu.Lock()
	var stop []string
	for q := range m.running {
		if _, isSite := workflows.SiteSlugFromQueue(q); isSite && !want[q] {
			stop = append(stop, q)
		}
	}
	m.mu.Unlock()
	for _, q := range stop {
		m.stopQueue(q)
	}
	for q := range want {
		if err := m.start(q); err != nil {
			m.log.Error("site worker failed to start", "task_queue", q, "err", err)
		}
	}
}

// Statuses lists this process's workers by task queue.
func (m *Manager) Statuses() []Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Status, 0, len(m.running))
	for _, r := range m.running {
		out = append(out, r.status)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TaskQueue < out[j].TaskQueue })
	return out
}

// Stop stops every worker.
func (m *Manager) Stop() {
	m.mu.Lock()
	queues := make([]string, 0, len(m.running))
	for q := range m.running {
		queues = append(queues, q)
	}
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, q := range queues {
		wg.Add(1)
		go func() { defer wg.Done(); m.stopQueue(q) }()
	}
	wg.Wait()
}

func (m *Manager) start(queue string) error {
	if !m.isReady() {
		return ErrNotReady
	}
	m.mu.Lock()
	if r, ok := m.running[queue]; ok && r.status.State != StateFailed {
		m.mu.Unlock()
		return nil
	}
	identity := m.identity + "/" + queue
	w := worker.New(m.client, queue, worker.Options{Identity: identity})
	m.register(w, identity) // m.mu is held: m.activities is stable
	r := &managed{w: w, status: Status{TaskQueue: queue, State: StateStarting, Since: time.Now().UTC()}}
	m.running[queue] = r
	m.mu.Unlock()

	err := w.Start()
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		r.status = Status{TaskQueue: queue, State: StateFailed, Error: err.Error(), Since: time.Now().UTC()}
		return err
	}
	r.status.State, r.status.Since = StateRunning, time.Now().UTC()
	m.log.Info("worker started", "task_queue", queue)
	return nil
}

func (m *Manager) stopQueue(queue string) {
	m.mu.Lock()
	r, ok := m.running[queue]
	delete(m.running, queue)
	hooks := append([]func(string){}, m.onStop...)
	m.mu.Unlock()
	if !ok {
		return
	}
	if slug, isSite := workflows.SiteSlugFromQueue(queue); isSite {
		for _, f := range hooks {
			f(slug)
		}
	}
	if r.status.State == StateRunning {
		r.w.Stop()
	}
	m.log.Info("worker stopped", "task_queue", queue)
}

// Runs reports whether this process runs the site worker of slug and it
// started: only then does it take that site's agent sockets.
func (m *Manager) Runs(slug string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.running[workflows.SiteTaskQueue(slug)]
	return ok && r.status.State == StateRunning
}

// OnSiteStop registers f to be called with the slug whenever this process
// stops a site worker (the site was deleted or renamed, or the process is
// stopping), so what the worker held, like agent sockets, goes with it.
func (m *Manager) OnSiteStop(f func(slug string)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.onStop = append(m.onStop, f)
}

// Has reports whether this process runs a worker for queue.
func (m *Manager) Has(queue string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.running[queue]
	return ok
}

// Run keeps site workers in step with the sites table: it syncs once, then
// again whenever changes says so (a site was created, renamed or deleted
// on any replica), until ctx ends.
func (m *Manager) Run(ctx context.Context, listSlugs func(context.Context) ([]string, error), changes <-chan struct{}) {
	resync := func() {
		slugs, err := listSlugs(ctx)
		if err != nil {
			if ctx.Err() == nil {
				m.log.Error("list sites for workers", "err", err)
			}
			return
		}
		m.Sync(slugs)
	}
	resync()
	// A periodic resync covers a notification lost while the listener
	// reconnected.
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-changes:
			resync()
		case <-tick.C:
			resync()
		}
	}
}

// RunningSites lists the slugs whose site workers run here.
func (m *Manager) RunningSites() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for q, r := range m.running {
		if slug, ok := workflows.SiteSlugFromQueue(q); ok && r.status.State == StateRunning {
			out = append(out, slug)
		}
	}
	sort.Strings(out)
	return out
}
