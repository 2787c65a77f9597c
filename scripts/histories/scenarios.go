package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/agentgateway"
	"github.com/cairn-rmm/cairn/internal/automation"
	"github.com/cairn-rmm/cairn/internal/backup"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/flows"
	"github.com/cairn-rmm/cairn/internal/patches"
	"github.com/cairn-rmm/cairn/internal/rdp"
	"github.com/cairn-rmm/cairn/internal/scheduledjobs"
	"github.com/cairn-rmm/cairn/internal/serveradmin"
	"github.com/cairn-rmm/cairn/internal/vnc"
	"github.com/cairn-rmm/cairn/internal/watchdogs"
	"github.com/cairn-rmm/cairn/workflowclient"
	"github.com/cairn-rmm/cairn/workflows"
)

// standIns answer the activities by name, without a database: a history
// records only what an activity returned.
var standIns = map[string]any{
	"Identify": func(context.Context) (activities.WorkerIdentity, error) {
		return activities.WorkerIdentity{Identity: "histories", TaskQueue: queue, At: time.Unix(0, 0).UTC()}, nil
	},
	"DecideApproval":      func(_ context.Context, in activities.DecideInput) (string, error) { return in.Status, nil },
	"SweepSessions":       func(context.Context) (int64, error) { return 2, nil },
	"SweepPresence":       func(context.Context) (int64, error) { return 1, nil },
	"SweepClusterMembers": func(context.Context) (int64, error) { return 0, nil },
	"SettleClusterAdmission": func(_ context.Context, in activities.ClusterSettleInput) (string, error) {
		return map[string]string{"approve": "approved", "cancel": "cancelled", "expire": "expired"}[in.Decision], nil
	},
	"ReconcileJobSchedules": func(context.Context) (int64, error) { return 0, nil },
	"DropSocket":            func(context.Context, workflows.TrustActionInput) error { return nil },
	"ApplyRestore": func(context.Context, string) (backup.Result, error) {
		return backup.Result{Applied: true, Rows: map[string]int64{"sites": 1, "devices": 2}}, nil
	},
	"ReconcileRestoredSchedules": func(context.Context) error { return nil },
	"WriteScheduledBackup": func(_ context.Context, id string) (backup.Run, error) {
		return backup.Run{ID: id, Status: "succeeded", File: "cairn-backup-19700101-000000.json", SizeBytes: 1024, Pruned: []string{}}, nil
	},
	"StartDueBackup": func(context.Context) (int64, error) { return 1, nil },
	"RunRestoreDrill": func(_ context.Context, id string) (backup.Run, error) {
		return backup.Run{ID: id, Status: "succeeded", File: "cairn-backup-19700101-000000.json", Pruned: []string{},
			Detail: "passed: cairn-backup-19700101-000000.json restored into a scratch database, 40 tables, 12 rows, counts and foreign keys hold"}, nil
	},
	"StartDueDrill": func(context.Context) (int64, error) { return 1, nil },
	"RestartSiteWorker": func(context.Context, string, string) (activities.WorkerRestart, error) {
		return activities.WorkerRestart{Process: "cairn@histories:1"}, nil
	},
	"SiteWorkerServing": func(context.Context, string, activities.WorkerRestart) (activities.WorkerServing, error) {
		return activities.WorkerServing{Process: "cairn@histories:1", StartedAt: time.Unix(60, 0).UTC()}, nil
	},
	"ReloadCertificate": func(context.Context) (activities.CertificateReload, error) {
		return activities.CertificateReload{Process: "cairn@histories:1", Before: activities.CertificateState{Fingerprint: "aa"},
			After: activities.CertificateState{Fingerprint: "bb"}, Replaced: true}, nil
	},
	"ReconcileTunnels":    func(context.Context, string) ([]string, error) { return []string{"tunnel:g-1"}, nil },
	"RecordTrustActivity": func(context.Context, workflows.TrustActionInput) error { return nil },
	"PublishTrustChange":  func(context.Context, workflows.TrustActionInput) error { return nil },
	"TearDownTunnel":      func(context.Context, workflows.TrustActionInput) error { return nil },
	"CheckTunnelReady": func(_ context.Context, guid string) (activities.TunnelState, error) {
		// Ready at the second look.
		if _, seen := tunnelLooks.LoadOrStore(guid, true); !seen {
			return activities.TunnelState{}, temporal.NewApplicationError("not ready yet", "tunnel_not_ready")
		}
		at := time.Unix(0, 0).UTC()
		return activities.TunnelState{TunnelID: "t-1", VirtualIP: "10.213.0.2", Endpoint: "192.0.2.1:51820", LastHandshakeAt: &at}, nil
	},
	"CheckDesktopTunnel": func(context.Context, string) (activities.TunnelState, error) {
		at := time.Unix(0, 0).UTC()
		return activities.TunnelState{TunnelID: "t-1", VirtualIP: "10.213.0.2", Endpoint: "192.0.2.1:51820", LastHandshakeAt: &at}, nil
	},
	// A "nobanner-" device's server never sends its banner.
	"ProbeDesktop": func(_ context.Context, in activities.DesktopProbeInput) error {
		if strings.HasPrefix(in.GUID, "nobanner-") {
			return temporal.NewApplicationErrorWithOptions("the agent's VNC server sent no RFB banner (banner_read_timeout)",
				"vnc_backend_no_rfb_banner", temporal.ApplicationErrorOptions{Details: []any{cairn.Probe{Stage: "banner_read_timeout", Attempt: 1, ElapsedMS: 1000}}})
		}
		return nil
	},
	// An "rdpdown-" device's RDP port never answers the X.224 probe.
	"ProbeRDP": func(_ context.Context, in activities.RDPProbeInput) (rdp.ProbeResult, error) {
		if strings.HasPrefix(in.GUID, "rdpdown-") {
			return rdp.ProbeResult{}, temporal.NewApplicationError("the agent's RDP port did not answer through the tunnel: connect: connection refused",
				rdp.ECodeBackendNotReady)
		}
		return rdp.ProbeResult{Selected: rdp.ProtoHybrid, ElapsedMS: 12}, nil
	},
	"StartRDPBridge":       func(context.Context, activities.RDPBridgeInput) error { return nil },
	"StopRDPBridge":        func(context.Context, string) error { return nil },
	"EndDesktopSession":    func(context.Context, activities.DesktopEnd) error { return nil },
	"OtherDesktopSessions": func(context.Context, string, string) (int64, error) { return 0, nil },
	"BeginOperation":       func(context.Context, activities.OperationRecord) (int64, error) { return 7, nil },
	"SendToAgent": func(_ context.Context, in activities.CommandInput) (agentgateway.Reply, error) {
		if in.Type == proto.EventVPNTunnelStart {
			// The first attempt sees no handshake; a "quarantined-" device
			// is refused for good.
			switch {
			case strings.HasPrefix(string(in.GUID), "quarantined-"):
				return agentgateway.Reply{}, temporal.NewNonRetryableApplicationError("the device is quarantined", "device_quarantined", nil)
			case strings.HasSuffix(string(in.OperationID), ":1"):
				return agentgateway.Reply{}, temporal.NewNonRetryableApplicationError("no handshake on either endpoint", proto.CodeTunnelNoHandshake, nil)
			}
			return agentgateway.Reply{Payload: json.RawMessage(`{"tunnel_id":"t-1","virtual_ip":"10.213.0.2","endpoint":"192.0.2.1:51820","mode":"wireguard-go"}`)}, nil
		}
		switch in.Type {
		case proto.EventVNCStart:
			return agentgateway.Reply{Payload: json.RawMessage(`{"listen_address":"10.213.0.2","port":5900,"display_topology":[{"name":"screen","x":0,"y":0,"width":1280,"height":800,"primary":true}],"display_virtual_bounds":"1280x800+0+0"}`)}, nil
		case proto.EventVNCStop:
			return agentgateway.Reply{Payload: json.RawMessage(`{"stopped":true}`)}, nil
		case proto.EventRDPStart:
			return agentgateway.Reply{Payload: json.RawMessage(`{"listen_address":"10.213.0.2","port":3389,"server":"xrdp"}`)}, nil
		case proto.EventRDPTransportRecovery:
			return agentgateway.Reply{Payload: json.RawMessage(`{"listen_address":"10.213.0.2","port":3389,"server":"xrdp","recovered":true}`)}, nil
		case proto.EventPatchInstall:
			return agentgateway.Reply{Payload: json.RawMessage(`{"status":"installed","already_installed":false,"exit_code":0,"reboot_required":false}`)}, nil
		case proto.EventPatchRefresh:
			return agentgateway.Reply{Payload: json.RawMessage(`{"collected_at":"2026-11-29T03:00:00Z","patches":[]}`)}, nil
		case proto.EventPatchReboot:
			return agentgateway.Reply{Payload: json.RawMessage(`{"status":"skipped_logged_in_user","message":"1 user(s) signed in","signed_in":["alice"]}`)}, nil
		case proto.EventPatchPolicyEnforcement:
			return agentgateway.Reply{Payload: json.RawMessage(`{"mode":"managed","status":"applied","message":"set","values":[{"key":"HKLM\\SOFTWARE\\Policies\\Microsoft\\Windows\\WindowsUpdate\\AU","name":"AUOptions","present":true,"type":"REG_DWORD","data":2}]}`)}, nil
		}
		if in.Type == proto.EventProcessManagement {
			return agentgateway.Reply{}, temporal.NewNonRetryableApplicationError("PID 4242 is \"bash\", not \"sleep\"", proto.CodeOpMismatch, nil)
		}
		return agentgateway.Reply{Payload: json.RawMessage(`{"name":"cron","state":"running","service":{},"services":[]}`)}, nil
	},
	"SetOnboardingStatus": func(_ context.Context, in activities.OnboardingStatusInput) (string, error) { return in.Status, nil },
	// The device enrolls with the redeploy's code on the second look.
	"OnboardingEnrolled": func(_ context.Context, jobID string) (bool, error) {
		n, _ := onboardingLooks.LoadOrStore(jobID, new(int))
		*n.(*int)++
		return *n.(*int) > 1, nil
	},
	"ApplyAgentAnswer": func(context.Context, activities.ApplyInput) (string, error) { return "cron is running", nil },
	"FinishOperation":  func(context.Context, activities.FinishInput) error { return nil },
	"BeginAgentUpdate": func(context.Context, string) error { return nil },
	// An update's agent checks in after the first look, unless the
	// scenario's operation never checks in ("timeout-" operations).
	"AgentUpdateStatus": func(_ context.Context, op string) (string, error) {
		if _, seen := updateLooks.LoadOrStore(op, true); !seen || strings.HasPrefix(op, "timeout-") || strings.HasPrefix(op, "carried-") {
			return "running", nil
		}
		return "succeeded", nil
	},
	"FinishAgentUpdate": func(_ context.Context, in activities.FinishAgentUpdateInput) (string, error) { return in.Status, nil },
	"NextItems": func(_ context.Context, in activities.NextInput) (automation.Batch, error) {
		if strings.HasPrefix(string(in.RunID), "watchdog-") {
			// An incident's run: its one device was done in an earlier batch.
			return automation.Batch{TimeoutSeconds: 60}, nil
		}
		if strings.HasPrefix(string(in.RunID), "ansible-") {
			// A playbook run over two sites: a slot of each while it runs.
			return automation.Batch{TimeoutSeconds: 60, Ansible: true, Items: []automation.Item{
				{GUID: "guid-ok", Hostname: "host-ok", SiteID: 1, SiteSlug: siteSlug},
				{GUID: "guid-fail", Hostname: "host-fail", SiteID: 2, SiteSlug: siteSlug}}}, nil
		}
		return automation.Batch{TimeoutSeconds: 60, Items: []automation.Item{{GUID: "guid-ok", Hostname: "host-ok", SiteID: 1, SiteSlug: siteSlug},
			{GUID: "guid-fail", Hostname: "host-fail", SiteID: 1, SiteSlug: siteSlug}}}, nil
	},
	"SendScript": func(_ context.Context, in activities.SendScriptInput) (agentgateway.Reply, error) {
		if in.GUID == "guid-fail" {
			return agentgateway.Reply{}, temporal.NewNonRetryableApplicationError("the payload signature does not verify", proto.CodeSignatureInvalid, nil)
		}
		return agentgateway.Reply{Payload: json.RawMessage(`{"exit_code":0,"stdout":"hi\n","stderr":"","duration_ms":3}`)}, nil
	},
	"RecordOutcomes": func(context.Context, []automation.Outcome) error { return nil },
	"FinishRun":      func(context.Context, cairn.RunID) error { return nil },
	// Scheduled jobs and flows: job 0 was deleted since (the fire skips),
	// any other job runs as the run its fire names; every flow step's job
	// run fails, so on_failure steps run and on_success ones are skipped.
	"PrepareFire": func(_ context.Context, in activities.FireInput) (scheduledjobs.FirePlan, error) {
		if in.JobID == 0 {
			return scheduledjobs.FirePlan{Skip: "the job was deleted"}, nil
		}
		if in.JobID == 9 {
			return scheduledjobs.FirePlan{RunID: in.RunID, Kind: scheduledjobs.KindAgentMaintenance, SiteIDs: []int64{1}}, nil
		}
		if in.JobID == 10 {
			return scheduledjobs.FirePlan{RunID: in.RunID, Kind: scheduledjobs.KindPatchInstall, SiteIDs: []int64{1}}, nil
		}
		return scheduledjobs.FirePlan{RunID: in.RunID, Kind: scheduledjobs.KindScript, SiteIDs: []int64{2, 1}}, nil
	},
	// Job 9 is an agent_maintenance job: its updates are requested and
	// have ended by the first look (JobRunStatus answers failed).
	"RequestAgentMaintenance": func(context.Context, activities.FireInput) (bool, error) { return true, nil },
	// Job 10 is a patch_install job: its run's installs are handed to
	// the lanes; one is still open at the first look, none at the next.
	"StartPatchRun": func(context.Context, activities.FireInput) (bool, error) { return true, nil },
	"SettlePatchRun": func(_ context.Context, runID string) (int, error) {
		if _, seen := patchRunLooks.LoadOrStore(runID, true); !seen {
			return 1, nil
		}
		return 0, nil
	},
	"AcquireSlot":  func(context.Context, activities.SlotInput) error { return nil },
	"ReleaseSlots": func(context.Context, string) error { return nil },
	"LoadFlowRun": func(_ context.Context, runID string) (activities.FlowPlan, error) {
		steps := []flows.Step{{ID: "check", AssemblyID: 1, Condition: flows.CondAlways},
			{ID: "clean", AssemblyID: 2, Condition: flows.CondOnFailure}, {ID: "report", AssemblyID: 3, Condition: flows.CondOnSuccess}}
		run := flows.Run{RunID: cairn.RunID(runID), WorkflowID: 1, Status: flows.StatusPending, DeviceGUIDs: []string{"guid-ok"}, RequestedBy: "admin"}
		for _, s := range steps {
			run.Steps = append(run.Steps, flows.StepRun{StepID: s.ID, Status: flows.StatusPending})
		}
		return activities.FlowPlan{Run: run, Steps: steps, SiteIDs: []int64{1}}, nil
	},
	"SaveFlowRun":   func(context.Context, flows.Run) error { return nil },
	"CreateStepRun": func(_ context.Context, in activities.StepInput) (string, error) { return string(in.RunID), nil },
	"JobRunStatus":  func(context.Context, string) (string, error) { return flows.StatusFailed, nil },
	// A transfer is running at the first look and completed at the next;
	// a "stall-" one has been silent for an hour at the first look, so it
	// is asked of its agent again.
	"FileTransferState": func(_ context.Context, id string) (activities.TransferState, error) {
		if _, seen := transferLooks.LoadOrStore(id, true); !seen || strings.HasPrefix(id, "cancel-") {
			if strings.HasPrefix(id, "stall-") {
				return activities.TransferState{State: "running", Idle: time.Hour}, nil
			}
			return activities.TransferState{State: "running"}, nil
		}
		return activities.TransferState{State: "completed"}, nil
	},
	"StartFileTransfer":  func(context.Context, string) error { return nil },
	"FinishFileTransfer": func(context.Context, activities.FinishTransferInput) error { return nil },
	"PurgeFileTransfer":  func(context.Context, string) error { return nil },
	// Watchdogs: an evaluation opens incident 41; the incident's actions
	// are a toast, a service restart and tracking.
	"EvaluateWatchdog": func(context.Context, int64) (activities.EvaluateResult, error) {
		return activities.EvaluateResult{Evaluated: 3, Opened: []int64{41}}, nil
	},
	"EvaluateDueWatchdogs": func(context.Context) (int64, error) { return 3, nil },
	"PlanIncident": func(_ context.Context, id int64) (activities.IncidentPlan, error) {
		if id == 42 {
			return activities.IncidentPlan{Active: true, Actions: []watchdogs.Action{{Type: watchdogs.ActionRunAssembly, AssemblyID: 3,
				AssemblySHA256: "ab"}}}, nil
		}
		return activities.IncidentPlan{Active: true, Actions: []watchdogs.Action{{Type: watchdogs.ActionToast},
			{Type: watchdogs.ActionServiceControl, Service: "cron", ServiceAction: "restart"}, {Type: watchdogs.ActionTrack}}}, nil
	},
	"ToastIncident": func(context.Context, int64) error { return nil },
	// Incident 42: a run_assembly action (a JobRun child), then a
	// notification step to channels 1 and 2, a repetition to channel 2
	// a second later, then nothing more is due.
	"CreateIncidentRun": func(_ context.Context, ref activities.IncidentActionRef) (activities.IncidentRun, error) {
		return activities.IncidentRun{RunID: activities.IncidentRunID(cairn.DeviceGUID(unique("guid")), ref.IncidentID, ref.Action)}, nil
	},
	"IncidentRunOutcome": func(_ context.Context, id cairn.RunID) (watchdogs.Outcome, error) {
		return watchdogs.Outcome{Status: "succeeded", Message: "restart exited 0", RunID: string(id)}, nil
	},
	"PlanIncidentNotifications": func(_ context.Context, in activities.NotifyStepInput) (watchdogs.NotifyPlan, error) {
		if in.IncidentID != 42 {
			return watchdogs.NotifyPlan{Active: true}, nil
		}
		switch in.Step {
		case 0:
			return watchdogs.NotifyPlan{Active: true, Channels: []int64{1, 2}, Next: time.Second}, nil
		case 1:
			return watchdogs.NotifyPlan{Active: true, Channels: []int64{2}}, nil
		}
		return watchdogs.NotifyPlan{Active: true}, nil
	},
	"DeliverIncidentNotification": func(_ context.Context, d watchdogs.Delivery) (string, error) {
		if d.IncidentID == 42 && d.Step == 1 {
			incidentNotified <- d.IncidentID
		}
		return watchdogs.DeliverySent, nil
	},
	"GrantIncidentOperation": func(_ context.Context, ref activities.IncidentActionRef) (activities.IncidentOperation, error) {
		return activities.IncidentOperation{OperationID: fmt.Sprintf("watchdog-incident-%d-%d", ref.IncidentID, ref.Action),
			Target: devices.OperationTarget{GUID: cairn.DeviceGUID(unique("guid")), Hostname: "host-1", SiteID: 1, SiteSlug: siteSlug, SocketLive: true},
			Type:   proto.EventServiceControl, Payload: json.RawMessage(`{"name":"cron","action":"restart"}`), Kind: "service_restart",
			Summary: "Watchdog: restart cron", Actor: "watchdog", Grant: "grant"}, nil
	},
	"RecordIncidentOutcome": func(_ context.Context, in activities.OutcomeInput) error {
		if in.Outcome.Action == 2 {
			incidentActed <- in.IncidentID
		}
		return nil
	},
	"AcknowledgeIncident": func(_ context.Context, c activities.IncidentChange) (activities.IncidentView, error) {
		return activities.IncidentView{Incident: db.WatchdogIncident{ID: c.IncidentID, State: watchdogs.StateAcknowledged, AcknowledgedBy: &c.Actor}}, nil
	},
	"SetIncidentState": func(_ context.Context, c activities.IncidentChange) (activities.IncidentView, error) {
		return activities.IncidentView{Incident: db.WatchdogIncident{ID: c.IncidentID, State: c.State, SuppressReason: &c.Reason}}, nil
	},
	// Patch installs: the first order runs, a repeat of it finds it
	// finished.
	"BeginPatchInstall": func(_ context.Context, id string) (activities.PatchInstallBegun, error) {
		_, seen := patchBegins.LoadOrStore(id, true)
		return activities.PatchInstallBegun{Install: patches.Install{ID: id, State: patches.StateRunning}, Run: !seen}, nil
	},
	"ConcludePatchInstall": func(context.Context, activities.ConcludePatchInput) (string, error) {
		return patches.StateInstalled, nil
	},
	"BeginPatchReboot": func(context.Context, string) (bool, error) { return true, nil },
	"ConcludePatchReboot": func(context.Context, activities.ConcludeRebootInput) (string, error) {
		return patches.RebootSkipped, nil
	},
	"BeginPatchEnforcement": func(context.Context, string) (bool, error) { return true, nil },
	"ConcludePatchEnforcement": func(context.Context, activities.ConcludeEnforcementInput) (string, error) {
		return patches.EnforcementApplied, nil
	},
}

