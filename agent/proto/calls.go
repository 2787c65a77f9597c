package proto

import "encoding/json"

// ---- Agent calls over the realtime socket (protocol 5) -----------------
//
// An agent whose socket is up sends its small callbacks over it instead
// of opening an HTTP request each time, so a connected agent holds one
// connection to the Engine, not two (issue 28). A call is the request of
// one REST route, answered with exactly what the route answers:
//
//	agent -> Engine  {"type":"call","id":"<id>","payload":{"name":"heartbeat","body":<Heartbeat>}}
//	Engine -> agent  {"type":"call_reply","id":"<id>","payload":{"body":<HeartbeatResponse>}}
//	                 {"type":"call_reply","id":"<id>","payload":{"error":{"error":"validation_failed",...}}}
//
// The Engine lists the calls it answers in ConnectAgentAck.Calls (to
// agents of protocol 5 and later); the agent uses the socket only for
// calls listed there and the REST route otherwise: with no socket, an
// Engine that lists none (older), or a call that gets no reply before the
// socket ends. The REST routes stay, for agents that use them.
//
// Authentication: the socket was opened with a DPoP-bound access token
// and a proof from the device key, checked like any Device route; the
// Engine closes it at once on a trust action (revoke, quarantine, token
// version), re-checks it on every sweep, and refuses a call once the
// access token it holds for the socket has expired (CodeTokenExpired; the
// agent then calls REST, which refreshes). A call is therefore the
// authenticated device's, as a DPoP-signed request would be.

// CallsVersion is the protocol that may carry calls on the socket.
const CallsVersion = 5

// Socket message types of calls.
const (
	MsgCall      = "call"
	MsgCallReply = "call_reply"
)

// Call names, one per REST route a call stands for.
const (
	// CallHeartbeat is POST PathHeartbeat: body Heartbeat, answer
	// HeartbeatResponse.
	CallHeartbeat = "heartbeat"
	// CallStatus is POST PathStatus: body Status, answer {}.
	CallStatus = "status"
	// CallMetadataRead is GET PathAgentMetadata(n): body MetadataRead,
	// answer MetadataFieldValue.
	CallMetadataRead = "metadata_read"
)

// Call is the payload of MsgCall.
type Call struct {
	Name string          `json:"name"`
	Body json.RawMessage `json:"body,omitempty"`
}

// CallReply is the payload of MsgCallReply: Body when the call succeeded,
// else Error (what the REST route would have answered as its error body).
type CallReply struct {
	Body  json.RawMessage `json:"body,omitempty"`
	Error *Error          `json:"error,omitempty"`
}

// MetadataRead is the body of CallMetadataRead.
type MetadataRead struct {
	FieldNumber int `json:"field_number"`
}
