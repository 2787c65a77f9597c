package runtime

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// SocketState is the realtime socket's state as the watchdog sees it.
type SocketState string

const (
	SocketDisconnected SocketState = "disconnected"
	SocketConnecting   SocketState = "connecting"
	SocketConnected    SocketState = "connected"
)

// SocketStatus is a snapshot of the socket.
type SocketStatus struct {
	State SocketState
	// Since is when State began.
	Since time.Time
	// DownSince is when the socket last stopped being connected (zero while
	// connected): retries alternate connecting and disconnected, and the
	// watchdog judges the whole outage, not each attempt.
	DownSince time.Time
	// LastTraffic is when the last message arrived (zero before any).
	LastTraffic time.Time
	// Worker is the site worker that accepted the socket, when connected.
	Worker string
}

// socketTracker holds the socket state across loop restarts, so the
// watchdog and the agent's status always have one answer.
type socketTracker struct {
	now  func() time.Time
	hook func(from, to SocketState)

	mu sync.Mutex
	st SocketStatus
}

func newSocketTracker(now func() time.Time, hook func(from, to SocketState)) *socketTracker {
	t := now()
	return &socketTracker{now: now, hook: hook, st: SocketStatus{State: SocketDisconnected, Since: t, DownSince: t}}
}

// set changes the state; Since moves only on a change.
func (s *socketTracker) set(state SocketState, worker string) {
	s.mu.Lock()
	from := s.st.State
	if from != state {
		now := s.now()
		s.st.State, s.st.Since = state, now
		switch {
		case state == SocketConnected:
			s.st.DownSince = time.Time{}
		case from == SocketConnected:
			s.st.DownSince = now
		}
	}
	s.st.Worker = worker
	s.mu.Unlock()
	if from != state && s.hook != nil {
		s.hook(from, state)
	}
}

// restart starts a new loop's clock: disconnected since now.
func (s *socketTracker) restart() {
	s.set(SocketDisconnected, "")
	s.mu.Lock()
	s.st.Since = s.now()
	s.st.DownSince = s.st.Since
	s.mu.Unlock()
}

func (s *socketTracker) traffic() {
	s.mu.Lock()
	s.st.LastTraffic = s.now()
	s.mu.Unlock()
}

func (s *socketTracker) get() SocketStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st
}

// WatchdogError ends a loop the local watchdog found stuck.
type WatchdogError struct{ Reason string }

func (e *WatchdogError) Error() string { return "watchdog: " + e.Reason }

// watchdogReason says why the loop must be rebuilt, or "" (SPEC
// "Agent-side behavior" item 5): a socket not connected (connecting or
// disconnected, however often it went between the two) for longer than
// threshold, or connected with no traffic for that long (the read-idle
// deadline should have ended it long before, so the loop is wedged).
func watchdogReason(st SocketStatus, now time.Time, threshold time.Duration) string {
	if st.State == SocketConnected {
		last := st.LastTraffic
		if last.Before(st.Since) {
			last = st.Since
		}
		if idle := now.Sub(last); idle > threshold {
			return fmt.Sprintf("socket connected without traffic for %s", idle.Round(time.Millisecond))
		}
		return ""
	}
	down := st.DownSince
	if down.IsZero() || down.After(st.Since) {
		down = st.Since
	}
	if d := now.Sub(down); d > threshold {
		return fmt.Sprintf("socket not connected for %s (now %s)", d.Round(time.Millisecond), st.State)
	}
	return ""
}

// watch returns a *WatchdogError when the socket is stuck, nil when ctx
// ends.
func (a *Agent) watch(ctx context.Context) error {
	t := time.NewTicker(a.timing.WatchdogCheck)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if r := watchdogReason(a.socket.get(), a.now(), a.timing.WatchdogThreshold); r != "" {
				return &WatchdogError{Reason: r}
			}
		}
	}
}