// incidentActed carries the incidents whose last action was recorded.
var incidentActed = make(chan int64, 1)

// incidentNotified carries the incidents whose repetition was sent.
var incidentNotified = make(chan int64, 1)

// patchRunLooks remembers which runs SettlePatchRun answered once.
var patchRunLooks sync.Map

// patchBegins remembers which installs BeginPatchInstall started.
var patchBegins sync.Map

// tunnelLooks remembers which tunnels CheckTunnelReady answered once.
var tunnelLooks sync.Map

// transferLooks remembers which transfers FileTransferState answered once.
var transferLooks sync.Map

// updateLooks remembers which updates AgentUpdateStatus answered once.
var updateLooks sync.Map

// siteSlug is the site of the job-run scenario's devices.
const siteSlug = "histories-site"

// onboardingLooks counts OnboardingEnrolled's answers per job.
var onboardingLooks sync.Map

var scenarios = []scenario{
	{"worker_probe.json", func(ctx context.Context, c client.Client) (string, error) {
		run, err := start(ctx, c, workflows.WorkerProbeWorkflowID(queue, unique("probe")), workflows.WorkerProbe)
		return wait(ctx, run, err)
	}, false},
	// Recorded before EnrollmentApproval took decisions as updates: an
	// unknown decision, then approve, by signal.
	{"enrollment_signal_approve_v0.json", func(ctx context.Context, c client.Client) (string, error) {
		id := workflows.EnrollmentWorkflowID(unique("signal-approve"))
		run, err := start(ctx, c, id, workflows.EnrollmentApproval, workflows.EnrollmentInput{ApprovalID: id, ExpiresAt: time.Now().Add(time.Hour)})
		if err != nil {
			return "", err
		}
		for _, d := range []workflows.EnrollmentDecision{{Decision: "maybe", Actor: "eve"}, {Decision: workflows.DecisionApprove, Actor: "alice"}} {
			if err := c.SignalWorkflow(ctx, id, "", workflows.SignalEnrollmentDecision, d); err != nil {
				return "", err
			}
		}
		return wait(ctx, run, nil)
	}, true},
	// Recorded before the update change: nobody decides, the request expires.
	{"enrollment_expire_v0.json", func(ctx context.Context, c client.Client) (string, error) {
		id := workflows.EnrollmentWorkflowID(unique("expire"))
		run, err := start(ctx, c, id, workflows.EnrollmentApproval, workflows.EnrollmentInput{ApprovalID: id, ExpiresAt: time.Now().Add(2 * time.Second)})
		return wait(ctx, run, err)
	}, true},
	// Decisions as decide updates: one rejected by the validator, then a
	// deny whose recorded outcome the update returns.
	{"enrollment_update_deny.json", func(ctx context.Context, c client.Client) (string, error) {
		id := unique("update-deny")
		run, err := start(ctx, c, workflows.EnrollmentWorkflowID(id), workflows.EnrollmentApproval, workflows.EnrollmentInput{ApprovalID: id, ExpiresAt: time.Now().Add(time.Hour)})
		if err != nil {
			return "", err
		}
		starter := workflowclient.EnrollmentStarter{Client: c, TaskQueue: queue}
		if _, err := starter.DecideAndWait(ctx, id, time.Now().Add(time.Hour), workflows.EnrollmentDecision{Decision: "maybe", Actor: "eve"}); err == nil {
			return "", errors.New("an unknown decision was accepted")
		}
		res, err := starter.DecideAndWait(ctx, id, time.Now().Add(time.Hour), workflows.EnrollmentDecision{Decision: workflows.DecisionDeny, Actor: "bob"})
		if err != nil {
			return "", err
		}
		if res.Status != "denied" {
			return "", fmt.Errorf("update answered %+v", res)
		}
		return wait(ctx, run, nil)
	}, false},
	{"maintenance_sessions.json", func(ctx context.Context, c client.Client) (string, error) {
		run, err := start(ctx, c, workflows.MaintenanceScheduleID(workflows.JobSessions)+"-"+unique("run"), workflows.Maintenance,
			workflows.MaintenanceInput{Job: workflows.JobSessions})
		return wait(ctx, run, err)
	}, false},
	{"maintenance_presence.json", func(ctx context.Context, c client.Client) (string, error) {
		run, err := start(ctx, c, workflows.MaintenanceScheduleID(workflows.JobPresence)+"-"+unique("run"), workflows.Maintenance,
			workflows.MaintenanceInput{Job: workflows.JobPresence})
		return wait(ctx, run, err)
	}, false},
	// The job-schedules job (issue 22 item 4) added a job to the same
	// workflow: the older maintenance histories replay unchanged, this one
	// covers the new job's path.
	{"maintenance_job_schedules.json", func(ctx context.Context, c client.Client) (string, error) {
		run, err := start(ctx, c, workflows.MaintenanceScheduleID(workflows.JobJobSchedules)+"-"+unique("run"), workflows.Maintenance,
			workflows.MaintenanceInput{Job: workflows.JobJobSchedules})
		return wait(ctx, run, err)
	}, false},
	// A staged backup applied in one transaction, then the Schedules.
	{"backup_restore.json", func(ctx context.Context, c client.Client) (string, error) {
		in := workflows.BackupRestoreInput{ID: unique("restore"), Actor: "admin"}
		run, err := start(ctx, c, workflows.BackupRestoreWorkflowID(in.ID), workflows.BackupRestore, in)
		return wait(ctx, run, err)
	}, false},
	// A scheduled backup written and pruned in one activity.
	{"scheduled_backup.json", func(ctx context.Context, c client.Client) (string, error) {
		run, err := start(ctx, c, workflows.ScheduledBackupWorkflowID+"-"+unique("h"), workflows.ScheduledBackup, workflows.ScheduledBackupInput{ID: unique("run")})
		return wait(ctx, run, err)
	}, false},
	// The weekly restore drill: one activity, passed.
	{"restore_drill.json", func(ctx context.Context, c client.Client) (string, error) {
		run, err := start(ctx, c, workflows.RestoreDrillWorkflowID+"-"+unique("h"), workflows.RestoreDrill, workflows.ScheduledBackupInput{ID: unique("drill")})
		return wait(ctx, run, err)
	}, false},
	// Service actions (issue 26): a site worker restarted on its own
	// queue then serving again; the edge certificate reloaded; tunnels
	// reconciled.
	{"service_action_restart.json", func(ctx context.Context, c client.Client) (string, error) {
		return serviceAction(ctx, c, serveradmin.ServiceAction{Service: "worker:site:" + siteSlug, Action: serveradmin.ActionRestart, SiteSlug: siteSlug})
	}, false},
	{"service_action_reload_certificate.json", func(ctx context.Context, c client.Client) (string, error) {
		return serviceAction(ctx, c, serveradmin.ServiceAction{Service: "edge", Action: serveradmin.ActionReloadCertificate})
	}, false},
	{"service_action_reconcile_tunnels.json", func(ctx context.Context, c client.Client) (string, error) {
		return serviceAction(ctx, c, serveradmin.ServiceAction{Service: "tunnels", Action: serveradmin.ActionReconcileTunnels})
	}, false},
	// Cluster admissions (issue 26): an unknown decision ignored, then
	// an approval; an admission nobody decides expires.
	{"cluster_admission_approve.json", func(ctx context.Context, c client.Client) (string, error) {
		id := workflows.ClusterAdmissionWorkflowID(unique("approve"))
		run, err := start(ctx, c, id, workflows.ClusterAdmission, workflows.ClusterAdmissionInput{AdmissionID: id, ExpiresAt: time.Now().Add(time.Hour)})
		if err != nil {
			return "", err
		}
		for _, d := range []workflows.ClusterDecision{{Decision: "maybe", Actor: "eve"}, {Decision: "approve", Actor: "alice"}} {
			if err := c.SignalWorkflow(ctx, id, "", workflows.SignalClusterDecision, d); err != nil {
				return "", err
			}
		}
		return wait(ctx, run, nil)
	}, false},
	{"cluster_admission_expire.json", func(ctx context.Context, c client.Client) (string, error) {
		id := workflows.ClusterAdmissionWorkflowID(unique("expire"))
		run, err := start(ctx, c, id, workflows.ClusterAdmission, workflows.ClusterAdmissionInput{AdmissionID: id, ExpiresAt: time.Now().Add(2 * time.Second)})
		return wait(ctx, run, err)
	}, false},
	// Recorded before the tunnel teardown (GetVersion tunnel-teardown).
	{"device_trust_quarantine.json", func(ctx context.Context, c client.Client) (string, error) {
		return trustAction(ctx, c, "quarantine", "quarantined")
	}, true},
	// Issue 23: the socket goes, then the tunnel.
	{"device_trust_revoke_tunnel.json", func(ctx context.Context, c client.Client) (string, error) {
		return trustAction(ctx, c, "revoke", "revoked")
	}, false},
	// The first vpn_tunnel_start sees no handshake; the second brings the
	// tunnel up and the ready report follows.
	{"tunnel_establish_retry.json", func(ctx context.Context, c client.Client) (string, error) {
		return tunnelEstablish(ctx, c, unique("guid"), false)
	}, false},
	// A quarantined device is refused at once: no further attempt.
	{"tunnel_establish_refused.json", func(ctx context.Context, c client.Client) (string, error) {
		return tunnelEstablish(ctx, c, unique("quarantined-guid"), true)
	}, false},
	// Issue 23, VNC: ready, the browser attaches and leaves, the
	// reconnect window passes, vnc_stop and the end are recorded.
	{"remote_desktop_session.json", func(ctx context.Context, c client.Client) (string, error) {
		return remoteDesktop(ctx, c, unique("guid"), false)
	}, false},
	// The server never sends its banner: past the (5 s) deadline the
	// establishment fails with vnc_establish_timeout.
	{"remote_desktop_deadline.json", func(ctx context.Context, c client.Client) (string, error) {
		return remoteDesktop(ctx, c, unique("nobanner-guid"), true)
	}, false},
	// Issue 23, RDP: rdp_start, the X.224 probe, the bridge; the browser
	// attaches and leaves, the reconnect window passes, the bridge stops.
	{"remote_desktop_rdp.json", func(ctx context.Context, c client.Client) (string, error) {
		return remoteDesktopRDP(ctx, c, unique("guid"), false)
	}, false},
	// The RDP port never answers: one rdp_transport_recovery, the probe
	// again, then rdp_backend_not_ready (rule 5).
	{"remote_desktop_rdp_recovery.json", func(ctx context.Context, c client.Client) (string, error) {
		return remoteDesktopRDP(ctx, c, unique("rdpdown-guid"), true)
	}, false},
	{"device_trust_unquarantine.json", func(ctx context.Context, c client.Client) (string, error) {
		return trustAction(ctx, c, "unquarantine", "active")
	}, false},
	{"device_operation_service_restart.json", func(ctx context.Context, c client.Client) (string, error) {
		return operation(ctx, c, proto.EventServiceControl, "service_restart", `{"name":"cron","action":"restart"}`, false)
	}, false},
	{"device_operation_terminate_refused.json", func(ctx context.Context, c client.Client) (string, error) {
		return operation(ctx, c, proto.EventProcessManagement, "process_terminate", `{"action":"terminate","pid":4242,"name":"sleep"}`, true)
	}, false},
	// The agent takes the update, posts progress (a signal) and checks in.
	{"agent_update_succeeded.json", func(ctx context.Context, c client.Client) (string, error) {
		return agentUpdate(ctx, c, unique("op"), time.Minute, "succeeded")
	}, false},
	// The agent takes the update and never checks in on the new build.
	{"agent_update_timed_out.json", func(ctx context.Context, c client.Client) (string, error) {
		return agentUpdate(ctx, c, unique("timeout-op"), 2*time.Second, "timed_out")
	}, false},
	// The progress signal carries the status the route recorded
	// (succeeded): the workflow ends with it without reading the record
	// again (GetVersion progress-carries-status).
	{"agent_update_progress_status.json", func(ctx context.Context, c client.Client) (string, error) {
		return agentUpdate(ctx, c, unique("carried-op"), time.Minute, "succeeded")
	}, false},
	// An operator's update: a slot of its site's lane first, freed once
	// its run has ended.
	{"agent_update_lane.json", func(ctx context.Context, c client.Client) (string, error) {
		return agentUpdate(ctx, c, unique("lane-op"), time.Minute, "succeeded")
	}, false},
	// A quick run to two devices: one answers, one refuses the signature.
	{"job_run_two_devices.json", func(ctx context.Context, c client.Client) (string, error) {
		id := unique("run")
		run, err := start(ctx, c, automation.JobRunWorkflowID(cairn.RunID(id)), workflows.JobRun, workflows.JobRunInput{RunID: cairn.RunID(id)})
		return wait(ctx, run, err)
	}, false},
	// An Ansible playbook run to devices of two sites: a lane slot of
	// each site, the two devices, the slots freed.
	{"job_run_ansible_slots.json", func(ctx context.Context, c client.Client) (string, error) {
		id := unique("ansible-run")
		run, err := start(ctx, c, automation.JobRunWorkflowID(cairn.RunID(id)), workflows.JobRun, workflows.JobRunInput{RunID: cairn.RunID(id)})
		return wait(ctx, run, err)
	}, false},
	// A software uninstall: its JobRun child (two devices answer as in
	// job_run_two_devices), then the software refresh, a DeviceOperation
	// child on the device's site queue.
	{"software_uninstall.json", func(ctx context.Context, c client.Client) (string, error) {
		id := cairn.RunID(unique("run"))
		in := workflows.SoftwareUninstallInput{RunID: id, Refresh: workflows.OperationInput{OperationID: cairn.OperationID(unique("op")),
			Type: proto.EventSoftwareRefresh, Payload: json.RawMessage(`{}`), Kind: "software_refresh", Summary: "Refresh software inventory", Actor: "admin",
			Target: devices.OperationTarget{GUID: "guid-ok", Hostname: "host-ok", SiteID: 1, SiteSlug: siteSlug, SocketLive: true}}}
		run, err := start(ctx, c, workflows.SoftwareUninstallWorkflowID(id), workflows.SoftwareUninstall, in)
		return wait(ctx, run, err)
	}, false},
	// A scheduled job's rerun: slots for two sites, the JobRun child.
	{"scheduled_job_fire_rerun.json", func(ctx context.Context, c client.Client) (string, error) {
		id := unique("run")
		run, err := start(ctx, c, "scheduled-job:7:rerun:"+id, workflows.ScheduledJobFire,
			workflows.ScheduledJobFireInput{JobID: 7, RunID: cairn.RunID(id), Trigger: workflows.TriggerRerun, Actor: "admin"})
		return wait(ctx, run, err)
	}, false},
	// An agent_maintenance job's rerun: slot, request, the run has ended.
	{"scheduled_job_fire_agent_maintenance.json", func(ctx context.Context, c client.Client) (string, error) {
		id := unique("run")
		run, err := start(ctx, c, "scheduled-job:9:rerun:"+id, workflows.ScheduledJobFire,
			workflows.ScheduledJobFireInput{JobID: 9, RunID: cairn.RunID(id), Trigger: workflows.TriggerRerun, Actor: "admin"})
		return wait(ctx, run, err)
	}, false},
	// A patch_install job's rerun: slot, the run's installs handed to
	// the lanes, one look while one is open, one after.
	{"scheduled_job_fire_patch_install.json", func(ctx context.Context, c client.Client) (string, error) {
		id := unique("run")
		run, err := start(ctx, c, "scheduled-job:10:rerun:"+id, workflows.ScheduledJobFire,
			workflows.ScheduledJobFireInput{JobID: 10, RunID: cairn.RunID(id), Trigger: workflows.TriggerRerun, Actor: "admin"})
		return wait(ctx, run, err)
	}, false},
	// A schedule's fire of a job deleted since: skipped.
	{"scheduled_job_fire_skipped.json", func(ctx context.Context, c client.Client) (string, error) {
		run, err := start(ctx, c, "scheduled-job:0-"+unique("fire"), workflows.ScheduledJobFire, workflows.ScheduledJobFireInput{})
		return wait(ctx, run, err)
	}, false},
	// A device's patch lane: two installs handed over by signal-with-start
	// (the second order repeats the first's install, which has finished),
	// each install followed by a re-scan; the idle lane ends.
	{"patch_lane_two_orders.json", func(ctx context.Context, c client.Client) (string, error) {
		guid := unique("guid")
		id := workflows.PatchLaneWorkflowID(guid)
		in := workflows.PatchLaneInput{GUID: guid, Idle: 2 * time.Second}
		var run client.WorkflowRun
		inst := unique("install")
		for range 2 {
			o := workflows.PatchInstallOrder{InstallID: inst, Request: json.RawMessage(`{"install_id":"` + inst + `","package":"openssl"}`),
				InstallGrant: "grant", RefreshGrant: "grant"}
			r, err := c.SignalWithStartWorkflow(ctx, id, workflows.SignalPatchInstall, o,
				client.StartWorkflowOptions{ID: id, TaskQueue: queue}, workflows.PatchLane, in)
			if err != nil {
				return "", err
			}
			run = r
		}
		return wait(ctx, run, nil)
	}, false},
	// A device's patch lane: an install, then a reboot order after it
	// (skipped_logged_in_user); the idle lane ends.
	{"patch_lane_install_then_reboot.json", func(ctx context.Context, c client.Client) (string, error) {
		guid := unique("guid")
		id := workflows.PatchLaneWorkflowID(guid)
		in := workflows.PatchLaneInput{GUID: guid, Idle: 2 * time.Second}
		inst, rb := unique("install"), unique("reboot")
		var run client.WorkflowRun
		for _, o := range []workflows.PatchInstallOrder{
			{InstallID: inst, Request: json.RawMessage(`{"install_id":"` + inst + `","package":"openssl"}`), InstallGrant: "grant", RefreshGrant: "grant"},
			{Reboot: &workflows.PatchRebootOrder{RebootID: rb, Request: json.RawMessage(`{"reboot_id":"` + rb + `","when_required":true,"forced":false}`), Grant: "grant"}},
		} {
			r, err := c.SignalWithStartWorkflow(ctx, id, workflows.SignalPatchInstall, o,
				client.StartWorkflowOptions{ID: id, TaskQueue: queue}, workflows.PatchLane, in)
			if err != nil {
				return "", err
			}
			run = r
		}
		return wait(ctx, run, nil)
	}, false},
	// A device's patch lane: a patch_policy_enforcement_request (managed,
	// applied), then an install; the idle lane ends.
	{"patch_lane_enforcement_then_install.json", func(ctx context.Context, c client.Client) (string, error) {
		guid := unique("guid")
		id := workflows.PatchLaneWorkflowID(guid)
		in := workflows.PatchLaneInput{GUID: guid, Idle: 2 * time.Second}
		enf, inst := unique("enforcement"), unique("install")
		var run client.WorkflowRun
		for _, o := range []workflows.PatchInstallOrder{
			{Enforcement: &workflows.PatchEnforcementOrder{EnforcementID: enf, Request: json.RawMessage(`{"enforcement_id":"` + enf + `","mode":"managed"}`), Grant: "grant"}},
			{InstallID: inst, Request: json.RawMessage(`{"install_id":"` + inst + `","kb":"KB5034441"}`), InstallGrant: "grant", RefreshGrant: "grant"},
		} {
			r, err := c.SignalWithStartWorkflow(ctx, id, workflows.SignalPatchInstall, o,
				client.StartWorkflowOptions{ID: id, TaskQueue: queue}, workflows.PatchLane, in)
			if err != nil {
				return "", err
			}
			run = r
		}
		return wait(ctx, run, nil)
	}, false},
	// A three-step flow whose first step fails.
	{"flow_run_three_steps.json", func(ctx context.Context, c client.Client) (string, error) {
		id := unique("flow")
		run, err := start(ctx, c, workflows.FlowRunWorkflowID(cairn.RunID(id)), workflows.FlowRun, workflows.FlowRunInput{RunID: cairn.RunID(id)})
		return wait(ctx, run, err)
	}, false},
	// A download that completes and keeps its content for the retention
	// period (a durable timer), and an upload whose agent went silent and
	// was asked again.
	{"file_transfer_download.json", func(ctx context.Context, c client.Client) (string, error) {
		return fileTransfer(ctx, c, unique("download"), "download")
	}, false},
	{"file_transfer_stalled_upload.json", func(ctx context.Context, c client.Client) (string, error) {
		return fileTransfer(ctx, c, unique("stall-upload"), "upload")
	}, false},
	// An upload its operator cancelled: the change signal carries the
	// cancelled record, which the workflow takes without reading it again
	// (GetVersion change-carries-state).
	{"file_transfer_cancelled.json", func(ctx context.Context, c client.Client) (string, error) {
		return fileTransfer(ctx, c, unique("cancel-upload"), "upload")
	}, false},
	// A save's evaluation of watchdog 5, and the maintenance job's.
	{"watchdog_evaluate.json", func(ctx context.Context, c client.Client) (string, error) {
		run, err := start(ctx, c, workflows.WatchdogEvaluateWorkflowID(5, 1)+"-"+unique("run"), workflows.WatchdogEvaluate,
			workflows.WatchdogEvaluateInput{WatchdogID: 5})
		return wait(ctx, run, err)
	}, false},
	{"maintenance_watchdogs.json", func(ctx context.Context, c client.Client) (string, error) {
		run, err := start(ctx, c, workflows.MaintenanceScheduleID(workflows.JobWatchdogs)+"-"+unique("run"), workflows.Maintenance,
			workflows.MaintenanceInput{Job: workflows.JobWatchdogs, Activity: "EvaluateDueWatchdogs"})
		return wait(ctx, run, err)
	}, false},
	// An incident: toast, service restart (a DeviceOperation child on the
	// site's queue), tracking; then the operator acknowledges it and
	// suppresses it with a reason (Updates), and the evaluator resolves it.
	{"watchdog_incident_remediation.json", func(ctx context.Context, c client.Client) (string, error) {
		return incident(ctx, c)
	}, false},
	// An incident whose action runs an assembly (a JobRun child) and
	// whose notifications go to two channels, then repeat to one
	// (workflow version incident-notifications 1); the evaluator resolves it.
	{"watchdog_incident_notifications.json", func(ctx context.Context, c client.Client) (string, error) {
		id := unique("histories") + "/" + workflows.IncidentWorkflowID(42)
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue},
			workflows.WatchdogIncident, workflows.IncidentInput{IncidentID: 42})
		if err != nil {
			return "", err
		}
		select {
		case <-incidentNotified:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		if err := c.SignalWorkflow(ctx, id, "", workflows.SignalIncidentEnded, nil); err != nil {
			return "", err
		}
		var res workflows.IncidentResult
		if err := run.Get(ctx, &res); err != nil {
			return "", err
		}
		if len(res.Outcomes) != 1 || res.Outcomes[0].Status != "succeeded" || res.Outcomes[0].RunID == "" {
			return "", fmt.Errorf("outcomes %+v", res.Outcomes)
		}
		return id, nil
	}, false},
	// A redeploy: the connected agent takes the code, the job looks for
	// the new enrollment until it is there.
	{"onboarding_redeploy_enrolled.json", func(ctx context.Context, c client.Client) (string, error) {
		in := workflows.OnboardingInput{JobID: unique("job"), GUID: cairn.DeviceGUID(unique("guid")), OperationID: cairn.OperationID(unique("op")),
			Payload: []byte(`{"enrollment_code":"CODE"}`), Grant: "grant", ExpiresAt: time.Now().Add(time.Hour)}
		run, err := start(ctx, c, workflows.OnboardingWorkflowID(in.JobID), workflows.OnboardingRedeploy, in)
		if err != nil {
			return "", err
		}
		var status string
		if err := run.Get(ctx, &status); err != nil {
			return "", err
		}
		if status != "enrolled" {
			return "", fmt.Errorf("redeploy ended %s", status)
		}
		return run.GetID(), nil
	}, false},
	// onboarding_redeploy_enrolled.json predates the bounded wait (no
	// version marker); this one is recorded with it.
	{"onboarding_redeploy_bounded.json", func(ctx context.Context, c client.Client) (string, error) {
		in := workflows.OnboardingInput{JobID: unique("job"), GUID: cairn.DeviceGUID(unique("guid")), OperationID: cairn.OperationID(unique("op")),
			Payload: []byte(`{"enrollment_code":"CODE"}`), Grant: "grant", ExpiresAt: time.Now().Add(time.Hour)}
		run, err := start(ctx, c, workflows.OnboardingWorkflowID(in.JobID), workflows.OnboardingRedeploy, in)
		if err != nil {
			return "", err
		}
		var status string
		if err := run.Get(ctx, &status); err != nil {
			return "", err
		}
		if status != "enrolled" {
			return "", fmt.Errorf("redeploy ended %s", status)
		}
		return run.GetID(), nil
	}, false},
}

