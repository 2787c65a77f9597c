package api

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/agentgateway"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
	"github.com/cairn-rmm/cairn/internal/jsonbody"
	"github.com/cairn-rmm/cairn/internal/metadata"
)

// Agent calls over the realtime socket (agent/proto/calls.go): the same
// answers as the REST routes, from the same functions, for an agent whose
// socket is up. Each area registers the calls of its own routes, so a call
// is answered exactly where its route is served.

// handleCall registers a call whose body decodes (strictly, with the
// limits a REST body is checked against) into Req and whose answer is fn's.
func handleCall[Req any](s *Server, name string, fn func(ctx context.Context, dev devicetrust.Identity, req Req) (any, error)) {
	if s.Sockets == nil {
		return
	}
	s.Sockets.HandleCall(name, agentgateway.CallHandler(func(ctx context.Context, dev devicetrust.Identity, body json.RawMessage) (any, error) {
		var req Req
		if err := jsonbody.DecodeBytes(body, &req, false); err != nil {
			return nil, err
		}
		if err := checkLimits(&req); err != nil {
			return nil, err
		}
		if v, ok := any(&req).(validator); ok {
			if err := v.validate(); err != nil {
				return nil, err
			}
		}
		return fn(ctx, dev, req)
	}))
}

// agentCallbackCalls are the heartbeat and the status report.
func (s *Server) agentCallbackCalls() {
	handleCall(s, proto.CallHeartbeat, func(ctx context.Context, dev devicetrust.Identity, req proto.Heartbeat) (any, error) {
		return s.agentHeartbeat(ctx, dev, req)
	})
	handleCall(s, proto.CallStatus, func(ctx context.Context, dev devicetrust.Identity, req proto.Status) (any, error) {
		return struct{}{}, s.Devices.Status(ctx, dev, req)
	})
}

// metadataCalls is the agent's read of one metadata field.
func (s *Server) metadataCalls() {
	handleCall(s, proto.CallMetadataRead, func(ctx context.Context, dev devicetrust.Identity, req proto.MetadataRead) (any, error) {
		n, err := metadata.CheckFieldNumber(strconv.Itoa(req.FieldNumber))
		if err != nil {
			return nil, err
		}
		return s.agentMetadataValue(ctx, dev, n)
	})
}
