package agentgateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
)

// errHubStopped refuses sockets that arrive while the hub shuts down.
var errHubStopped = errors.New("agentgateway: hub stopped")

// Serve is the handler body of GET proto.PathRealtimeWS once the Device
// middleware has authenticated dev. It returns when the socket ends.
func (h *Hub) Serve(w http.ResponseWriter, r *http.Request, dev devicetrust.Identity) {
	if !h.sites.Runs(dev.SiteSlug) {
		writeError(w, http.StatusMisdirectedRequest, cairn.ECodeWrongWorker,
			fmt.Sprintf("this Engine process does not run the site worker of %q; refresh the route", dev.SiteSlug))
		return
	}
	h.mu.Lock()
	stopped := h.stopped
	h.mu.Unlock()
	if stopped {
		writeError(w, http.StatusServiceUnavailable, cairn.ECodeUnavailable, "this Engine process is stopping; reconnect")
		return
	}
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		// Accept has answered the client already.
		h.log.Debug("agent socket upgrade failed", "guid", dev.GUID, "err", err)
		return
	}
	ws.SetReadLimit(h.opts.MaxMessageBytes)
	c := newConn(r.Context(), ws, dev, h.log)
	c.onReply = h.onReply
	defer close(c.done)
	defer c.cancel()

	hello, err := h.handshake(c)
	if err != nil {
		var refused refusal
		if errors.As(err, &refused) {
			h.reject(c, string(refused))
		} else {
			// Nothing arrived in time, or the socket broke: no one to answer.
			_ = ws.CloseNow()
		}
		return
	}
	c.bootID, c.fingerprint, c.protocol = hello.BootID, hello.Fingerprint, hello.Protocol
	c.onCall = h.onCall
	if ticket, err := h.checkClone(c); err != nil || ticket != "" {
		reason := "this agent is a copy of an enrolled device running elsewhere; enroll again with the clone ticket"
		if err != nil {
			reason = "the site worker could not check the socket"
			if cairn.IsCode(err, cairn.ECodeRateLimited) {
				reason = "this device was copied too often; try again later"
			} else {
				h.log.Error("check agent socket for a clone", "guid", dev.GUID, "err", err)
			}
		}
		h.rejectClone(c, reason, ticket)
		return
	}
	if err := h.attach(c, hello); err != nil {
		reason := "the site worker could not register the socket"
		var refused refusal
		if errors.As(err, &refused) {
			reason = string(refused)
		} else if cairn.IsCode(err, cairn.ECodeNotFound) {
			reason = "device not found"
		} else if !errors.Is(err, errHubStopped) {
			h.log.Error("record agent socket", "guid", dev.GUID, "err", err)
		}
		h.reject(c, reason)
		return
	}
	defer func() {
		_ = ws.CloseNow()
		if h.detach(c) {
			h.publishStatus(c, false)
		}
		h.failPending(c)
	}()
	ack := proto.ConnectAgentAck{Accepted: true, Worker: h.opts.QueueOf(dev.SiteSlug),
		PingIntervalSeconds: max(1, int(h.opts.PingInterval/time.Second)), Calls: h.callNames(hello.Protocol)}
	if err := c.writeNow(envelope(proto.MsgConnectAgentAck, ack), h.opts.WriteTimeout); err != nil {
		return
	}
	go c.writeLoop(h.opts.PingInterval, h.opts.WriteTimeout)
	h.publishStatus(c, true)
	h.log.Debug("agent socket connected", "guid", dev.GUID, "site", dev.SiteSlug)
	err = c.readLoop(h.opts.IdleTimeout)
	h.log.Debug("agent socket closed", "guid", dev.GUID, "err", err)
}

// refusal is a handshake failure the agent is told about.
type refusal string

func (r refusal) Error() string { return string(r) }

// handshake reads the first message: connect_agent for this very device
// and protocol, within the connect timeout.
func (h *Hub) handshake(c *conn) (proto.ConnectAgent, error) {
	ctx, cancel := context.WithTimeout(c.ctx, h.opts.ConnectTimeout)
	defer cancel()
	var env proto.Envelope
	if err := wsjson.Read(ctx, c.ws, &env); err != nil {
		return proto.ConnectAgent{}, err
	}
	var hello proto.ConnectAgent
	switch {
	case env.Type != proto.MsgConnectAgent:
		return hello, refusal("the first message must be connect_agent")
	case json.Unmarshal(env.Payload, &hello) != nil:
		return hello, refusal("connect_agent payload is malformed")
	case cairn.DeviceGUID(hello.GUID) != c.dev.GUID:
		return hello, refusal("connect_agent guid is not the authenticated device")
	case !proto.Supported(hello.Protocol):
		return hello, refusal(fmt.Sprintf("protocol %d is not supported; this worker speaks %d to %d", hello.Protocol, proto.MinVersion, proto.Version))
	case len(hello.Capabilities) > proto.MaxCapabilities:
		return hello, refusal(fmt.Sprintf("connect_agent lists more than %d capabilities", proto.MaxCapabilities))
	}
	for _, c := range hello.Capabilities {
		if !capabilityName(string(c)) {
			return hello, refusal(fmt.Sprintf("connect_agent capability %.64q is not a capability name (a-z, 0-9, _; at most %d)", c, proto.MaxCapabilityLength))
		}
	}
	return hello, nil
}