func incident(ctx context.Context, c client.Client) (string, error) {
	prefix := unique("histories") + "/"
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: prefix + workflows.IncidentWorkflowID(41), TaskQueue: queue},
		workflows.WatchdogIncident, workflows.IncidentInput{IncidentID: 41})
	if err != nil {
		return "", err
	}
	select {
	case <-incidentActed:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	st := workflowclient.WatchdogStarter{Client: c, TaskQueue: queue, Prefix: prefix}
	ack, err := st.Acknowledge(ctx, activities.IncidentChange{IncidentID: 41, Actor: "alice", Scope: cairn.AllSites})
	if err != nil || ack.State != watchdogs.StateAcknowledged {
		return "", fmt.Errorf("acknowledge answered %+v, %v", ack, err)
	}
	sup, err := st.SetState(ctx, activities.IncidentChange{IncidentID: 41, Actor: "alice", Scope: cairn.AllSites,
		State: watchdogs.StateSuppressed, Reason: "maintenance"})
	if err != nil || sup.State != watchdogs.StateSuppressed {
		return "", fmt.Errorf("suppress answered %+v, %v", sup, err)
	}
	if err := st.EndIncident(ctx, 41); err != nil {
		return "", err
	}
	var res workflows.IncidentResult
	if err := run.Get(ctx, &res); err != nil {
		return "", err
	}
	if len(res.Outcomes) != 3 || res.Outcomes[1].Status != "succeeded" {
		return "", fmt.Errorf("outcomes %+v", res.Outcomes)
	}
	return run.GetID(), nil
}

