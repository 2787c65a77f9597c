package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// CodeUnsupported answers a request whose type has no handler.
const CodeUnsupported = "unsupported"

// Handler serves one Engine-to-agent event type. call makes Device calls
// back to the Engine; payload is the envelope's. When the envelope had an
// ID, the result (or the error, as {"error": code, "message": ...}) is
// sent back as a reply; return a *proto.Error to choose the code. An
// envelope with an OperationID runs once per operation under the agent's
// context (it outlives the socket that delivered it); a repeat delivery
// gets the first run's reply (docs/agent.md "Operations").
type Handler func(ctx context.Context, call Caller, payload json.RawMessage) (any, error)

// Handlers is the registry of event handlers, by envelope type. Later
// features (file management, shells, updates) register theirs here before
// the agent runs.
type Handlers struct {
	mu    sync.RWMutex
	m     map[string]Handler
	guard func(msgType string) error
}

// Guard sets a check every request passes before its handler runs: a
// non-nil error (a *proto.Error to choose the code) is the reply instead.
// The agent refuses the requests of a stopped role this way.
func (h *Handlers) Guard(g func(msgType string) error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.guard = g
}

// NewHandlers returns an empty registry.
func NewHandlers() *Handlers { return &Handlers{m: map[string]Handler{}} }

// reservedTypes belong to the socket itself.
var reservedTypes = map[string]bool{
	proto.MsgConnectAgent: true, proto.MsgConnectAgentAck: true,
	proto.MsgPing: true, proto.MsgPong: true, proto.MsgReply: true,
}

// Register adds the handler for msgType. Socket message types and a
// second handler for one type are refused.
func (h *Handlers) Register(msgType string, fn Handler) error {
	if msgType == "" || fn == nil {
		return errors.New("runtime: a handler needs a message type and a function")
	}
	if reservedTypes[msgType] {
		return fmt.Errorf("runtime: %q is a socket message type, not an event", msgType)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, dup := h.m[msgType]; dup {
		return fmt.Errorf("runtime: a handler for %q is already registered", msgType)
	}
	h.m[msgType] = fn
	return nil
}

// Lookup returns the handler for msgType, or nil. Tests of a feature's
// handlers call them through it, as registered.
func (h *Handlers) Lookup(msgType string) Handler { return h.lookup(msgType) }

// Types lists the event types with a handler, in no particular order.
func (h *Handlers) Types() []string {
	if h == nil {
		return nil
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	out := make([]string, 0, len(h.m))
	for t := range h.m {
		out = append(out, t)
	}
	return out
}

func (h *Handlers) lookup(msgType string) Handler {
	if h == nil {
		return nil
	}
	h.mu.RLock()
	fn, guard := h.m[msgType], h.guard
	h.mu.RUnlock()
	if fn == nil || guard == nil {
		return fn
	}
	return func(ctx context.Context, call Caller, payload json.RawMessage) (any, error) {
		if err := guard(msgType); err != nil {
			return nil, err
		}
		return fn(ctx, call, payload)
	}
}

// replyEnvelope builds the reply to request id: the result, or the error
// as the Engine's error shape.
func replyEnvelope(id string, result any, err error) proto.Envelope {
	return proto.Envelope{Type: proto.MsgReply, ID: id, Payload: replyPayload(result, err)}
}

// replyPayload encodes a handler's outcome as a reply payload.
func replyPayload(result any, err error) json.RawMessage {
	var payload any = result
	if err != nil {
		var pe *proto.Error
		if !errors.As(err, &pe) {
			pe = &proto.Error{Code: "failed", Message: err.Error()}
		}
		payload = pe
	}
	raw, merr := json.Marshal(payload)
	if merr != nil {
		raw, _ = json.Marshal(proto.Error{Code: "failed", Message: "the result could not be encoded: " + merr.Error()})
	}
	return raw
}
