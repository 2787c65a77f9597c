package runtime

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/transport"
)

// simStats aggregates the fleet's hooks. Latencies are kept as float32
// milliseconds: 4 bytes per heartbeat is small even for hours of
// thousands of agents, and exact percentiles need no bucket tuning.
type simStats struct {
	start time.Time
	count int

	heartbeats atomic.Int64
	// socketHBs counts heartbeats answered over the realtime socket.
	socketHBs atomic.Int64
	connected atomic.Int64
	// allConnected is the time to all connected in ns (0: not yet).
	allConnected atomic.Int64

	mu       sync.Mutex
	lat      []float32
	lastLine int // index into lat of the previous progress line
	lastAt   time.Time
	lastHB   int64
	errors   map[string]int64
}

func newSimStats(start time.Time, count int) *simStats {
	return &simStats{start: start, count: count, lastAt: start, errors: map[string]int64{}}
}

func (s *simStats) heartbeat(latency time.Duration, err error) {
	if err != nil {
		return // counted by error
	}
	s.heartbeats.Add(1)
	s.mu.Lock()
	s.lat = append(s.lat, float32(latency.Seconds()*1000))
	s.mu.Unlock()
}

func (s *simStats) call(name string, socket bool) {
	if socket && name == proto.CallHeartbeat {
		s.socketHBs.Add(1)
	}
}

func (s *simStats) error(op string, err error) {
	key := errorKey(op, err)
	s.mu.Lock()
	s.errors[key]++
	s.mu.Unlock()
}

// errorKey is the Engine's code when there is one, else the HTTP status,
// else the operation that failed.
func errorKey(op string, err error) string {
	if errors.Is(err, ErrTokensCleared) {
		return "tokens_cleared"
	}
	if code := transport.Code(err); code != "" {
		return code
	}
	var te *transport.Error
	if errors.As(err, &te) {
		return fmt.Sprintf("http_%d", te.Status)
	}
	return op + "_failed"
}

func (s *simStats) socket(from, to SocketState) {
	switch {
	case to == SocketConnected:
		if s.connected.Add(1) == int64(s.count) {
			s.allConnected.CompareAndSwap(0, max(int64(time.Since(s.start)), 1))
		}
	case from == SocketConnected:
		s.connected.Add(-1)
	}
}

func countFleet(agents []*Agent) (enrolled, connected int) {
	for _, a := range agents {
		if a.Enrolled() {
			enrolled++
		}
		if a.Socket().State == SocketConnected {
			connected++
		}
	}
	return enrolled, connected
}

// line is the progress line: fleet state, rate and latency since the
// previous line, errors so far.
func (s *simStats) line(agents []*Agent) string {
	enrolled, connected := countFleet(agents)
	now := time.Now()
	hb := s.heartbeats.Load()
	s.mu.Lock()
	window := slices.Clone(s.lat[s.lastLine:])
	s.lastLine = len(s.lat)
	rate := float64(hb-s.lastHB) / max(now.Sub(s.lastAt).Seconds(), 1e-9)
	s.lastHB, s.lastAt = hb, now
	errs := maps.Clone(s.errors)
	s.mu.Unlock()
	p50, p99 := percentiles(window)
	return fmt.Sprintf("simulate t=%s enrolled=%d/%d connected=%d hb/s=%.2f p50=%.1fms p99=%.1fms errors=%s",
		now.Sub(s.start).Round(time.Second), enrolled, len(agents), connected, rate, p50, p99, formatErrors(errs))
}

func formatErrors(errs map[string]int64) string {
	if len(errs) == 0 {
		return "none"
	}
	keys := slices.Sorted(maps.Keys(errs))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s:%d", k, errs[k])
	}
	return strings.Join(parts, ",")
}

func (s *simStats) summary(agents []*Agent) SimSummary {
	enrolled, connected := countFleet(agents)
	elapsed := time.Since(s.start)
	s.mu.Lock()
	all := slices.Clone(s.lat)
	errs := maps.Clone(s.errors)
	s.mu.Unlock()
	p50, p99 := percentiles(all)
	hb := s.heartbeats.Load()
	sum := SimSummary{
		Agents: len(agents), Enrolled: enrolled, Connected: connected, Heartbeats: hb,
		HeartbeatRate: round2(float64(hb) / max(elapsed.Seconds(), 1e-9)),
		LatencyP50:    round2(p50), LatencyP99: round2(p99), Errors: errs,
		SocketHeartbeats: s.socketHBs.Load(),
	}
	if ns := s.allConnected.Load(); ns > 0 {
		ms := time.Duration(ns).Milliseconds()
		sum.TimeToAllConnected = &ms
	}
	return sum
}

// percentiles returns the nearest-rank p50 and p99 of ms (0 when empty).
func percentiles(ms []float32) (p50, p99 float64) {
	if len(ms) == 0 {
		return 0, 0
	}
	slices.Sort(ms)
	rank := func(p float64) float64 {
		i := int(p*float64(len(ms))+0.999999) - 1
		return float64(ms[min(max(i, 0), len(ms)-1)])
	}
	return rank(0.50), rank(0.99)
}

func round2(f float64) float64 { return float64(int64(f*100+0.5)) / 100 }