// fileTransfer runs one FileTransfer, signalling a change once, and
// checks that it completed.
func fileTransfer(ctx context.Context, c client.Client, id, action string) (string, error) {
	in := workflows.FileTransferInput{TransferID: cairn.TransferID(id), Kind: "file_" + action, Summary: action, Actor: "admin",
		Request:   json.RawMessage(`{"action":"` + action + `","transfer_id":"` + id + `","paths":["/etc/hosts"]}`),
		Retention: 2 * time.Second,
		Target:    devices.OperationTarget{GUID: cairn.DeviceGUID(unique("guid")), Hostname: "host-1", SiteID: 1, SiteSlug: "hq", SocketLive: true}}
	run, err := start(ctx, c, workflows.FileTransferWorkflowID(cairn.TransferID(id)), workflows.FileTransfer, in)
	if err != nil {
		return "", err
	}
	// Older Engines' signal carried nothing; a "cancel-" transfer's
	// carries its cancelled record.
	var change any
	want := "completed"
	if strings.HasPrefix(id, "cancel-") {
		change, want = workflows.FileTransferChange{State: "cancelled", Code: "transfer_cancelled", Message: "cancelled by admin"}, "cancelled"
	}
	if err := c.SignalWorkflow(ctx, run.GetID(), "", workflows.SignalFileTransferChanged, change); err != nil {
		return "", err
	}
	var state string
	if err := run.Get(ctx, &state); err != nil {
		return "", err
	}
	if state != want {
		return "", fmt.Errorf("file transfer ended %s", state)
	}
	return run.GetID(), nil
}

