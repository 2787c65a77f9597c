package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/inventory"
	"github.com/cairn-rmm/cairn/agent/proto"
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

func TestSimulatedOperations(t *testing.T) {
	t.Parallel()
	engine := fakeengine.New(t, testCode)
	engine.SetAutoApprove(true)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := Simulate(ctx, SimOptions{ServerURL: engine.URL, Code: testCode, Count: 1, Version: "test", Timing: testTiming()})
		done <- err
	}()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	conn := nextConn(t, engine)
	inv := inventory.Synthetic(0)
	proc := inv.Processes[len(inv.Processes)-1]
	svc := inv.Services[0]

	for _, tc := range []struct {
		typ     string
		payload any
		check   func(t *testing.T, reply json.RawMessage)
	}{
		{proto.EventProcessManagement, proto.ProcessRequest{Action: proto.ProcessList}, func(t *testing.T, r json.RawMessage) {
			var snap proto.ProcessSnapshot
			require.NoError(t, json.Unmarshal(r, &snap))
			require.Equal(t, inv.Processes, snap.Processes)
		}},
		{proto.EventProcessManagement, proto.ProcessRequest{Action: proto.ProcessTerminate, PID: proc.PID, Name: proc.Name}, func(t *testing.T, r json.RawMessage) {
			require.JSONEq(t, fmt.Sprintf(`{"pid":%d,"name":%q,"terminated":true,"signal":"SIGTERM"}`, proc.PID, proc.Name), string(r))
		}},
		{proto.EventProcessManagement, proto.ProcessRequest{Action: proto.ProcessTerminate, PID: proc.PID, Name: "other"}, func(t *testing.T, r json.RawMessage) {
			require.Contains(t, string(r), `"error":"process_mismatch"`)
		}},
		{proto.EventServiceControl, proto.ServiceActionRequest{Name: svc.Name, Action: proto.ServiceStop}, func(t *testing.T, r json.RawMessage) {
			var res proto.ServiceActionResult
			require.NoError(t, json.Unmarshal(r, &res))
			require.Equal(t, "stopped", res.State)
			require.Equal(t, "stopped", res.Service.State)
			require.Len(t, res.Services, len(inv.Services))
		}},
		{proto.EventServiceControl, proto.ServiceActionRequest{Name: "nope.service", Action: proto.ServiceStart}, func(t *testing.T, r json.RawMessage) {
			require.Contains(t, string(r), `"error":"not_found"`)
		}},
		{proto.EventSoftwareRefresh, struct{}{}, func(t *testing.T, r json.RawMessage) {
			var res proto.SoftwareRefreshResult
			require.NoError(t, json.Unmarshal(r, &res))
			require.Equal(t, inv.Software, res.Software)
		}},
		{proto.EventPatchRefresh, struct{}{}, func(t *testing.T, r json.RawMessage) {
			var res proto.PatchRefreshResult
			require.NoError(t, json.Unmarshal(r, &res))
			require.Len(t, res.Patches, len(inv.Patches))
		}},
	} {
		payload, err := json.Marshal(tc.payload)
		require.NoError(t, err)
		id := randomID()
		require.NoError(t, conn.Send(ctx, proto.Envelope{Type: tc.typ, ID: id, OperationID: id, Payload: payload}))
		env, err := conn.Read(ctx)
		require.NoError(t, err)
		require.Equal(t, id, env.ID)
		tc.check(t, env.Payload)
	}
}
