// Package metrics is the Engine's Prometheus instrumentation: one private
// registry per Engine (never the global default, so tests and several
// Engines in one process do not collide) and the series the Grafana
// dashboard in docs/ reads. Every method is safe on a nil *Metrics, so a
// service built without metrics (a unit test) records nothing.
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics holds one Engine's registry and collectors.
type Metrics struct {
	reg *prometheus.Registry

	httpRequests   *prometheus.CounterVec
	httpDuration   *prometheus.HistogramVec
	heartbeats     prometheus.Counter
	opsStarted     *prometheus.CounterVec
	opsFinished    *prometheus.CounterVec
	sseStreams     prometheus.Gauge
	temporalErrors *prometheus.CounterVec
}

// New returns a registry with the Engine's series, the Go runtime's and
// the process's.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.httpRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "cairn_http_requests_total",
		Help: "HTTP requests answered, by chi route pattern (never the raw path), method and status.",
	}, []string{"route", "method", "status"})
	m.httpDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "cairn_http_request_duration_seconds",
		Help: "Time to answer an HTTP request, by route pattern and method (event streams and sockets count their whole life).",
		// Up to 30 s: beyond that a request is a stream, not a call.
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{"route", "method"})
	m.heartbeats = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "cairn_agent_heartbeats_total",
		Help: "Agent heartbeats accepted by this process.",
	})
	m.opsStarted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "cairn_operations_started_total",
		Help: "Device operations started (recorded in the device activity), by kind.",
	}, []string{"kind"})
	m.opsFinished = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "cairn_operations_finished_total",
		Help: "Device operations finished, by kind and status (completed, failed, cancelled).",
	}, []string{"kind", "status"})
	m.sseStreams = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "cairn_sse_streams_open",
		Help: "Operator event streams (SSE) open on this process.",
	})
	m.temporalErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "cairn_temporal_client_errors_total",
		Help: "Temporal calls of the Engine that failed, by where they were made.",
	}, []string{"operation"})
	m.reg.MustRegister(m.httpRequests, m.httpDuration, m.heartbeats, m.opsStarted, m.opsFinished, m.sseStreams,
		m.temporalErrors, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry is the private registry (tests gather from it).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Middleware counts and times requests by the chi route pattern they
// matched, read after the router ran; a request no route matched is
// labelled "unmatched", so probes of random paths add no series.
func (m *Metrics) Middleware(next http.Handler) http.Handler {
	if m == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ww, ok := w.(middleware.WrapResponseWriter)
		if !ok {
			ww = middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		}
		next.ServeHTTP(ww, r)
		route := RoutePattern(r)
		status := ww.Status()
		if status == 0 {
			// A hijacked socket or a handler that wrote nothing.
			status = http.StatusOK
		}
		m.httpRequests.WithLabelValues(route, r.Method, strconv.Itoa(status)).Inc()
		m.httpDuration.WithLabelValues(route, r.Method).Observe(time.Since(start).Seconds())
	})
}

// RoutePattern is the chi pattern r matched ("unmatched" when none did).
func RoutePattern(r *http.Request) string {
	if rc := chi.RouteContext(r.Context()); rc != nil {
		if p := rc.RoutePattern(); p != "" {
			return p
		}
	}
	return "unmatched"
}

// Heartbeat counts an accepted agent heartbeat.
func (m *Metrics) Heartbeat() {
	if m != nil {
		m.heartbeats.Inc()
	}
}

// OperationStarted counts a device operation of kind started.
func (m *Metrics) OperationStarted(kind string) {
	if m != nil {
		m.opsStarted.WithLabelValues(kind).Inc()
	}
}

// OperationFinished counts a device operation of kind ended with status.
func (m *Metrics) OperationFinished(kind, status string) {
	if m != nil {
		m.opsFinished.WithLabelValues(kind, status).Inc()
	}
}

// StreamOpened counts an open event stream; the returned func closes it.
func (m *Metrics) StreamOpened() (closed func()) {
	if m == nil {
		return func() {}
	}
	m.sseStreams.Inc()
	return m.sseStreams.Dec
}

// TemporalError counts a failed Temporal call made at operation.
func (m *Metrics) TemporalError(operation string) {
	if m != nil {
		m.temporalErrors.WithLabelValues(operation).Inc()
	}
}

// WatchAgents exports the agent sockets this process holds, by site slug,
// read from count at each scrape (the hub's own map, so the gauge cannot
// drift from it).
func (m *Metrics) WatchAgents(count func() map[string]int) {
	m.reg.MustRegister(agentCollector{count: count, desc: prometheus.NewDesc("cairn_agents_connected",
		"Agent sockets held by this process, by site.", []string{"site"}, nil)})
}

type agentCollector struct {
	count func() map[string]int
	desc  *prometheus.Desc
}

func (c agentCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c agentCollector) Collect(ch chan<- prometheus.Metric) {
	for site, n := range c.count() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), site)
	}
}

// WatchPool exports the PostgreSQL pool's statistics, read at each scrape.
func (m *Metrics) WatchPool(stat func() *pgxpool.Stat) {
	m.reg.MustRegister(newPoolCollector(stat))
}