// agentUpdate runs one AgentUpdate, signaling progress once, and checks
// how it ended.
func agentUpdate(ctx context.Context, c client.Client, op string, deadline time.Duration, want string) (string, error) {
	in := workflows.AgentUpdateInput{OperationID: cairn.OperationID(op), ToBuildID: "build-b", Deadline: deadline,
		Payload: json.RawMessage(`{"operation_id":"` + op + `","build_id":"build-b","force":true}`),
		Target:  devices.OperationTarget{GUID: cairn.DeviceGUID(unique("guid")), Hostname: "host-1", SiteID: 1, SiteSlug: "hq", SocketLive: true}}
	if strings.HasPrefix(op, "lane-") {
		in.RunID = cairn.RunID(unique("run"))
		in.LaneHolder = string("agent-maintenance:" + in.RunID)
	}
	id := workflows.AgentUpdateWorkflowID(in.Target.GUID, cairn.OperationID(op))
	run, err := start(ctx, c, id, workflows.AgentUpdate, in)
	if err != nil {
		return "", err
	}
	// Older Engines' signal carried nothing; a "carried-" operation's
	// carries the recorded status.
	var progress any
	if strings.HasPrefix(op, "carried-") {
		progress = workflows.AgentUpdateProgress{Status: "succeeded"}
	}
	if err := c.SignalWorkflow(ctx, id, "", workflows.SignalAgentUpdateProgress, progress); err != nil {
		return "", err
	}
	var status string
	if err := run.Get(ctx, &status); err != nil {
		return "", err
	}
	if status != want {
		return "", fmt.Errorf("agent update ended %s, want %s", status, want)
	}
	return run.GetID(), nil
}

