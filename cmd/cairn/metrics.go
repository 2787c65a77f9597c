package main

import "net/http"

// metricsPath is where Prometheus scrapes the Engine.
const metricsPath = "/metrics"

// withMetrics serves metrics at /metrics in front of the API on a listener
// that exposes them, and answers 404 there on one that does not (rather
// than the console, which would answer 200 to any path).
func withMetrics(api, metrics http.Handler, expose bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != metricsPath {
			api.ServeHTTP(w, r)
			return
		}
		if !expose {
			http.NotFound(w, r)
			return
		}
		metrics.ServeHTTP(w, r)
	})
}

// metricsOnHTTP reports whether the plain-HTTP listener (CAIRN_HTTP_ADDR)
// serves /metrics: when it is loopback, so only this machine (a local
// Prometheus or its agent) reads it, or when CAIRN_METRICS_PUBLIC=1. A
// non-loopback plain-HTTP address sits behind a public proxy.
func (c config) metricsOnHTTP() bool { return c.MetricsPublic || isLoopback(c.HTTPAddr) }

// metricsOnHTTPS reports whether the HTTPS listener, the one agents and
// operators reach, serves /metrics: only with CAIRN_METRICS_PUBLIC=1.
func (c config) metricsOnHTTPS() bool { return c.MetricsPublic }
