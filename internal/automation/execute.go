package automation

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
)

// What the JobRun workflow calls, through activities: claim the next
// pending results, dispatch one (open its activity row, hand out its
// signed payload), record its outcome, close the run.

// Item is one pending result to execute.
type Item struct {
	GUID     cairn.DeviceGUID
	Hostname string
	SiteID   cairn.SiteID
	SiteSlug string
}

// Batch is the next pending results of a run and the run's script
// timeout (which bounds each device's execution).
type Batch struct {
	Items          []Item
	TimeoutSeconds int
	// Ansible says the run is a playbook's: its batch holds one slot of
	// each of its sites' lanes while it runs (SPEC "Limits").
	Ansible bool
}

// NextItems marks the run started and returns up to max pending results.
func (s *Service) NextItems(ctx context.Context, runID cairn.RunID, max int) (Batch, error) {
	if err := s.store.JobRunStart(ctx, runID); err != nil {
		return Batch{}, err
	}
	run, err := s.store.JobRunGet(ctx, runID)
	if err != nil {
		return Batch{}, db.NotFound(err, "run %s not found", runID)
	}
	rows, err := s.store.JobRunPendingBatch(ctx, db.JobRunPendingBatchParams{RunID: runID, MaxItems: int32(max)})
	if err != nil {
		return Batch{}, err
	}
	out := make([]Item, len(rows))
	for i, r := range rows {
		site := int64(0)
		if r.SiteID != nil {
			site = int64(*r.SiteID)
		}
		out[i] = Item{GUID: r.DeviceGuid, Hostname: r.Hostname, SiteID: cairn.SiteID(site), SiteSlug: r.SiteSlug}
	}
	return Batch{Items: out, TimeoutSeconds: int(run.TimeoutSeconds), Ansible: run.Language == proto.LangAnsible}, nil
}

// Dispatch marks a result running under operationID, opens its activity
// row (once, however often the dispatch is retried) and returns the
// signed payload to send. Trust is checked here, right before sending: a
// device quarantined since the run was created gets nothing. A result
// that finished meanwhile (an answer that came in before a retry) is
// not_found.
func (s *Service) Dispatch(ctx context.Context, runID cairn.RunID, guid cairn.DeviceGUID, operationID cairn.OperationID) (json.RawMessage, error) {
	info, err := s.store.JobRunDispatchInfo(ctx, db.JobRunDispatchInfoParams{RunID: runID, DeviceGuid: guid,
		FreshSeconds: devices.SocketWindow.Seconds()})
	if err != nil {
		return nil, db.NotFound(err, "run %s has no result for %s", runID, guid)
	}
	switch info.TrustState {
	case devicetrust.TrustActive:
	case devicetrust.TrustQuarantined:
		return nil, cairn.Errorf(devicetrust.ECodeDeviceQuarantined, "%s is quarantined; release it before acting on it", info.Hostname)
	default:
		return nil, cairn.Errorf(devicetrust.ECodeDeviceRevoked, "%s is %s; it takes no operations", info.Hostname, info.TrustState)
	}
	if info.Status != StatusPending && info.Status != StatusRunning {
		return nil, cairn.Errorf(cairn.ECodeNotFound, "the result of %s in run %s is no longer pending", guid, runID)
	}
	if info.RunWhenOnline && !info.SocketLive {
		return nil, cairn.Errorf(ECodeQueuedOffline, "%s is offline; the run waits for it", info.Hostname)
	}
	// The activity row and the result's dispatch are one transaction: a
	// result that finished meanwhile leaves no row running, and a retry
	// finds the row by its operation.
	var signed json.RawMessage
	err = s.store.InTx(ctx, func(q *db.Queries) error {
		activityID := info.ActivityID
		if activityID == nil {
			meta := map[string]any{"run_id": runID, "operation_id": operationID, "type": proto.EventQuickJobRun}
			if info.ScheduledJobID != nil {
				meta["scheduled_job_id"] = *info.ScheduledJobID
			}
			target := devices.OperationTarget{GUID: guid, Hostname: info.Hostname, SiteID: info.SiteID, SiteSlug: info.SiteSlug}
			id, err := s.devices.OperationStartedIn(ctx, q, target, string(operationID), ActivityKind,
				runSummary(info.AssemblyName, info.Language), info.RequestedBy, meta)
			if err != nil {
				return err
			}
			activityID = &id
		}
		row, err := q.JobRunResultDispatch(ctx, db.JobRunResultDispatchParams{RunID: runID, DeviceGuid: guid,
			OperationID: operationID, ActivityID: activityID})
		if err != nil {
			return db.NotFound(err, "the result of %s in run %s is no longer pending", guid, runID)
		}
		signed = row.Signed
		return nil
	})
	if err != nil {
		return nil, err
	}
	return signed, nil
}