// operation runs one DeviceOperation; wantErr says the agent refuses it.
func operation(ctx context.Context, c client.Client, typ, kind, payload string, wantErr bool) (string, error) {
	in := workflows.OperationInput{OperationID: cairn.OperationID(unique("op")), Type: typ, Payload: json.RawMessage(payload), Kind: kind,
		Summary: kind, Actor: "admin", Target: devices.OperationTarget{GUID: cairn.DeviceGUID(unique("guid")), Hostname: "host-1", SiteID: 1, SiteSlug: "hq", SocketLive: true}}
	run, err := start(ctx, c, workflows.OperationWorkflowID(in.Target.GUID, in.OperationID), workflows.DeviceOperation, in)
	if err != nil {
		return "", err
	}
	err = run.Get(ctx, nil)
	if wantErr != (err != nil) {
		return "", fmt.Errorf("operation ended with %v", err)
	}
	return run.GetID(), nil
}

func trustAction(ctx context.Context, c client.Client, action, state string) (string, error) {
	in := workflows.TrustActionInput{GUID: cairn.DeviceGUID(unique("guid")), Hostname: "host-1", SiteID: 1, SiteSlug: "hq",
		Action: action, TrustState: state, TokenVersion: 2, Actor: "admin"}
	run, err := start(ctx, c, workflows.DeviceTrustWorkflowID(string(in.GUID), action, in.TokenVersion), workflows.DeviceTrustAction, in)
	return wait(ctx, run, err)
}

