package agentgateway

import "context"

// RefreshSeen runs one refresh of socket_seen_at now.
func RefreshSeen(ctx context.Context, h *Hub) (int64, error) { return h.refreshSeen(ctx) }
