package operations

import (
	"context"
	"encoding/json"
	"os"
	"time"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/runtime"
)

func (s *server) process(ctx context.Context, _ runtime.Caller, payload json.RawMessage) (any, error) {
	var req proto.ProcessRequest
	if err := decode(payload, &req); err != nil {
		return nil, err
	}
	switch req.Action {
	case proto.ProcessList:
		procs, err := s.opts.Inventory.Processes(ctx)
		if err != nil {
			return nil, collectionError("processes", err)
		}
		return proto.ProcessSnapshot{CapturedAt: time.Now().UTC(), Processes: procs}, nil
	case proto.ProcessTerminate:
		if err := checkTerminate(req); err != nil {
			return nil, err
		}
		res, err := terminate(ctx, req.PID, req.Name, s.opts.Grace)
		if err != nil {
			s.log.Warn("terminate failed", "pid", req.PID, "name", req.Name, "err", err)
			return nil, err
		}
		s.log.Info("process terminated", "pid", req.PID, "name", req.Name, "signal", res.Signal)
		return res, nil
	default:
		return nil, opError(proto.CodeOpInvalid, "unknown process action %q (want %q or %q)", req.Action, proto.ProcessList, proto.ProcessTerminate)
	}
}

// checkTerminate refuses what must never be killed: init, whose death
// panics the kernel, and this agent, which would then never answer.
func checkTerminate(req proto.ProcessRequest) error {
	switch {
	case req.PID <= 0:
		return opError(proto.CodeOpInvalid, "terminate needs a positive pid, not %d", req.PID)
	case req.Name == "":
		return opError(proto.CodeOpInvalid, "terminate needs the process name, so a reused PID is not killed")
	case req.PID == 1:
		return opError(proto.CodeOpInvalid, "PID 1 is the init process and is never terminated")
	case req.PID == os.Getpid():
		return opError(proto.CodeOpInvalid, "PID %d is this agent; stop it through its service instead", req.PID)
	}
	return nil
}
