package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/agentgateway"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
	"github.com/cairn-rmm/cairn/workflows"
)

// deviceOpRoutes are the first remote operations (SPEC "Devices and
// inventory"): each is a DeviceOperation workflow on the device's site
// queue, answered synchronously when it ends within the request.
func (s *Server) deviceOpRoutes() []Route {
	return []Route{
		{"GET", "/api/device/processes/{hostname}", AuthToken, pendable(getAction(s, s.processList).Query(queryInteger("max_age_seconds", "accept a cached process list this old")).Errors(operationErrors...)), "List a device's processes"},
		{"POST", "/api/device/processes/{hostname}/terminate", AuthToken, pendable(jsonAction(s, http.StatusOK, false, s.processTerminate).Errors(operationErrors...)), "Terminate a process"},
		{"GET", "/api/device/services/{hostname}", AuthToken, getAction(s, s.serviceList).Errors(cairn.ECodeNotFound), "List a device's services"},
		{"POST", "/api/device/services/{hostname}/action", AuthToken, pendable(jsonAction(s, http.StatusOK, false, s.serviceAction).Errors(operationErrors...)), "Start, stop or restart a service"},
		{"POST", "/api/device/software/{hostname}/refresh", AuthToken, pendable(jsonAction(s, http.StatusOK, true, s.softwareRefresh).Errors(operationErrors...)), "Refresh a device's software inventory"},
		{"GET", "/api/operations/{operation_id}", AuthToken, getAction(s, s.operationStatus).Errors(cairn.ECodeNotFound), "Read an operation's status"},
		{"POST", "/api/device/patches/{hostname}/refresh", AuthToken, pendable(jsonAction(s, http.StatusOK, true, s.patchRefresh).Errors(operationErrors...)), "Refresh a device's patch list"},
	}
}

// MaxProcessAge bounds max_age_seconds (a day).
const maxProcessAge = 86400

// operate runs one operation on the device named by the path, inside the
// operator's scope, refusing untrusted devices, agents without a socket and
// agents without the capability typ needs (agent_too_old) before anything
// is started. It waits for the outcome as long as the route's wait
// (pendable); an operation still running then is an
// *workflowclient.OperationPending, answered 202 by writeError.
func (s *Server) operate(ctx context.Context, hostname, typ string, payload any, kind, summary string) (workflows.OperationResult, error) {
	p := principal(ctx)
	t, err := s.Devices.OperationTarget(ctx, p.SiteScope(), hostname)
	if err != nil {
		return workflows.OperationResult{}, err
	}
	if !t.SocketLive {
		return workflows.OperationResult{}, cairn.Errorf(cairn.ECodeAgentSocketMissing,
			"the agent of %s has no realtime connection; onboarding takes about a minute", t.Hostname)
	}
	need, ok := proto.EventCapability[typ]
	if !ok {
		return workflows.OperationResult{}, fmt.Errorf("operation type %q names no agent capability", typ)
	}
	if err := t.Require(need); err != nil {
		return workflows.OperationResult{}, err
	}
	raw, err := json.Marshal(payload)
	if err != nil {
		return workflows.OperationResult{}, err
	}
	return s.Operations.RunWithin(ctx, workflows.OperationInput{OperationID: cairn.OperationID(uuid.NewString()), Target: t, Type: typ,
		Payload: raw, Kind: kind, Summary: summary, Actor: p.Username}, operationWait(ctx))
}

type processJSON struct {
	PID         int     `json:"pid"`
	PPID        int     `json:"ppid"`
	Name        string  `json:"name"`
	User        string  `json:"user"`
	CPUPercent  float64 `json:"cpu_percent"`
	MemoryBytes uint64  `json:"memory_bytes"`
	CommandLine string  `json:"command_line"`
}

type processesJSON struct {
	CapturedAt *time.Time    `json:"captured_at"`
	Processes  []processJSON `json:"processes"`
	// CommandLinesRedacted: every command_line is blanked, as the caller
	// is a read API token without read:device-content.
	CommandLinesRedacted bool `json:"command_lines_redacted"`
}

func newProcessesJSON(r *http.Request, at *time.Time, ps []proto.Process) processesJSON {
	ps, redacted := visibleProcesses(principal(r.Context()), ps)
	out := processesJSON{CapturedAt: at, Processes: make([]processJSON, len(ps)), CommandLinesRedacted: redacted}
	for i, p := range ps {
		out.Processes[i] = processJSON{PID: p.PID, PPID: p.PPID, Name: p.Name, User: p.User, CPUPercent: p.CPUPercent,
			MemoryBytes: p.RSSBytes, CommandLine: p.Command}
	}
	return out
}

