package fakeengine

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/coder/websocket"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// SocketMode is how the fake site worker answers connect_agent.
type SocketMode int

const (
	// Accept acknowledges and hands the connection to the test (Conns).
	Accept SocketMode = iota
	// Reject answers accepted=false.
	Reject
	// NoAck never answers.
	NoAck
)

// Conn is an accepted agent socket the test drives. The fake sends no
// pings on its own: tests send them, or stay silent to test the agent's
// read-idle deadline.
type Conn struct {
	Hello proto.ConnectAgent
	ws    *websocket.Conn
	inbox chan proto.Envelope
	done  chan struct{}
	grant func(env proto.Envelope) *proto.Signed
}

// Send writes an envelope to the agent. A request that needs a grant and
// carries none gets one from the fake's grant key, as the Engine's command
// path signs every request (SendUngranted sends it bare).
func (c *Conn) Send(ctx context.Context, env proto.Envelope) error {
	if env.Grant == nil && (env.ID != "" || env.OperationID != "") && proto.NeedsGrant(env.Type) && c.grant != nil {
		env.Grant = c.grant(env)
	}
	return c.SendUngranted(ctx, env)
}

// SendUngranted writes env as it is.
func (c *Conn) SendUngranted(ctx context.Context, env proto.Envelope) error {
	b, err := json.Marshal(env)
	if err != nil {
		return err
	}
	return c.ws.Write(ctx, websocket.MessageText, b)
}

// Read returns the agent's next envelope.
func (c *Conn) Read(ctx context.Context) (proto.Envelope, error) {
	select {
	case env := <-c.inbox:
		return env, nil
	case <-c.done:
		return proto.Envelope{}, errors.New("connection closed")
	case <-ctx.Done():
		return proto.Envelope{}, ctx.Err()
	}
}

// Done is closed when the connection ends.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Close ends the connection from the worker's side.
func (c *Conn) Close() { _ = c.ws.Close(websocket.StatusGoingAway, "closed by the test") }

// Conns delivers every accepted connection.
func (e *Engine) Conns() <-chan *Conn { return e.conns }

func (e *Engine) socket(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	d := e.device(w, r)
	if d == nil {
		e.mu.Unlock()
		return
	}
	if len(e.socketErrs) > 0 {
		a := e.socketErrs[0]
		e.socketErrs = e.socketErrs[1:]
		e.event("socket_refused")
		e.mu.Unlock()
		writeErr(w, a.status, a.code, "upgrade refused by the test")
		return
	}
	mode := Accept
	if len(e.socketModes) > 0 {
		mode, e.socketModes = e.socketModes[0], e.socketModes[1:]
	}
	e.event("socket")
	e.mu.Unlock()

	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer ws.CloseNow()
	// Hijacked connections outlive the request context; the agent closing
	// the socket is what ends this handler.
	ctx := context.WithoutCancel(r.Context())
	hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	_, b, err := ws.Read(hctx)
	cancel()
	if err != nil {
		return
	}
	var env proto.Envelope
	var hello proto.ConnectAgent
	if json.Unmarshal(b, &env) != nil || env.Type != proto.MsgConnectAgent || json.Unmarshal(env.Payload, &hello) != nil || hello.GUID != d.GUID {
		_ = ws.Close(websocket.StatusPolicyViolation, "first message must be connect_agent")
		return
	}
	e.mu.Lock()
	e.event("connect_agent")
	e.mu.Unlock()
	switch mode {
	case NoAck:
		_, _, _ = ws.Read(ctx) // silent until the agent gives up
		return
	case Reject:
		c := &Conn{ws: ws}
		_ = c.Send(ctx, ack(false, "rejected by the test"))
		_, _, _ = ws.Read(ctx)
		return
	}
	c := &Conn{Hello: hello, ws: ws, inbox: make(chan proto.Envelope, 256), done: make(chan struct{}),
		grant: func(env proto.Envelope) *proto.Signed { return e.Grant(d.GUID, env) }}
	defer close(c.done)
	if err := c.Send(ctx, ack(true, "")); err != nil {
		return
	}
	select {
	case e.conns <- c:
	default: // nobody is watching connections; keep serving anyway
	}
	for {
		_, b, err := ws.Read(ctx)
		if err != nil {
			return
		}
		var env proto.Envelope
		if json.Unmarshal(b, &env) != nil {
			continue
		}
		select {
		case c.inbox <- env:
		default: // a test that does not read does not stall the agent
		}
	}
}

func ack(accepted bool, reason string) proto.Envelope {
	p, _ := json.Marshal(proto.ConnectAgentAck{Accepted: accepted, Reason: reason, Worker: "site:test", PingIntervalSeconds: 20})
	return proto.Envelope{Type: proto.MsgConnectAgentAck, Payload: p}
}
