package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/stretchr/testify/require"
)

// exercised is a registry whose every series has a sample.
func exercised(t *testing.T) (*Metrics, map[string]bool) {
	t.Helper()
	m := New()
	m.Heartbeat()
	m.OperationStarted("k")
	m.OperationFinished("k", "completed")
	m.StreamOpened()
	m.TemporalError("api")
	m.WatchAgents(func() map[string]int { return map[string]int{"hq": 2} })
	r := chi.NewRouter()
	r.Use(m.Middleware)
	r.Get("/api/devices/{hostname}", func(w http.ResponseWriter, _ *http.Request) {})
	r.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/api/devices/pc-1", nil))
	families, err := m.reg.Gather()
	require.NoError(t, err)
	names := map[string]bool{}
	for _, f := range families {
		names[f.GetName()] = true
	}
	// The pool collector needs a live pool to sample; its descriptions
	// name its series.
	for _, d := range newPoolCollector(nil).descs() {
		names[regexp.MustCompile(`fqName: "([^"]+)"`).FindStringSubmatch(d.String())[1]] = true
	}
	return m, names
}

func TestRoutesAreLabelledByPattern(t *testing.T) {
	t.Parallel()
	m, _ := exercised(t)
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	res, err := http.Get(srv.URL)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	b := string(body)
	require.Contains(t, b, `cairn_http_requests_total{method="GET",route="/api/devices/{hostname}",status="200"} 1`)
	require.NotContains(t, b, "pc-1")
	require.Contains(t, b, `cairn_agents_connected{site="hq"} 2`)
}

// The sample dashboard reads only series the Engine exports.
func TestDashboardUsesExportedSeries(t *testing.T) {
	t.Parallel()
	_, names := exercised(t)
	raw, err := os.ReadFile("../../docs/grafana-dashboard.json")
	require.NoError(t, err)
	used := regexp.MustCompile(`\b(cairn_[a-z_]+|process_[a-z_]+|go_[a-z_]+)`).FindAllString(string(raw), -1)
	require.NotEmpty(t, used)
	for _, u := range used {
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(u, "_bucket"), "_count"), "_sum")
		require.True(t, names[base] || names[u], "the dashboard reads %s, which the Engine does not export", u)
	}
}

// BenchmarkMiddleware is the cost the metrics add to each request.
func BenchmarkMiddleware(b *testing.B) {
	m := New()
	r := chi.NewRouter()
	r.Use(m.Middleware)
	r.Get("/api/devices/{hostname}", func(w http.ResponseWriter, _ *http.Request) {})
	req := httptest.NewRequest("GET", "/api/devices/pc-1", nil)
	for b.Loop() {
		r.ServeHTTP(httptest.NewRecorder(), req)
	}
}
