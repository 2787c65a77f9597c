package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/installlinks"
)

// scrape reads the replica's /metrics as Prometheus would.
func (e *engine) scrape(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(e.core.MetricsHandler())
	defer srv.Close()
	res, err := http.Get(srv.URL + "/metrics")
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return string(b)
}

// sample is the value of the series named exactly (labels in Prometheus'
// sorted order) in a scrape, and whether it is there.
func sample(text, series string) (float64, bool) {
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f, err == nil
		}
	}
	return 0, false
}

// sumOf adds the values of every series matching re.
func sumOf(text string, re *regexp.Regexp) float64 {
	var sum float64
	for _, line := range strings.Split(text, "\n") {
		if m := re.FindStringSubmatch(line); m != nil {
			f, _ := strconv.ParseFloat(m[len(m)-1], 64)
			sum += f
		}
	}
	return sum
}

// A scrape after traffic shows the series moving: requests by route
// pattern (never the raw path), a heartbeat, the connected-agents gauge
// up then down, an operation started and finished, an event stream open
// then closed, and the pool's statistics.
func TestMetricsAfterTraffic(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	slug := uniqueSlug("metrics")
	r := f.do(t, "POST", "/api/sites", admin, map[string]any{"name": "Metrics", "site_worker_slug": slug})
	require.Equal(t, 201, r.Status, r.Raw)
	site := int64(r.Body["site_id"].(float64))
	host := "metrics-" + slug
	o := f.opsAgent(t, admin, site, host)
	connected := fmt.Sprintf(`cairn_agents_connected{site=%q}`, slug)
	require.Eventually(t, func() bool {
		v, ok := sample(f.engine.scrape(t), connected)
		return ok && v == 1
	}, 30*time.Second, 20*time.Millisecond, "the agent's socket counts for its site")

	hb := o.device(t, "POST", proto.PathHeartbeat, proto.Heartbeat{SentAt: time.Now().UTC(), AgentVersion: "1.2.3", BootID: "boot-1",
		Metrics: proto.Metrics{UptimeSeconds: 5, LoggedInUsers: []string{}}})
	require.Equal(t, 200, hb.Status, hb.Raw)
	ps := f.do(t, "GET", "/api/device/processes/"+host+"?max_age_seconds=0", admin, nil)
	require.Equal(t, 200, ps.Status, ps.Raw)

	text := f.engine.scrape(t)
	v, ok := sample(text, `cairn_http_requests_total{method="GET",route="/api/device/processes/{hostname}",status="200"}`)
	require.True(t, ok, "requests are labelled by route pattern:\n%s", text)
	require.EqualValues(t, 1, v)
	require.NotContains(t, text, host, "no raw path (nor any hostname) becomes a label")
	v, _ = sample(text, `cairn_http_request_duration_seconds_count{method="GET",route="/api/device/processes/{hostname}"}`)
	require.EqualValues(t, 1, v)
	v, _ = sample(text, "cairn_agent_heartbeats_total")
	require.EqualValues(t, 1, v)
	require.GreaterOrEqual(t, sumOf(text, regexp.MustCompile(`^cairn_operations_started_total\{kind="[^"]+"\} (\S+)$`)), 1.0)
	require.GreaterOrEqual(t, sumOf(text, regexp.MustCompile(`^cairn_operations_finished_total\{kind="[^"]+",status="completed"\} (\S+)$`)), 1.0)
	v, _ = sample(text, "cairn_db_pool_acquires_total")
	require.Positive(t, v)
	_, ok = sample(text, "cairn_db_pool_max_connections")
	require.True(t, ok)

	// The socket closes: the gauge follows the hub.
	require.NoError(t, o.conn.Close(websocket.StatusNormalClosure, "done"))
	require.Eventually(t, func() bool {
		v, ok := sample(f.engine.scrape(t), connected)
		return !ok || v == 0
	}, 30*time.Second, 20*time.Millisecond, "a closed socket leaves the gauge")

	// An event stream is open while the operator listens.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", f.url+"/api/realtime/events", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+admin)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, 200, res.StatusCode)
	_, err = bufio.NewReader(res.Body).ReadString('\n') // the ready event
	require.NoError(t, err)
	v, _ = sample(f.engine.scrape(t), "cairn_sse_streams_open")
	require.EqualValues(t, 1, v)
	cancel()
	res.Body.Close()
	require.Eventually(t, func() bool {
		v, _ := sample(f.engine.scrape(t), "cairn_sse_streams_open")
		return v == 0
	}, 30*time.Second, 20*time.Millisecond)
}

// Every line logged while serving a request carries its request ID, method
// and route pattern, and after authentication the operator's user_id.
func TestRequestLogsCarryRequestIDAndOperator(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	r := f.do(t, "GET", "/api/sites", admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	id := r.Header.Get("X-Request-Id")
	require.NotEmpty(t, id)
	p, err := f.engine.auth.Authenticate(context.Background(), admin)
	require.NoError(t, err)

	line := f.accessLine(t, func(l map[string]any) bool { return l["request_id"] == id })
	require.Equal(t, "GET", line["method"])
	require.Equal(t, "/api/sites", line["route"])
	require.EqualValues(t, 200, line["status"])
	require.EqualValues(t, p.UserID, line["user_id"], "the operator the request acted for")

	// A device's requests name the device, a refresh too once it is known.
	a := f.enrolled(t, admin, f.createSite(t, admin, "logs"), "logs-01")
	hb := a.device(t, "POST", proto.PathHeartbeat, proto.Heartbeat{SentAt: time.Now().UTC(), AgentVersion: "1.2.3", BootID: "boot-1",
		Metrics: proto.Metrics{LoggedInUsers: []string{}}})
	require.Equal(t, 200, hb.Status, hb.Raw)
	line = f.accessLine(t, func(l map[string]any) bool { return l["request_id"] == hb.Header.Get("X-Request-Id") })
	require.Equal(t, proto.PathHeartbeat, line["route"])
	require.Equal(t, a.guid, line["guid"])
	rf := a.doRefresh(t)
	require.Equal(t, 200, rf.Status, rf.Raw)
	line = f.accessLine(t, func(l map[string]any) bool { return l["request_id"] == rf.Header.Get("X-Request-Id") })
	require.Equal(t, a.guid, line["guid"])

	// A domain package's line, logged while serving the request, carries
	// its request ID and route too.
	bad := f.do(t, "GET", installlinks.PathPrefix+"linux-amd64?site_id=x", "", nil)
	require.Equal(t, 403, bad.Status, bad.Raw)
	var domain map[string]any
	for _, raw := range strings.Split(f.logs.String(), "\n") {
		var l map[string]any
		if json.Unmarshal([]byte(raw), &l) == nil && l["msg"] == "install link refused" {
			domain = l
		}
	}
	require.NotNil(t, domain)
	require.Equal(t, bad.Header.Get("X-Request-Id"), domain["request_id"])
	require.Equal(t, installlinks.PathPrefix+"{platform}", domain["route"])
}

// accessLine is the one "http" line of the fixture's log that match
// selects.
func (f *fixture) accessLine(t *testing.T, match func(map[string]any) bool) map[string]any {
	t.Helper()
	var found []map[string]any
	for _, raw := range strings.Split(f.logs.String(), "\n") {
		var l map[string]any
		if json.Unmarshal([]byte(raw), &l) == nil && l["msg"] == "http" && match(l) {
			found = append(found, l)
		}
	}
	require.Len(t, found, 1, "the request's access line")
	return found[0]
}