func runSummary(assembly, language string) string {
	if language == proto.LangAnsible {
		return "Run playbook " + assembly
	}
	if assembly != "" {
		return "Run script " + assembly
	}
	return "Run " + language + " script"
}

// ECodeQueuedOffline: the device was offline for a run that waits for
// it; the result stays pending until the agent asks for work.
const ECodeQueuedOffline = "queued_offline"

// Outcome is how one device's execution ended: the agent's reply, or a
// failure code from the command path or the agent.
type Outcome struct {
	RunID cairn.RunID
	GUID  cairn.DeviceGUID
	// Reply is the agent's ScriptResult (nil on failure).
	Reply        json.RawMessage
	ErrorCode    string
	ErrorMessage string
}

// Finish records an outcome: the result row and the activity row.
func (s *Service) Finish(ctx context.Context, o Outcome) error {
	if o.ErrorCode == ECodeQueuedOffline {
		_, err := s.store.JobRunResultQueue(ctx, db.JobRunResultQueueParams{RunID: o.RunID, DeviceGuid: o.GUID})
		return err
	}
	p := db.JobRunResultFinishParams{RunID: o.RunID, DeviceGuid: o.GUID, ErrorCode: o.ErrorCode, ErrorMessage: o.ErrorMessage}
	summary := ""
	switch {
	case o.Reply != nil:
		var res proto.ScriptResult
		if err := json.Unmarshal(o.Reply, &res); err != nil {
			p.Status, p.ErrorCode, p.ErrorMessage = StatusFailed, "invalid_reply", "the agent's answer is not a script result"
			break
		}
		code := int32(res.ExitCode)
		p.ExitCode, p.DurationMs = &code, &res.DurationMS
		p.Stdout, p.Stderr = clean(res.Stdout), clean(res.Stderr)
		p.StdoutTruncated, p.StderrTruncated = res.StdoutTruncated, res.StderrTruncated
		if !res.StartedAt.IsZero() {
			p.StartedAt, p.FinishedAt = &res.StartedAt, &res.FinishedAt
		}
		switch {
		case res.TimedOut:
			p.Status, p.ErrorCode, p.ErrorMessage = StatusTimedOut, proto.CodeOpTimedOut, "the script did not finish within its timeout"
		case res.ExitCode == 0:
			p.Status = StatusSucceeded
		default:
			p.Status = StatusFailed
		}
		summary = fmt.Sprintf("exit code %d", res.ExitCode)
		if res.TimedOut {
			summary = "timed out"
		}
		if res.Ansible != nil {
			raw, err := json.Marshal(res.Ansible)
			if err != nil {
				return err
			}
			p.AnsibleRecap = raw
			summary += fmt.Sprintf(" (ok=%d changed=%d unreachable=%d failed=%d)", res.Ansible.Ok, res.Ansible.Changed,
				res.Ansible.Unreachable, res.Ansible.Failed)
		}
	case o.ErrorCode == devicetrust.ECodeDeviceQuarantined || o.ErrorCode == devicetrust.ECodeDeviceRevoked:
		p.Status, summary = StatusSkipped, o.ErrorMessage
	default:
		p.Status, summary = StatusFailed, o.ErrorMessage
	}
	row, err := s.store.JobRunResultFinish(ctx, p)
	if db.IsNoRows(err) {
		return nil // finished already (a repeated record)
	} else if err != nil {
		return err
	}
	if row.ActivityID == nil {
		return nil
	}
	status := devices.ActivityCompleted
	if p.Status != StatusSucceeded {
		status = devices.ActivityFailed
	}
	meta := map[string]any{"run_id": o.RunID, "type": proto.EventQuickJobRun, "result": p.Status}
	if p.ExitCode != nil {
		meta["exit_code"] = *p.ExitCode
	}
	if p.DurationMs != nil {
		meta["duration_ms"] = *p.DurationMs
	}
	if p.ErrorCode != "" {
		meta["error"] = p.ErrorCode
	}
	if row.ScheduledJobID != nil {
		meta["scheduled_job_id"] = *row.ScheduledJobID
	}
	if row.OperationID != "" {
		meta["operation_id"] = row.OperationID
	}
	return s.devices.OperationFinished(ctx, *row.ActivityID, status, runSummary(row.AssemblyName, row.Language)+": "+summary, meta)
}

