package agentgateway_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/agentgateway"
)

// FuzzSocketFrames sends an authenticated device's socket two arbitrary
// frames: the first where connect_agent belongs, the second after it. The
// hub must refuse anything but this device's connect_agent, never panic,
// and keep serving (every input dials a fresh socket to the same hub).
func FuzzSocketFrames(f *testing.F) {
	fx := setup(f)
	r := fx.replica(f, "replica-fuzz", nil, agentgateway.Options{})
	dev := fx.device(f, "fuzz")
	frame := func(typ, id string, payload any) []byte {
		p, _ := json.Marshal(payload)
		b, _ := json.Marshal(proto.Envelope{Type: typ, ID: id, Payload: p})
		return b
	}
	hello := frame(proto.MsgConnectAgent, "", proto.ConnectAgent{GUID: string(dev.GUID), AgentVersion: "1.0.0", Protocol: proto.Version, BootID: "boot-1"})
	for _, second := range [][]byte{
		frame(proto.MsgPong, "", nil),
		frame(proto.MsgReply, "no-such-request", map[string]any{"code": "op_failed", "message": "x"}),
		frame(proto.MsgReply, "", nil),
		[]byte(`{"type":"reply","id":"x","payload":"\u0000"}`),
		[]byte(`{"type":7}`), []byte(`not json`), nil,
	} {
		f.Add(hello, second)
	}
	for _, first := range [][]byte{
		frame(proto.MsgConnectAgent, "", proto.ConnectAgent{GUID: "someone-else", Protocol: proto.Version}),
		frame(proto.MsgConnectAgent, "", proto.ConnectAgent{GUID: string(dev.GUID), Protocol: 1 << 62}),
		frame(proto.MsgConnectAgent, "", []string{"not", "an", "object"}),
		frame(proto.MsgPing, "1", nil),
		[]byte(`{"type":"connect_agent","payload":{"guid":"` + dev.GUID + `","protocol":2,"helper_contexts":[null,1]}}`),
		[]byte(`{"type":"connect_agent","payload":null}`), []byte(`[]`), []byte(`{`),
	} {
		f.Add(first, frame(proto.MsgPong, "", nil))
	}
	f.Fuzz(func(t *testing.T, first, second []byte) {
		// A hang guard, not a timing assertion: each step is local.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		ws, res, err := websocket.Dial(ctx, r.url+"?guid="+string(dev.GUID), nil)
		if err != nil {
			t.Fatalf("the hub stopped serving: %v", err)
		}
		if res.Body != nil {
			_ = res.Body.Close()
		}
		defer func() { _ = ws.CloseNow() }()
		if ws.Write(ctx, websocket.MessageText, first) != nil {
			return
		}
		var ack proto.ConnectAgentAck
		for {
			var env proto.Envelope
			if wsjson.Read(ctx, ws, &env) != nil {
				return // refused by closing
			}
			if env.Type == proto.MsgPing {
				continue
			}
			if env.Type != proto.MsgConnectAgentAck || json.Unmarshal(env.Payload, &ack) != nil {
				t.Fatalf("the hub answered connect_agent with %+v", env)
			}
			break
		}
		var sent proto.Envelope
		var hello proto.ConnectAgent
		ok := json.Unmarshal(first, &sent) == nil && sent.Type == proto.MsgConnectAgent &&
			json.Unmarshal(sent.Payload, &hello) == nil && cairn.DeviceGUID(hello.GUID) == dev.GUID && proto.Supported(hello.Protocol)
		if ack.Accepted != ok {
			t.Fatalf("connect_agent %s: accepted=%v (%s)", first, ack.Accepted, ack.Reason)
		}
		if !ack.Accepted {
			return
		}
		_ = ws.Write(ctx, websocket.MessageText, second)
		_ = ws.Close(websocket.StatusNormalClosure, "")
	})
}
