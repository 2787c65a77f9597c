package agentgateway

import (
	"context"
	"encoding/json"
	"errors"
	"time"
	"unicode/utf8"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
)

// The command path. An operation's activity calls Dispatch with its task
// token and returns "result pending"; the request is stored, written to
// the agent's socket by whichever process holds it, and the agent's reply
// completes the activity there, by task token. While a request waits, its
// holder heartbeats the activity; when the socket closes the holder fails
// it as retryable, and when the holder dies the heartbeat timeout does the
// same, so Temporal redelivers the request wherever the agent reconnects.
// Nothing waits in one process's memory.

// Completer finishes activities that returned "result pending". The
// Engine implements it over the Temporal client (activities package), so
// this package needs no Temporal import.
type Completer interface {
	Complete(ctx context.Context, taskToken []byte, reply Reply) error
	// Fail completes with an application error of type code.
	Fail(ctx context.Context, taskToken []byte, code, message string, retryable bool) error
	Heartbeat(ctx context.Context, taskToken []byte) error
}

// Reply is the agent's answer an operation's activity completes with.
type Reply struct {
	Payload json.RawMessage `json:"payload"`
}

// Request is one delivery attempt of an operation to an agent.
type Request struct {
	// ID is unique per attempt; the agent's reply carries it.
	ID string
	// OperationID is the same for every attempt of one operation, so the
	// agent answers a repeat without acting twice.
	OperationID cairn.OperationID
	GUID        cairn.DeviceGUID
	Type        string
	Payload     json.RawMessage
	TaskToken   []byte
	// ExpiresAt is when the row may be swept (the activity's deadline).
	ExpiresAt time.Time
	// Grant is the Engine's signature the agent checks before it acts
	// (agent/proto/grant.go); nil for script runs, signed themselves.
	Grant *proto.Signed
}

// Failure codes the gateway completes activities with.
const (
	// FailureSocketClosed: the socket the request went out on closed
	// before the reply; retryable (the agent reconnects).
	FailureSocketClosed = "agent_socket_closed"
	// FailureReplyTooLarge: the agent's answer exceeds MaxReplyBytes.
	FailureReplyTooLarge = "payload_too_large"
)

// MaxReplyBytes bounds a reply carried in an activity result: Temporal
// refuses payloads over 2 MiB, and a 2,000-row process list or a 1 MiB
// service list fits well under this.
const MaxReplyBytes = 1536 << 10

const opDispatch = "dispatch"

// Dispatch stores req and writes it to the agent's socket, here or
// through the replica holding it. Without a live socket anywhere it
// answers agent_socket_missing and stores nothing.
func (h *Hub) Dispatch(ctx context.Context, req Request) error {
	if h.opts.Completer == nil {
		return errors.New("agentgateway: no completer configured; this process cannot run operations")
	}
	payload := req.Payload
	if len(payload) == 0 {
		payload = json.RawMessage(`{}`)
	}
	c := h.local(req.GUID)
	var replica string
	if c == nil {
		var err error
		if replica, err = h.locate(ctx, req.GUID); err != nil {
			return err
		}
	}
	var grant []byte
	if req.Grant != nil {
		var err error
		if grant, err = json.Marshal(req.Grant); err != nil {
			return err
		}
	}
	err := h.store.AgentRequestInsert(ctx, db.AgentRequestInsertParams{ID: req.ID, DeviceGuid: req.GUID,
		OperationID: req.OperationID, Type: req.Type, Payload: payload, TaskToken: req.TaskToken, ExpiresAt: req.ExpiresAt,
		GrantSigned: grant})
	if err != nil {
		return err
	}
	if c != nil {
		h.deliver(c, req.ID)
		return nil
	}
	if err := h.notify(ctx, delivery{Replica: replica, GUID: req.GUID, Op: opDispatch, RequestID: req.ID}); err != nil {
		_, _ = h.store.AgentRequestTake(ctx, db.AgentRequestTakeParams{ID: req.ID, DeviceGuid: string(req.GUID)})
		return err
	}
	return nil
}

// deliver claims a stored request for c's socket and queues it. A request
// that cannot go out fails as retryable, so Temporal tries again.
func (h *Hub) deliver(c *conn, id string) {
	ctx, cancel := dbContext()
	defer cancel()
	row, err := h.store.AgentRequestMarkDelivered(ctx, db.AgentRequestMarkDeliveredParams{Replica: h.replica, ID: id, DeviceGuid: string(c.dev.GUID)})
	if db.IsNoRows(err) {
		return // already answered or failed
	}
	if err != nil {
		h.log.Error("claim agent request", "guid", c.dev.GUID, "id", id, "err", err)
		h.failRequest(string(c.dev.GUID), id, FailureSocketClosed, "the site worker could not claim the request")
		return
	}
	c.track(id, row.TaskToken)
	env := proto.Envelope{Type: row.Type, ID: row.ID, OperationID: string(row.OperationID), Payload: row.Payload}
	if row.GrantSigned != nil {
		var g proto.Signed
		if err := json.Unmarshal(row.GrantSigned, &g); err == nil {
			env.Grant = &g
		}
	}
	if !c.enqueue(env) || c.ctx.Err() != nil {
		if c.untrack(id) != nil {
			h.failRequest(string(c.dev.GUID), id, FailureSocketClosed, "the agent's socket could not take the request")
		}
	}
}