// FinishRun closes the run once nothing is pending or running.
func (s *Service) FinishRun(ctx context.Context, runID cairn.RunID) error {
	return s.store.JobRunFinish(ctx, runID)
}

// DiscardRun removes a run whose workflow could not be started, so a
// refused request leaves no run that stays pending for ever. A run that
// already started is kept.
func (s *Service) DiscardRun(ctx context.Context, runID cairn.RunID) error {
	_, err := s.store.JobRunDiscard(ctx, runID)
	return err
}

// RecordOutput stores a running script's output so far (live output).
func (s *Service) RecordOutput(ctx context.Context, guid cairn.DeviceGUID, out proto.ScriptOutput) error {
	var v cairn.Validation
	if out.RunID == "" {
		v.Add("run_id", "is required")
	}
	if len(out.Stdout) > proto.MaxScriptOutput {
		v.Add("stdout", fmt.Sprintf("must be at most %d bytes", proto.MaxScriptOutput))
	}
	if len(out.Stderr) > proto.MaxScriptOutput {
		v.Add("stderr", fmt.Sprintf("must be at most %d bytes", proto.MaxScriptOutput))
	}
	if err := v.Err(); err != nil {
		return err
	}
	_, err := s.store.JobRunResultOutput(ctx, db.JobRunResultOutputParams{RunID: cairn.RunID(out.RunID), DeviceGuid: guid,
		Stdout: clean(out.Stdout), Stderr: clean(out.Stderr), StdoutTruncated: out.StdoutTruncated, StderrTruncated: out.StderrTruncated})
	return err
}

// QueuedWork returns work kept for a device that was offline (runs with
// run_when_online), as signed payloads.
func (s *Service) QueuedWork(ctx context.Context, guid cairn.DeviceGUID) ([]proto.QueuedJob, error) {
	rows, err := s.store.JobRunQueuedForDevice(ctx, guid)
	if err != nil {
		return nil, err
	}
	out := make([]proto.QueuedJob, 0, len(rows))
	for _, r := range rows {
		var sg proto.Signed
		if err := json.Unmarshal(r.Signed, &sg); err != nil {
			continue
		}
		out = append(out, proto.QueuedJob{RunID: string(r.RunID), Signed: sg})
	}
	return out, nil
}

// clean makes script output storable as text: PostgreSQL text holds no
// NUL bytes and must be valid UTF-8.
func clean(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}

// RecordQueuedResult stores the result of queued work an agent ran after
// asking for it (POST /api/agent/script/result), then closes the run when
// that was its last open result.
func (s *Service) RecordQueuedResult(ctx context.Context, guid cairn.DeviceGUID, post proto.ScriptResultPost) error {
	if post.RunID == "" {
		return cairn.Invalid("run_id", "is required")
	}
	o := Outcome{RunID: cairn.RunID(post.RunID), GUID: guid}
	if post.Error != nil {
		o.ErrorCode, o.ErrorMessage = post.Error.Code, post.Error.Message
	} else {
		raw, err := json.Marshal(post.Result)
		if err != nil {
			return err
		}
		o.Reply = raw
	}
	if err := s.Finish(ctx, o); err != nil {
		return err
	}
	return s.FinishRun(ctx, cairn.RunID(post.RunID))
}
