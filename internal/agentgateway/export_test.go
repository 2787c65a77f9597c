package agentgateway

import "context"

// RefreshSeen runs one refresh of socket_seen_at now.
func RefreshSeen(ctx context.Context, h *Hub) (int64, error) { return h.refreshSeen(ctx) }

// Sweep runs one re-check of the hub's sockets now.
func Sweep(ctx context.Context, h *Hub) { h.sweep(ctx) }

// PingDue is pingDue.
var PingDue = pingDue