// capabilityName accepts what the Engine stores of a capability it may
// not know yet (a newer agent's): a short lower-case identifier.
func capabilityName(s string) bool {
	if s == "" || len(s) > proto.MaxCapabilityLength {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '_' {
			return false
		}
	}
	return true
}

// storedCapabilities is the capabilities column for hello: NULL for an
// agent before protocol 4 (it reports none; the Engine assumes
// proto.LegacyCapabilities), else the set as reported, each name once.
func storedCapabilities(hello proto.ConnectAgent) []string {
	if hello.Protocol < proto.CapabilitiesVersion {
		return nil
	}
	out := []string{}
	for _, c := range hello.ReportedCapabilities() {
		if !slices.Contains(out, string(c)) {
			out = append(out, string(c))
		}
	}
	return out
}

// reject answers connect_agent with accepted=false and closes the socket.
func (h *Hub) reject(c *conn, reason string) { h.rejectClone(c, reason, "") }

// rejectClone is reject telling a copy of the device its clone ticket
// (none: an ordinary refusal).
func (h *Hub) rejectClone(c *conn, reason, ticket string) {
	h.log.Info("agent socket refused", "guid", c.dev.GUID, "reason", reason)
	ack := proto.ConnectAgentAck{Accepted: false, Reason: reason, Worker: h.opts.QueueOf(c.dev.SiteSlug)}
	if ticket != "" {
		ack.Code, ack.CloneTicket = proto.CodeDeviceCloned, ticket
	}
	if err := c.writeNow(envelope(proto.MsgConnectAgentAck, ack), h.opts.WriteTimeout); err != nil {
		_ = c.ws.CloseNow()
		return
	}
	_ = c.ws.Close(closePolicy, closeReason(reason))
}

// attach records the socket in PostgreSQL and registers it here,
// replacing (closing) an older socket of the device on this replica.
func (h *Hub) attach(c *conn, hello proto.ConnectAgent) error {
	mu := h.stripe(c.dev.GUID)
	mu.Lock()
	defer mu.Unlock()
	contexts := hello.HelperContexts
	if contexts == nil {
		contexts = []string{}
	}
	ctx, cancel := dbContext()
	defer cancel()
	row, err := h.store.DeviceSocketAttach(ctx, db.DeviceSocketAttachParams{Replica: h.replica, HelperContexts: contexts,
		Capabilities: storedCapabilities(hello), Guid: string(c.dev.GUID), TokenVersion: c.dev.TokenVersion})
	if db.IsNoRows(err) {
		return h.whyNotAttached(ctx, c)
	}
	if err != nil {
		return err
	}
	c.hostname, c.siteID = row.Hostname, int64(row.SiteID)
	h.mu.Lock()
	if h.stopped {
		h.mu.Unlock()
		_, err := h.store.DeviceSocketDetach(ctx, db.DeviceSocketDetachParams{Guid: string(c.dev.GUID), Replica: h.replica})
		return errors.Join(errHubStopped, err)
	}
	old := h.conns[string(c.dev.GUID)]
	h.conns[string(c.dev.GUID)] = c
	h.mu.Unlock()
	if old != nil {
		old.stop(closeNormal, "replaced by a newer socket of this device")
	}
	return nil
}

// whyNotAttached explains an attach that matched no row: the device is
// gone, or a trust action came between the upgrade and the attach.
func (h *Hub) whyNotAttached(ctx context.Context, c *conn) error {
	rows, err := h.store.DeviceSocketCheckMany(ctx, []string{string(c.dev.GUID)})
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		return cairn.Errorf(cairn.ECodeNotFound, "device %s not found", c.dev.GUID)
	}
	if reason := distrust(c, rows[0], h.opts.Now()); reason != "" {
		return refusal(reason)
	}
	return errors.New("agentgateway: the device's socket record did not update")
}

// detach unregisters c and clears its record, if c is still the device's
// socket here and this replica still holds it in PostgreSQL; it reports
// whether the record was cleared.
func (h *Hub) detach(c *conn) bool {
	mu := h.stripe(c.dev.GUID)
	mu.Lock()
	defer mu.Unlock()
	h.mu.Lock()
	current := h.conns[string(c.dev.GUID)] == c
	if current {
		delete(h.conns, string(c.dev.GUID))
	}
	h.mu.Unlock()
	if !current {
		return false
	}
	ctx, cancel := dbContext()
	defer cancel()
	n, err := h.store.DeviceSocketDetach(ctx, db.DeviceSocketDetachParams{Guid: string(c.dev.GUID), Replica: h.replica})
	if err != nil {
		// The record goes stale on its own within SocketFreshFor.
		h.log.Error("clear agent socket", "guid", c.dev.GUID, "err", err)
		return false
	}
	return n > 0
}

// dbContext bounds a record update that must happen even when the
// request's context has ended (the socket closing because of it).
func dbContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 5*time.Second)
}

func envelope(typ string, payload any) proto.Envelope {
	b, err := json.Marshal(payload)
	if err != nil {
		panic(err) // only the package's own payload types come here
	}
	return proto.Envelope{Type: typ, Payload: b}
}

// writeError answers like the API does: {"error", "message"}.
func writeError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(proto.Error{Code: code, Message: message})
}
