package runtime

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/runtime/fakeengine"
)

// syncBuffer is a bytes.Buffer safe for the simulator's writer.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestSimulate(t *testing.T) {
	t.Parallel()
	engine := fakeengine.New(t, testCode)
	engine.SetAutoApprove(true)
	engine.RateLimitEnroll(2, 0)
	var out syncBuffer
	timing := testTiming()
	timing.HeartbeatInterval = 100 * time.Millisecond
	sum, err := Simulate(t.Context(), SimOptions{
		ServerURL: engine.URL, Code: testCode, Count: 5, Concurrency: 2, Duration: 1500 * time.Millisecond,
		Prefix: "lab", Version: "test", Timing: timing, SummaryEvery: 300 * time.Millisecond, Out: &out,
	})
	require.NoError(t, err)

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.GreaterOrEqual(t, len(lines), 3, out.String())
	require.Contains(t, lines[0], "simulate t=")
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &got), lines[len(lines)-1])
	for _, k := range []string{"agents", "enrolled", "connected", "heartbeats", "heartbeat_rate", "latency_p50_ms",
		"latency_p99_ms", "errors", "time_to_all_connected_ms"} {
		require.Contains(t, got, k)
	}
	require.Equal(t, 5, sum.Agents)
	require.Equal(t, 5, sum.Enrolled)
	require.Equal(t, 5, sum.Connected)
	require.NotNil(t, sum.TimeToAllConnected)
	require.Positive(t, sum.Heartbeats)
	require.Positive(t, sum.HeartbeatRate)
	require.Positive(t, sum.LatencyP99)
	require.Equal(t, map[string]int64{"rate_limited": 2}, sum.Errors, "429s are counted and retried")

	// Each agent is its own device: own key, hostname and fingerprint.
	keys, hosts, fps := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, r := range engine.EnrollRequests() {
		require.True(t, r.SignatureOK)
		keys[r.Request.PublicKey], hosts[r.Request.Hostname], fps[r.Request.Fingerprint] = true, true, true
	}
	require.Len(t, keys, 5)
	require.Len(t, fps, 5)
	require.Len(t, hosts, 5)
	require.True(t, hosts["lab-00001"] && hosts["lab-00005"])
	require.Equal(t, 5, engine.Count("connect_agent"))
}

func TestPercentiles(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in       []float32
		p50, p99 float64
	}{
		{nil, 0, 0},
		{[]float32{7}, 7, 7},
		{[]float32{5, 1, 3, 2, 4}, 3, 5},
	} {
		p50, p99 := percentiles(tc.in)
		require.Equal(t, tc.p50, p50)
		require.Equal(t, tc.p99, p99)
	}
}