// processList answers the stored snapshot while it is younger than
// max_age_seconds (any age when absent), else asks the agent for a fresh
// one (process_management_request) and stores it.
func (s *Server) processList(r *http.Request) (processesJSON, error) {
	maxAge, err := queryInt(r, "max_age_seconds", -1, 0, maxProcessAge)
	if err != nil {
		return processesJSON{}, err
	}
	ctx, hostname := r.Context(), pathParam(r, "hostname")
	t, err := s.Devices.OperationTarget(ctx, principal(ctx).SiteScope(), hostname)
	if err != nil && !cairn.IsCode(err, devicetrust.ECodeDeviceQuarantined) && !cairn.IsCode(err, devicetrust.ECodeDeviceRevoked) {
		return processesJSON{}, err
	}
	fresh := err == nil && t.HasProcesses && t.InventoryAt != nil &&
		(maxAge < 0 || s.Now().Sub(*t.InventoryAt) <= time.Duration(maxAge)*time.Second)
	if err != nil || fresh || (!t.SocketLive && t.HasProcesses) {
		// An untrusted device, or one whose agent is away, still shows
		// what was last collected.
		d, derr := s.Devices.DetailsByHostname(ctx, principal(ctx).SiteScope(), hostname)
		if derr != nil {
			return processesJSON{}, derr
		}
		return newProcessesJSON(r, d.CollectedAt, d.Processes), nil
	}
	res, err := s.operate(ctx, hostname, proto.EventProcessManagement, proto.ProcessRequest{Action: proto.ProcessList},
		"process_snapshot", "Process snapshot")
	if err != nil {
		return processesJSON{}, err
	}
	var snap proto.ProcessSnapshot
	if err := json.Unmarshal(res.Payload, &snap); err != nil {
		return processesJSON{}, fmt.Errorf("decode process snapshot: %w", err)
	}
	at := snap.CapturedAt.UTC()
	return newProcessesJSON(r, &at, snap.Processes), nil
}

type terminateReq struct {
	PID  int    `json:"pid"`
	Name string `json:"name" limit:"max=255"`
}

func (q *terminateReq) validate() error {
	var v cairn.Validation
	if q.PID <= 1 {
		v.Add("pid", "must be a process ID above 1")
	}
	if n := len(strings.TrimSpace(q.Name)); n == 0 || n > 255 {
		v.Add("name", "is required: the process's name, at most 255 characters")
	}
	return v.Err()
}

type terminatedJSON struct {
	Terminated bool `json:"terminated"`
}

func (s *Server) processTerminate(r *http.Request, req terminateReq) (terminatedJSON, error) {
	_, err := s.operate(r.Context(), pathParam(r, "hostname"), proto.EventProcessManagement,
		proto.ProcessRequest{Action: proto.ProcessTerminate, PID: req.PID, Name: strings.TrimSpace(req.Name)},
		"process_terminate", fmt.Sprintf("Terminate %s (PID %d)", strings.TrimSpace(req.Name), req.PID))
	if err != nil {
		return terminatedJSON{}, err
	}
	return terminatedJSON{Terminated: true}, nil
}

type serviceJSON struct {
	Name        string `json:"name"`
	DisplayName string `json:"display_name"`
	State       string `json:"state"`
	StartMode   string `json:"start_mode"`
}

// serviceListJSON is the services of the last inventory.
type serviceListJSON struct {
	Services []serviceJSON `json:"services"`
	// CollectedAt is when the inventory was taken (null: never).
	CollectedAt *time.Time `json:"collected_at"`
}

func (s *Server) serviceList(r *http.Request) (serviceListJSON, error) {
	d, err := s.Devices.DetailsByHostname(r.Context(), principal(r.Context()).SiteScope(), pathParam(r, "hostname"))
	if err != nil {
		return serviceListJSON{}, err
	}
	out := make([]serviceJSON, len(d.Services))
	for i, sv := range d.Services {
		out[i] = serviceJSON{Name: sv.Name, DisplayName: sv.DisplayName, State: sv.State, StartMode: sv.StartMode}
	}
	return serviceListJSON{Services: out, CollectedAt: d.CollectedAt}, nil
}

type serviceActionReq struct {
	Name   string `json:"name" limit:"max=255"`
	Action string `json:"action"`
}