func tunnelEstablish(ctx context.Context, c client.Client, guid string, wantErr bool) (string, error) {
	in := workflows.TunnelInput{OperationID: unique("op"), Actor: "admin", Reason: "recover",
		Target: devices.OperationTarget{GUID: cairn.DeviceGUID(guid), Hostname: "host-1", SiteID: 1, SiteSlug: "hq", SocketLive: true}}
	run, err := start(ctx, c, workflows.TunnelWorkflowID(guid), workflows.TunnelEstablish, in)
	if err != nil {
		return "", err
	}
	err = run.Get(ctx, nil)
	if wantErr != (err != nil) {
		return "", fmt.Errorf("establishment ended with %v", err)
	}
	return run.GetID(), nil
}

func remoteDesktopRDP(ctx context.Context, c client.Client, guid string, wantErr bool) (string, error) {
	return desktopSession(ctx, c, guid, wantErr, func(in *workflows.DesktopInput) {
		in.Protocol = rdp.Protocol
		in.RDP = &workflows.DesktopRDP{CredentialID: 3, Width: 1280, Height: 800, Quality: "speed"}
	})
}

func remoteDesktop(ctx context.Context, c client.Client, guid string, wantErr bool) (string, error) {
	return desktopSession(ctx, c, guid, wantErr, nil)
}

