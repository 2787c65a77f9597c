package agentgateway

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
)

// Calls (agent/proto/calls.go): an agent's small callbacks (heartbeat,
// status, metadata reads) over its socket instead of one HTTP request
// each, so a connected agent holds one connection (issue 28). The API
// registers one handler per call, the same function its REST route runs;
// the hub answers calls on sockets of agents of protocol CallsVersion and
// later, lists the registered names in the ack, and replies with what the
// route would answer.
//
// A call needs no DPoP proof of its own: the socket was opened by a
// request the Device middleware authenticated (access token, DPoP proof of
// the device key, trust state and token version), every trust action
// closes it at once (Drop) and every sweep re-checks it (distrust). What a
// per-request proof adds over that is an expiry, so a call made after the
// access token the hub holds for the socket has expired is refused with
// token_expired: the agent then calls REST, which refreshes.

// CallHandler answers one call for the authenticated device dev. body is
// the call's body, not yet decoded; the result is encoded as the reply's
// body, an error as the reply's error.
type CallHandler func(ctx context.Context, dev devicetrust.Identity, body json.RawMessage) (any, error)

// MaxCallsInFlight bounds the calls of one socket answered at once; an
// agent that floods calls waits for its own slots (the socket is not read
// meanwhile).
const MaxCallsInFlight = 4

type callTable struct {
	mu sync.RWMutex
	fn map[string]CallHandler
}

// HandleCall registers fn for the call name (before agents connect: an
// ack lists the calls registered when it is sent).
func (h *Hub) HandleCall(name string, fn CallHandler) {
	h.calls.mu.Lock()
	defer h.calls.mu.Unlock()
	if h.calls.fn == nil {
		h.calls.fn = map[string]CallHandler{}
	}
	h.calls.fn[name] = fn
}

// callNames lists the registered calls for an ack (nil: none, or an agent
// too old to make them).
func (h *Hub) callNames(protocol int) []string {
	if protocol < proto.CallsVersion {
		return nil
	}
	h.calls.mu.RLock()
	defer h.calls.mu.RUnlock()
	var out []string
	for name := range h.calls.fn {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

func (h *Hub) callHandler(name string) CallHandler {
	h.calls.mu.RLock()
	defer h.calls.mu.RUnlock()
	return h.calls.fn[name]
}

// onCall answers one call envelope on c (in its own goroutine).
func (h *Hub) onCall(c *conn, env proto.Envelope) {
	reply := h.answerCall(c, env)
	raw, err := json.Marshal(reply)
	if err != nil {
		raw, _ = json.Marshal(proto.CallReply{Error: &proto.Error{Code: cairn.ECodeInternal, Message: "the answer could not be encoded"}})
	}
	c.enqueue(proto.Envelope{Type: proto.MsgCallReply, ID: env.ID, Payload: raw})
}

func (h *Hub) answerCall(c *conn, env proto.Envelope) proto.CallReply {
	var call proto.Call
	if err := json.Unmarshal(env.Payload, &call); err != nil {
		return callError(cairn.Invalid("payload", "is not a call"))
	}
	if c.protocol < proto.CallsVersion {
		return callError(cairn.Errorf(cairn.ECodeNotFound, "calls need agent protocol %d or later", proto.CallsVersion))
	}
	fn := h.callHandler(call.Name)
	if fn == nil {
		return callError(cairn.Errorf(cairn.ECodeNotFound, "this Engine answers no call %.64q on the socket", call.Name))
	}
	if !c.tokenValid(h.opts.Now()) {
		return callError(cairn.Errorf(devicetrust.ECodeTokenExpired, "the socket's access token expired; refresh it"))
	}
	body, err := fn(c.ctx, c.dev, call.Body)
	if err != nil {
		if c.ctx.Err() == nil {
			var e *cairn.Error
			if !errors.As(err, &e) {
				h.log.Error("agent call failed", "guid", c.dev.GUID, "call", call.Name, "err", err)
			}
		}
		return callError(err)
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return callError(err)
	}
	return proto.CallReply{Body: raw}
}

// callError is the error body the REST route would answer: the code,
// message and fields of a cairn.Error, internal for anything else (its
// detail is the log's, never the agent's).
func callError(err error) proto.CallReply {
	var e *cairn.Error
	if !errors.As(err, &e) {
		return proto.CallReply{Error: &proto.Error{Code: cairn.ECodeInternal, Message: "something went wrong; the server log has the details"}}
	}
	return proto.CallReply{Error: &proto.Error{Code: e.Code, Message: e.Message, Fields: e.Fields}}
}