func (q *serviceActionReq) validate() error {
	var v cairn.Validation
	name := strings.TrimSpace(q.Name)
	if name == "" || len(name) > 255 || strings.ContainsAny(name, "/\\\x00") || strings.Contains(name, "..") {
		v.Add("name", "is required: a service name without path separators, at most 255 characters")
	}
	switch q.Action {
	case proto.ServiceStart, proto.ServiceStop, proto.ServiceRestart:
	default:
		v.Add("action", "must be start, stop or restart")
	}
	return v.Err()
}

var serviceVerb = map[string]string{proto.ServiceStart: "Start", proto.ServiceStop: "Stop", proto.ServiceRestart: "Restart"}

// serviceStateJSON is a service's state after an action.
type serviceStateJSON struct {
	Name  string `json:"name"`
	State string `json:"state"`
}

func (s *Server) serviceAction(r *http.Request, req serviceActionReq) (serviceStateJSON, error) {
	name := strings.TrimSpace(req.Name)
	res, err := s.operate(r.Context(), pathParam(r, "hostname"), proto.EventServiceControl,
		proto.ServiceActionRequest{Name: name, Action: req.Action}, "service_"+req.Action, serviceVerb[req.Action]+" "+name)
	if err != nil {
		return serviceStateJSON{}, err
	}
	var out proto.ServiceActionResult
	if err := json.Unmarshal(res.Payload, &out); err != nil {
		return serviceStateJSON{}, fmt.Errorf("decode service action result: %w", err)
	}
	return serviceStateJSON{Name: out.Name, State: out.State}, nil
}

// softwareRefreshJSON is what a fresh software inventory counted.
type softwareRefreshJSON struct {
	SoftwareCount int       `json:"software_count"`
	CollectedAt   time.Time `json:"collected_at"`
}

func (s *Server) softwareRefresh(r *http.Request, _ struct{}) (softwareRefreshJSON, error) {
	res, err := s.operate(r.Context(), pathParam(r, "hostname"), proto.EventSoftwareRefresh, struct{}{},
		"software_refresh", "Refresh software inventory")
	if err != nil {
		return softwareRefreshJSON{}, err
	}
	var out proto.SoftwareRefreshResult
	if err := json.Unmarshal(res.Payload, &out); err != nil {
		return softwareRefreshJSON{}, fmt.Errorf("decode software refresh: %w", err)
	}
	return softwareRefreshJSON{SoftwareCount: len(out.Software), CollectedAt: out.CollectedAt.UTC()}, nil
}

// patchRefreshJSON is what a fresh patch inventory counted.
type patchRefreshJSON struct {
	PatchCount  int       `json:"patch_count"`
	CollectedAt time.Time `json:"collected_at"`
}

func (s *Server) patchRefresh(r *http.Request, _ struct{}) (patchRefreshJSON, error) {
	res, err := s.operate(r.Context(), pathParam(r, "hostname"), proto.EventPatchRefresh, struct{}{},
		"patch_refresh", "Refresh patch inventory")
	if err != nil {
		return patchRefreshJSON{}, err
	}
	var out proto.PatchRefreshResult
	if err := json.Unmarshal(res.Payload, &out); err != nil {
		return patchRefreshJSON{}, fmt.Errorf("decode patch refresh: %w", err)
	}
	return patchRefreshJSON{PatchCount: len(out.Patches), CollectedAt: out.CollectedAt.UTC()}, nil
}

// operationErrors are what a route running an operation on the agent may
// answer beyond its auth class: the device is out of reach or refuses
// operations, its agent lacks the capability (agent_too_old), or the
// agent answered with an error, or it took too long,
// or the Engine is too busy to start or follow it (unavailable:
// OperationRunner.Run).
var operationErrors = []string{
	cairn.ECodeNotFound, cairn.ECodeAgentSocketMissing, devicetrust.ECodeDeviceQuarantined, devicetrust.ECodeDeviceRevoked,
	cairn.ECodeAgentTooOld, proto.CodeOpMismatch, proto.CodeOpInvalid, proto.CodeOpUnsupported, proto.CodeOpFailed, proto.CodeOpPermission,
	proto.CodeOpTimedOut, proto.CodeOpAlreadyRunning, workflows.ECodeOperationTimedOut, agentgateway.FailureSocketClosed,
	// A stopped role refuses its requests (docs/agent.md "Stopping a role").
	proto.CodeRoleStopped,
	ECodeTemporalUnavailable, cairn.ECodeUnavailable,
}