func desktopSession(ctx context.Context, c client.Client, guid string, wantErr bool, with func(*workflows.DesktopInput)) (string, error) {
	cfg := vnc.DefaultConfig()
	cfg.EstablishDeadline, cfg.ReadyWait, cfg.StartReadyWait, cfg.RFBReadyWait = 5*time.Second, 5*time.Second, 5*time.Second, 5*time.Second
	cfg.PreflightTimeout, cfg.StopDebounce, cfg.TokenTTL = time.Second, time.Second, 30*time.Second
	in := workflows.DesktopInput{SessionID: unique("session"), Actor: "admin", Config: cfg,
		Target: devices.OperationTarget{GUID: cairn.DeviceGUID(guid), Hostname: "host-1", SiteID: 1, SiteSlug: "hq", SocketLive: true}}
	if with != nil {
		with(&in)
	}
	run, err := start(ctx, c, workflows.RemoteDesktopWorkflowID(in.SessionID), workflows.RemoteDesktop, in)
	if err != nil {
		return "", err
	}
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: run.GetID(), UpdateName: workflows.UpdateDesktopAwaitReady,
		WaitForStage: client.WorkflowUpdateStageCompleted})
	if err != nil {
		return "", err
	}
	var st workflows.DesktopStatus
	if err := h.Get(ctx, &st); err != nil {
		return "", err
	}
	if !wantErr {
		if st.Phase != workflows.DesktopPhaseReady {
			return "", fmt.Errorf("establishment answered %+v", st)
		}
		if err := c.SignalWorkflow(ctx, run.GetID(), "", workflows.SignalDesktopAttached, nil); err != nil {
			return "", err
		}
		if err := c.SignalWorkflow(ctx, run.GetID(), "", workflows.SignalDesktopDetached, nil); err != nil {
			return "", err
		}
	}
	err = run.Get(ctx, nil)
	if wantErr != (err != nil) {
		return "", fmt.Errorf("session ended with %v", err)
	}
	return run.GetID(), nil
}

// serviceAction runs one service action on the generator's queue.
func serviceAction(ctx context.Context, c client.Client, a serveradmin.ServiceAction) (string, error) {
	in := workflows.ServiceActionInput{ID: unique("action"), Action: a, Actor: "admin"}
	run, err := start(ctx, c, workflows.ServiceActionWorkflowID(a, in.ID), workflows.ServiceAction, in)
	return wait(ctx, run, err)
}
