package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cairn-rmm/cairn/agent"
	"github.com/cairn-rmm/cairn/agent/proto"
)

// The simulator answers the Engine's operations from each agent's
// synthetic inventory, so a benchmark can measure operation round trips
// across a large fleet. Nothing is kept between operations (a stopped
// service is listed running again in the next one): what is measured is
// the round trip, and a thousand agents must stay cheap. Each agent costs
// one small handler map; the answers are built when asked.

// handlers registers agent c's operation handlers.
func (c *syntheticCollector) handlers() *Handlers {
	h := NewHandlers()
	for typ, fn := range map[string]Handler{
		proto.EventProcessManagement: c.process,
		proto.EventServiceControl:    c.service,
		proto.EventSoftwareRefresh:   c.software,
		proto.EventPatchRefresh:      c.patches,
		proto.EventQuickJobRun:       c.script,
	} {
		if err := h.Register(typ, fn); err != nil {
			panic(err) // fixed, distinct event types: cannot happen
		}
	}
	return h
}

func simInvalid(format string, args ...any) error {
	return &proto.Error{Code: proto.CodeOpInvalid, Message: fmt.Sprintf(format, args...)}
}

func (c *syntheticCollector) process(_ context.Context, _ Caller, payload json.RawMessage) (any, error) {
	var req proto.ProcessRequest
	if err := json.Unmarshal(payload, &req); err != nil {
		return nil, simInvalid("the request payload is malformed: %v", err)
	}
	procs := c.inventory(c.n).Processes
	switch req.Action {
	case proto.ProcessList:
		return proto.ProcessSnapshot{CapturedAt: time.Now().UTC(), Processes: procs}, nil
	case proto.ProcessTerminate:
		if req.PID <= 1 || req.Name == "" {
			return nil, simInvalid("terminate needs a pid above 1 and a name")
		}
		for _, p := range procs {
			if p.PID != req.PID {
				continue
			}
			if p.Name != req.Name {
				return nil, &proto.Error{Code: proto.CodeOpMismatch, Message: fmt.Sprintf("PID %d is %q, not %q", p.PID, p.Name, req.Name)}
			}
			return proto.ProcessTerminated{PID: p.PID, Name: p.Name, Terminated: true, Signal: "SIGTERM"}, nil
		}
		return nil, &proto.Error{Code: proto.CodeOpNotFound, Message: fmt.Sprintf("no process with PID %d", req.PID)}
	}
	return nil, simInvalid("unknown process action %q", req.Action)
}

func (c *syntheticCollector) service(_ context.Context, _ Caller, payload json.RawMessage) (any, error) {
	var req proto.ServiceActionRequest
	if err := json.Unmarshal(payload, &req); err != nil {
		return nil, simInvalid("the request payload is malformed: %v", err)
	}
	state := map[string]string{proto.ServiceStart: "running", proto.ServiceRestart: "running", proto.ServiceStop: "stopped"}[req.Action]
	if state == "" || req.Name == "" {
		return nil, simInvalid("a service action needs a name and start, stop or restart")
	}
	svcs := c.inventory(c.n).Services
	for i := range svcs {
		if svcs[i].Name != req.Name {
			continue
		}
		svcs[i].State, svcs[i].ActiveState, svcs[i].SubState = state, "active", "running"
		if state == "stopped" {
			svcs[i].ActiveState, svcs[i].SubState = "inactive", "dead"
		}
		return proto.ServiceActionResult{Name: req.Name, State: state, Service: svcs[i], Services: svcs}, nil
	}
	return nil, &proto.Error{Code: proto.CodeOpNotFound, Message: fmt.Sprintf("no service %s", req.Name)}
}

func (c *syntheticCollector) software(context.Context, Caller, json.RawMessage) (any, error) {
	return proto.SoftwareRefreshResult{CollectedAt: time.Now().UTC(), Software: c.inventory(c.n).Software}, nil
}

func (c *syntheticCollector) patches(context.Context, Caller, json.RawMessage) (any, error) {
	return proto.PatchRefreshResult{CollectedAt: time.Now().UTC(), Patches: c.inventory(c.n).Patches}, nil
}

// script verifies a signed script payload for real (signature, device,
// expiry) and answers a fixed short output without running anything.
func (c *syntheticCollector) script(_ context.Context, _ Caller, payload json.RawMessage) (any, error) {
	var sg proto.Signed
	if err := json.Unmarshal(payload, &sg); err != nil {
		return nil, &proto.Error{Code: proto.CodeSignatureInvalid, Message: "the payload is not a signed document"}
	}
	if c.store == nil {
		return nil, &proto.Error{Code: proto.CodeOpUnsupported, Message: "no configuration to verify with"}
	}
	cfg, err := c.store.Load()
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	job, err := agent.VerifyScript(cfg, sg, now)
	if err != nil {
		return nil, err
	}
	return proto.ScriptResult{ExitCode: 0, Stdout: "simulated " + job.Language + " run on " + cfg.Agent.GUID + "\n",
		StartedAt: now, FinishedAt: now}, nil
}
