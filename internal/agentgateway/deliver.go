package agentgateway

import (
	"context"
	"encoding/json"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/events"
)

// delivery travels on events.ChannelAgents to the replica holding a
// socket. Every replica receives it; only the addressee acts.
type delivery struct {
	Replica  string           `json:"replica"`
	GUID     cairn.DeviceGUID `json:"guid"`
	Op       string           `json:"op"`
	Envelope *proto.Envelope  `json:"envelope,omitempty"`
	Reason   string           `json:"reason,omitempty"`
	// RequestID names a stored request (opDispatch).
	RequestID string `json:"request_id,omitempty"`
}

const (
	opSend = "send"
	opDrop = "drop"
)

// Send delivers env to the agent of guid wherever its socket is: written
// here when this replica holds it, else handed to the holding replica
// through NOTIFY. Across replicas, nil means handed over: the holder writes
// it unless the socket closes meanwhile (at most once, unconfirmed), and
// the encoded delivery must fit one notification (events.MaxPayload).
// Without a live socket anywhere it answers agent_socket_missing.
func (h *Hub) Send(ctx context.Context, guid cairn.DeviceGUID, env proto.Envelope) error {
	if c := h.local(guid); c != nil {
		return c.send(ctx, env)
	}
	replica, err := h.locate(ctx, guid)
	if err != nil {
		return err
	}
	return h.notify(ctx, delivery{Replica: replica, GUID: guid, Op: opSend, Envelope: &env})
}

// Drop closes the socket of guid wherever it is (trust actions:
// quarantine, revoke, purge). A socket here takes no more messages and its
// record is cleared before Drop returns, while the close handshake goes on
// in the background; one on another replica is closed by its holder after
// Drop returns. No socket anywhere is not an error.
func (h *Hub) Drop(ctx context.Context, guid, reason string) error {
	if c := h.local(cairn.DeviceGUID(guid)); c != nil {
		c.stop(closePolicy, reason)
		if h.detach(c) {
			h.publishStatus(c, false)
		}
		return nil
	}
	replica, err := h.locate(ctx, cairn.DeviceGUID(guid))
	if cairn.IsCode(err, cairn.ECodeAgentSocketMissing) || cairn.IsCode(err, cairn.ECodeNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return h.notify(ctx, delivery{Replica: replica, GUID: cairn.DeviceGUID(guid), Op: opDrop, Reason: reason})
}

// DropSite closes this replica's sockets of a site whose worker this
// process stopped (the site was deleted or renamed): their agents refresh
// the route and reconnect where the site's worker now runs. It does not
// wait for the sockets to finish closing.
func (h *Hub) DropSite(slug string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.conns {
		if c.dev.SiteSlug == slug {
			c.stop(closeGoingAway, "site worker stopped; refresh the route")
		}
	}
}

// locate returns the other replica holding a live socket of guid.
func (h *Hub) locate(ctx context.Context, guid cairn.DeviceGUID) (string, error) {
	row, err := h.store.DeviceSocketGet(ctx, db.DeviceSocketGetParams{Guid: string(guid), FreshSeconds: SocketFreshFor.Seconds()})
	if err != nil {
		return "", db.NotFound(err, "device %s not found", guid)
	}
	// A record naming this replica without a socket here is a leftover
	// of a socket that just closed.
	if !row.SocketLive || row.SocketReplica == h.replica {
		return "", cairn.Errorf(cairn.ECodeAgentSocketMissing,
			"the agent of %s has not registered its realtime socket; onboarding takes about a minute", row.Hostname)
	}
	return row.SocketReplica, nil
}

func (h *Hub) notify(ctx context.Context, d delivery) error {
	payload, err := json.Marshal(d)
	if err != nil {
		return err
	}
	if len(payload) > events.MaxPayload {
		return cairn.Errorf(cairn.ECodeTooLarge,
			"a message for an agent connected to another Engine replica is limited to %d bytes; this one is %d", events.MaxPayload, len(payload))
	}
	return h.bus.Notify(ctx, events.ChannelAgents, payload)
}

// handleDelivery acts on a delivery addressed to this replica.
func (h *Hub) handleDelivery(payload []byte) {
	var d delivery
	if err := json.Unmarshal(payload, &d); err != nil {
		h.log.Error("undecodable agent delivery", "err", err)
		return
	}
	if d.Replica != h.replica {
		return
	}
	if d.Op == opDispatch {
		// Off the Run loop: claiming takes a database round trip.
		go h.handleDispatch(d)
		return
	}
	c := h.local(d.GUID)
	if c == nil {
		h.log.Debug("delivery for a socket no longer here", "guid", d.GUID, "op", d.Op)
		return
	}
	switch {
	case d.Op == opSend && d.Envelope != nil:
		c.enqueue(*d.Envelope)
	case d.Op == opDrop:
		c.stop(closePolicy, d.Reason)
	default:
		h.log.Error("unknown agent delivery", "op", d.Op)
	}
}
