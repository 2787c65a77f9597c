package runtime

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/runtime/fakeengine"
)

func TestWatchdogReason(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	const threshold = 90 * time.Second
	for _, tc := range []struct {
		name string
		st   SocketStatus
		want string
	}{
		{"connected, recent traffic", SocketStatus{State: SocketConnected, Since: ago(time.Hour), LastTraffic: ago(10 * time.Second)}, ""},
		{"connected, silent", SocketStatus{State: SocketConnected, Since: ago(time.Hour), LastTraffic: ago(91 * time.Second)}, "connected without traffic"},
		{"just connected, traffic before", SocketStatus{State: SocketConnected, Since: ago(time.Second), LastTraffic: ago(time.Hour)}, ""},
		{"connecting briefly", SocketStatus{State: SocketConnecting, Since: ago(89 * time.Second), DownSince: ago(89 * time.Second)}, ""},
		{"connecting too long", SocketStatus{State: SocketConnecting, Since: ago(91 * time.Second), DownSince: ago(91 * time.Second)}, "now connecting"},
		{"disconnected too long", SocketStatus{State: SocketDisconnected, Since: ago(2 * time.Minute)}, "now disconnected"},
		{"disconnected briefly", SocketStatus{State: SocketDisconnected, Since: ago(time.Second), DownSince: ago(time.Second)}, ""},
		{"retrying for too long", SocketStatus{State: SocketConnecting, Since: ago(time.Second), DownSince: ago(91 * time.Second)}, "not connected for 1m31s"},
	} {
		got := watchdogReason(tc.st, now, threshold)
		if tc.want == "" {
			require.Empty(t, got, tc.name)
		} else {
			require.Contains(t, got, tc.want, tc.name)
		}
	}
}

func TestWatchdogRestartsTheLoop(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.enroll(t)
	// The worker never acknowledges and the agent would wait long for it:
	// only the watchdog ends the wait.
	e.engine.SetSocketModes(fakeengine.NoAck)
	opts := e.options()
	opts.Timing.AckTimeout = time.Minute
	opts.Timing.WatchdogThreshold = 150 * time.Millisecond
	began := time.Now()
	a := start(t, opts)

	nextConn(t, e.engine)
	require.GreaterOrEqual(t, time.Since(began), 150*time.Millisecond)
	require.Equal(t, 2, e.engine.Count("status:"+PhaseStarting), "the rebuilt loop starts with a new startup status")
	restarted := e.engine.Statuses()
	var found bool
	for _, s := range restarted {
		for _, m := range s.Milestones {
			if m.Name == MilestoneLoopRestarted && strings.Contains(m.Detail, "socket not connected for") {
				found = true
			}
		}
	}
	require.True(t, found, "the restart and its reason are in the timeline")
	require.Eventually(t, func() bool { return a.Socket().State == SocketConnected }, wait, tick)
}

func TestSocketTrackerDownSince(t *testing.T) {
	t.Parallel()
	clock := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	s := newSocketTracker(now, nil)
	start := clock
	for _, st := range []SocketState{SocketConnecting, SocketDisconnected, SocketConnecting} {
		clock = clock.Add(time.Minute)
		s.set(st, "")
	}
	require.Equal(t, start, s.get().DownSince, "attempts do not reset the outage")
	require.Contains(t, watchdogReason(s.get(), clock, 90*time.Second), "not connected for 3m0s")

	clock = clock.Add(time.Second)
	s.set(SocketConnected, "w")
	require.True(t, s.get().DownSince.IsZero())
	clock = clock.Add(time.Second)
	s.set(SocketDisconnected, "")
	require.Equal(t, clock, s.get().DownSince)
}
