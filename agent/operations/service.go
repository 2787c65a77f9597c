package operations

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/runtime"
)

// maxServiceName bounds a service name: systemd's unit names stop at 255
// bytes, and nothing real comes close.
const maxServiceName = 255

func (s *server) service(ctx context.Context, _ runtime.Caller, payload json.RawMessage) (any, error) {
	var req proto.ServiceActionRequest
	if err := decode(payload, &req); err != nil {
		return nil, err
	}
	if err := checkService(req); err != nil {
		return nil, err
	}
	actx, cancel := context.WithTimeout(ctx, s.opts.ServiceTimeout)
	defer cancel()
	name, err := controlService(actx, s.opts.Inventory.UsesInitScripts(), s.opts.Inventory.InitDir(), req.Name, req.Action)
	if err != nil {
		if actx.Err() != nil && ctx.Err() == nil {
			err = opError(proto.CodeOpTimedOut, "%s %s did not finish within %s", req.Action, req.Name, s.opts.ServiceTimeout)
		}
		s.log.Warn("service action failed", "service", req.Name, "action", req.Action, "err", err)
		return nil, err
	}
	s.log.Info("service action done", "service", name, "action", req.Action)

	// The state after the action comes from the same list the inventory
	// reports, so the two never disagree.
	res := proto.ServiceActionResult{Name: name, State: "unknown", Service: proto.Service{Name: name, State: "unknown"}}
	svcs, err := s.opts.Inventory.Services(ctx)
	if err != nil {
		s.log.Warn("services could not be listed after the action", "service", name, "err", err)
		return res, nil
	}
	res.Services = svcs
	for _, svc := range svcs {
		if svc.Name == name {
			res.State, res.Service = svc.State, svc
		}
	}
	return res, nil
}

// checkService refuses names that could leave the init script directory
// or be taken for an option, and unknown actions.
func checkService(req proto.ServiceActionRequest) error {
	n := req.Name
	switch {
	case n == "":
		return opError(proto.CodeOpInvalid, "the service name is empty")
	case len(n) > maxServiceName:
		return opError(proto.CodeOpInvalid, "the service name is longer than %d bytes", maxServiceName)
	case strings.ContainsAny(n, `/\`) || strings.Contains(n, ".."):
		return opError(proto.CodeOpInvalid, "the service name %q contains a path separator or ..", n)
	case strings.HasPrefix(n, "-") || strings.HasPrefix(n, "."):
		return opError(proto.CodeOpInvalid, "the service name %q starts with %q", n, n[:1])
	case strings.ContainsFunc(n, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return opError(proto.CodeOpInvalid, "the service name %q contains a control character", n)
	}
	switch req.Action {
	case proto.ServiceStart, proto.ServiceStop, proto.ServiceRestart:
		return nil
	}
	return opError(proto.CodeOpInvalid, "unknown service action %q (want start, stop or restart)", req.Action)
}