// handleDispatch delivers a request another process stored for a socket
// this replica was recorded as holding.
func (h *Hub) handleDispatch(d delivery) {
	if c := h.local(d.GUID); c != nil {
		h.deliver(c, d.RequestID)
		return
	}
	h.failRequest(string(d.GUID), d.RequestID, FailureSocketClosed, "the agent's socket moved before the request reached it")
}

// onReply completes the activity waiting for env (a reply on c's socket).
// It runs on its own goroutine: completing takes a database round trip
// and a Temporal call, and the read loop must keep reading.
func (h *Hub) onReply(c *conn, env proto.Envelope) {
	c.untrack(env.ID)
	ctx, cancel := dbContext()
	defer cancel()
	token, err := h.store.AgentRequestTake(ctx, db.AgentRequestTakeParams{ID: env.ID, DeviceGuid: string(c.dev.GUID)})
	if db.IsNoRows(err) {
		h.log.Debug("reply nobody waits for", "guid", c.dev.GUID, "id", env.ID)
		return
	}
	if err != nil {
		// The activity's heartbeat timeout redelivers it.
		h.log.Error("take agent request", "guid", c.dev.GUID, "id", env.ID, "err", err)
		return
	}
	var failure proto.Error
	switch {
	case len(env.Payload) > MaxReplyBytes:
		err = h.opts.Completer.Fail(ctx, token, FailureReplyTooLarge,
			"the agent's answer is larger than the Engine carries ("+itoa(MaxReplyBytes)+" bytes)", false)
	case json.Unmarshal(env.Payload, &failure) == nil && failure.Code != "":
		// The agent picks the code; only the codes declared as agents'
		// pass, so a device cannot answer an operator with, say,
		// "unauthorized".
		code := failure.Code
		if h.opts.Codes == nil || !h.opts.Codes.FromAgent(code) {
			code = proto.CodeOpFailed
		}
		err = h.opts.Completer.Fail(ctx, token, code, boundMessage(failure.Message), false)
	default:
		payload := env.Payload
		if len(payload) == 0 {
			payload = json.RawMessage(`null`)
		}
		err = h.opts.Completer.Complete(ctx, token, Reply{Payload: payload})
	}
	if err != nil {
		// Typically the activity timed out or was cancelled meanwhile.
		h.log.Debug("complete agent request", "guid", c.dev.GUID, "id", env.ID, "err", err)
	}
}

// failPending fails every request still waiting on c, which closed.
func (h *Hub) failPending(c *conn) {
	for _, id := range c.drainPending() {
		h.failRequest(string(c.dev.GUID), id, FailureSocketClosed, "the agent's socket closed before it answered")
	}
}

// failRequest takes a stored request and fails its activity as retryable.
func (h *Hub) failRequest(guid, id, code, message string) {
	if h.opts.Completer == nil {
		return
	}
	ctx, cancel := dbContext()
	defer cancel()
	token, err := h.store.AgentRequestTake(ctx, db.AgentRequestTakeParams{ID: id, DeviceGuid: guid})
	if err != nil {
		if !db.IsNoRows(err) {
			h.log.Error("take agent request", "guid", guid, "id", id, "err", err)
		}
		return
	}
	if err := h.opts.Completer.Fail(ctx, token, code, message, true); err != nil {
		h.log.Debug("fail agent request", "guid", guid, "id", id, "err", err)
	}
}

// heartbeatPending tells Temporal that every request waiting on this
// replica's sockets is still alive; one whose activity is gone (timed
// out, cancelled) is forgotten.
func (h *Hub) heartbeatPending(ctx context.Context) {
	if h.opts.Completer == nil {
		return
	}
	h.mu.Lock()
	conns := make([]*conn, 0, len(h.conns))
	for _, c := range h.conns {
		conns = append(conns, c)
	}
	h.mu.Unlock()
	for _, c := range conns {
		for id, token := range c.pendingTokens() {
			if err := h.opts.Completer.Heartbeat(ctx, token); err != nil {
				if ctx.Err() != nil {
					return
				}
				h.log.Debug("heartbeat agent request", "guid", c.dev.GUID, "id", id, "err", err)
				if cairn.IsCode(err, cairn.ECodeNotFound) {
					c.untrack(id)
				}
			}
		}
	}
}

// boundMessage keeps an agent's failure message to what an operator reads.
func boundMessage(s string) string {
	const limit = 2000
	if len(s) <= limit {
		return s
	}
	s = s[:limit]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
