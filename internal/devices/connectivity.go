package devices

import (
	"strings"
	"time"
)

// Connection statuses (SPEC "Device connection status").
const (
	Connected    = "Connected"
	Disconnected = "Disconnected"
	Offline      = "Offline"
)

const (
	// DefaultOnlineWindow is how long a heartbeat keeps a device online:
	// four and a half heartbeat intervals, so one or two lost or jittered
	// heartbeats do not flap a device offline.
	DefaultOnlineWindow = 90 * time.Second
	// SocketWindow is how long the site worker's last confirmation keeps
	// the agent socket counted as connected. The socket runtime refreshes
	// socket_seen_at every 30 s, so this tolerates two missed refreshes,
	// and it matches the agent's own 90 s watchdog threshold.
	SocketWindow = 90 * time.Second
)

// AgentSocket reports whether a site worker holds the agent's management
// socket: a replica is recorded and it confirmed the socket within
// SocketWindow.
func AgentSocket(socketReplica *string, socketSeenAt *time.Time, now time.Time) bool {
	return socketReplica != nil && *socketReplica != "" && socketSeenAt != nil && now.Sub(*socketSeenAt) <= SocketWindow
}

// Status derives a device's connection status. A device is Offline when
// it was never seen or its last heartbeat (or status post) is older than
// window; otherwise Connected with a live agent socket and Disconnected
// without one (heartbeating, but not reachable for realtime work).
func Status(lastSeen *time.Time, socketReplica *string, socketSeenAt *time.Time, now time.Time, window time.Duration) string {
	if lastSeen == nil || now.Sub(*lastSeen) > window {
		return Offline
	}
	if AgentSocket(socketReplica, socketSeenAt, now) {
		return Connected
	}
	return Disconnected
}

// ParseStatus normalizes a status token case-insensitively ("connected",
// "OFFLINE") to its canonical form; ok is false for anything else.
func ParseStatus(token string) (status string, ok bool) {
	for _, s := range []string{Connected, Disconnected, Offline} {
		if strings.EqualFold(strings.TrimSpace(token), s) {
			return s, true
		}
	}
	return "", false
}
