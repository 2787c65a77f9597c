package agentgateway

import (
	"context"
	"time"

	"github.com/coder/websocket"

	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
)

// The sweep. A socket is authenticated once, at the upgrade; trust actions
// close it through Drop, and deliveries reach it through NOTIFY. Both can
// miss: a Drop or dispatch notified to this replica while its listener
// reconnects is lost (PostgreSQL keeps no notifications for a session
// that is not listening), and a socket can be upgraded just as its device
// is revoked. So on each refresh of socket_seen_at, and as soon as the
// listener is back, the hub re-reads what it holds from PostgreSQL:
// sockets whose device is no longer trusted under the socket's token
// version close, and requests stored for its sockets that no holder
// claimed are delivered.

// controlResync is the control topic the hub waits on: nobody signals it,
// but the bus fires every control topic after its listener (re)connects,
// when notifications may have been missed.
const controlResync = "agentgateway-resync"

// sweeper sweeps whenever kicked (kicks coalesce; one arriving during a
// sweep runs another) until ctx ends.
func (h *Hub) sweeper(ctx context.Context, kick <-chan struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-kick:
			h.sweep(ctx)
		}
	}
}

func (h *Hub) sweep(ctx context.Context) {
	conns := h.snapshot()
	if len(conns) == 0 {
		return
	}
	guids := make([]string, 0, len(conns))
	for guid := range conns {
		guids = append(guids, guid)
	}
	rows, err := h.store.DeviceSocketCheckMany(ctx, guids)
	if err != nil {
		if ctx.Err() == nil {
			h.log.Error("re-check agent sockets", "err", err)
		}
		return
	}
	found := make(map[string]db.DeviceSocketCheckManyRow, len(rows))
	for _, r := range rows {
		found[string(r.Guid)] = r
	}
	for guid, c := range conns {
		row, ok := found[guid]
		switch {
		case !ok:
			h.closeByCheck(c, closePolicy, "device not found")
		case row.SocketReplica != "" && row.SocketReplica != h.replica:
			// The agent has opened a newer socket elsewhere; this one is
			// a leftover the agent no longer reads.
			h.closeByCheck(c, closeNormal, "replaced by a newer socket of this device")
		default:
			if reason := distrust(c, row, h.opts.Now()); reason != "" {
				h.closeByCheck(c, closePolicy, reason)
			}
		}
	}
	h.deliverUnclaimed(ctx, guids)
}

// distrust says why c may not stay open under its device's row at now
// ("" when it may): the checks the Device middleware makes on every
// request, the access token's expiry included. Once the token the socket
// was opened with (or the last one seen) has expired, the socket goes on
// under the device's newest access token if it is still valid, and closes
// if the device stopped refreshing: the socket never outlives every token
// the device holds by more than a sweep.
func distrust(c *conn, row db.DeviceSocketCheckManyRow, now time.Time) string {
	switch {
	case row.TrustState != devicetrust.TrustActive:
		return "device " + row.TrustState
	case row.TokenVersion != c.dev.TokenVersion:
		return "the device's token version changed; refresh the token and reconnect"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.validUntil.IsZero() || now.Before(c.validUntil) {
		return ""
	}
	newest := devicetrust.AccessValidUntil(row.RefreshExpiresAt)
	if !now.Before(newest) {
		return "the access token expired and was not refreshed; refresh it and reconnect"
	}
	c.validUntil = newest
	return ""
}

func (h *Hub) closeByCheck(c *conn, code websocket.StatusCode, reason string) {
	h.log.Info("agent socket closed by re-check", "guid", c.dev.GUID, "reason", reason)
	c.stop(code, reason)
}

// deliverUnclaimed delivers requests stored for these sockets that no
// holder has claimed. A request whose notification is merely late is
// claimed once (AgentRequestMarkDelivered), here or by the notification.
func (h *Hub) deliverUnclaimed(ctx context.Context, guids []string) {
	if h.opts.Completer == nil {
		return
	}
	reqs, err := h.store.AgentRequestUnclaimed(ctx, guids)
	if err != nil {
		if ctx.Err() == nil {
			h.log.Error("read unclaimed agent requests", "err", err)
		}
		return
	}
	for _, r := range reqs {
		if c := h.local(r.DeviceGuid); c != nil && c.ctx.Err() == nil {
			h.deliver(c, r.ID)
		}
	}
}

// snapshot copies the sockets this hub holds.
func (h *Hub) snapshot() map[string]*conn {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]*conn, len(h.conns))
	for guid, c := range h.conns {
		out[guid] = c
	}
	return out
}
