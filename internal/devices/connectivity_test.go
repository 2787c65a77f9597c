package devices_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/internal/devices"
)

// SPEC "Device connection status", at the boundaries of the online window
// and of the socket's freshness.
func TestStatusBoundaries(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) *time.Time { t := now.Add(-d); return &t }
	replica, empty := "replica-1", ""
	const window = 90 * time.Second
	for _, tc := range []struct {
		name         string
		lastSeen     *time.Time
		replica      *string
		socketSeenAt *time.Time
		window       time.Duration
		want         string
		socket       bool
	}{
		{"never seen", nil, &replica, ago(0), window, devices.Offline, true},
		{"heartbeat now, socket now", ago(0), &replica, ago(0), window, devices.Connected, true},
		{"heartbeat at the window's edge", ago(window), &replica, ago(0), window, devices.Connected, true},
		{"heartbeat just past the window", ago(window + time.Millisecond), &replica, ago(0), window, devices.Offline, true},
		{"heartbeat long ago, socket fresh", ago(time.Hour), &replica, ago(time.Second), window, devices.Offline, true},
		{"no socket replica", ago(time.Second), nil, ago(0), window, devices.Disconnected, false},
		{"empty socket replica", ago(time.Second), &empty, ago(0), window, devices.Disconnected, false},
		{"socket never confirmed", ago(time.Second), &replica, nil, window, devices.Disconnected, false},
		{"socket confirmed at its limit", ago(time.Second), &replica, ago(devices.SocketWindow), window, devices.Connected, true},
		{"socket confirmation just stale", ago(time.Second), &replica, ago(devices.SocketWindow + time.Millisecond), window, devices.Disconnected, false},
		{"heartbeat in the future (replica clock skew)", ago(-5 * time.Second), &replica, ago(0), window, devices.Connected, true},
		{"longer configured window", ago(5 * time.Minute), nil, nil, 10 * time.Minute, devices.Disconnected, false},
		{"shorter configured window", ago(45 * time.Second), &replica, ago(0), 30 * time.Second, devices.Offline, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, devices.Status(tc.lastSeen, tc.replica, tc.socketSeenAt, now, tc.window))
			require.Equal(t, tc.socket, devices.AgentSocket(tc.replica, tc.socketSeenAt, now))
		})
	}
}

func TestParseStatus(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"connected": devices.Connected, "CONNECTED": devices.Connected, "Disconnected": devices.Disconnected,
		" offline ": devices.Offline, "oFFline": devices.Offline, "": "", "online": "", "connected,offline": "",
	} {
		got, ok := devices.ParseStatus(in)
		require.Equal(t, want, got, in)
		require.Equal(t, want != "", ok, in)
	}
}
