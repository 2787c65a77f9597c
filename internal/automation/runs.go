package automation

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
)

// Run kinds and triggers (job_runs.kind, job_runs.trigger).
const (
	RunQuick            = "quick_run"
	RunScheduledJob     = "scheduled_job"
	RunAgentMaintenance = "agent_maintenance"
	RunWorkflow         = "workflow"
	// RunSoftwareUninstall: POST /api/device/software/<hostname>/uninstall.
	RunSoftwareUninstall = "software_uninstall"

	TriggerManual   = "manual"
	TriggerSchedule = "schedule"
	TriggerRerun    = "rerun"
)

// Run and result statuses.
const (
	StatusPending   = "pending"
	StatusRunning   = "running"
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
	StatusCanceled  = "canceled"
	StatusTimedOut  = "timed_out"
	StatusSkipped   = "skipped"
)

// MaxTargets bounds one quick run (docs/api.md "Quick runs").
const MaxTargets = 1000

// ActivityKind is the device activity row kind of a script run.
const ActivityKind = "script_run"

// payloadTTL is how long a per-device signed payload stays valid: the
// run's delivery window (an offline device that comes back later than this
// gets a refusal, not a stale order).
const payloadTTL = 24 * time.Hour

// Signer signs script payloads (scriptsign.Signer).
type Signer interface {
	Sign(ctx context.Context, payload []byte) (proto.Signed, error)
	// Verify checks a payload against the keys agents trust now.
	Verify(ctx context.Context, sg proto.Signed) ([]byte, error)
}

// ECodeContentUnverified: a scheduled job's saved content does not
// verify with a trusted script key (planted in the database, or signed
// by a key retired since); nothing of it is signed for a device.
const ECodeContentUnverified = "script_content_unverified"

// RunSpec is a run to create (contract "Job runs fan-out").
type RunSpec struct {
	// ID is the run ID; empty makes a UUIDv7.
	ID             cairn.RunID
	Kind           string
	Trigger        string
	ScheduledJobID *int64
	// ScheduledFor makes creation idempotent per (job, fire time).
	ScheduledFor *time.Time
	// AssemblyID (with AssemblyVersion, 0 for current) or ad-hoc
	// Language and Body.
	AssemblyID      *int64
	AssemblyVersion int
	// AssemblySHA256 (hex), when set, is the body hash the version had
	// when the work was saved: a different one refuses the run
	// (assembly_changed) rather than run something else.
	AssemblySHA256 string
	Language       string
	Body           string
	Parameters     map[string]any
	// TimeoutSeconds overrides the assembly's (0: the assembly's, or
	// DefaultTimeout for ad-hoc content).
	TimeoutSeconds int
	RequestedBy    string
	Targets        []devices.OperationTarget
	// Signed is content signed earlier (a scheduled job's, when it was
	// saved): it is verified, and what it signed (not the assembly as
	// the database holds it now) is signed again per device, bound to it
	// and to the run. Nil signs Language and Body per device.
	Signed *proto.Signed
	// RunWhenOnline keeps work for offline devices until they ask for it
	// (POST /api/agent/script/request).
	RunWhenOnline bool
	// RunAs is proto.RunAsSystem or proto.RunAsCurrentUser; empty takes
	// the assembly's (system for ad-hoc content). A current_user run
	// fails, unsigned, on targets whose agent does not advertise the
	// currentuser helper context (user_context_unsupported).
	RunAs string
}

// Counts are a run's results by status.
type Counts struct {
	Pending, Running, Succeeded, Failed, TimedOut, Skipped int64
}

// Result is what a run did on one device.
type Result struct {
	GUID            cairn.DeviceGUID
	Hostname        string
	SiteID          *cairn.SiteID
	Status          string
	ExitCode        *int32
	Stdout          string
	Stderr          string
	StdoutTruncated bool
	StderrTruncated bool
	ErrorCode       string
	ErrorMessage    string
	OperationID     cairn.OperationID
	DurationMS      *int64
	StartedAt       *time.Time
	FinishedAt      *time.Time
	// Ansible is a playbook run's recap (nil for scripts and playbook runs
	// that ended before it).
	Ansible *proto.AnsibleRecap
}

// Run is one run with its results.
type Run struct {
	ID              cairn.RunID
	Kind            string
	Status          string
	Trigger         string
	ScheduledJobID  *int64
	ScheduledFor    *time.Time
	AssemblyID      *int64
	AssemblyName    string
	AssemblyVersion *int32
	Language        string
	RunAs           string
	RequestedBy     string
	TimeoutSeconds  int
	TargetCount     int
	CreatedAt       time.Time
	StartedAt       *time.Time
	FinishedAt      *time.Time
	Counts          Counts
	Results         []Result
	// Existing says CreateRun found the run of this fire already made.
	Existing bool
}

// CreateRun records a run and a result row per target: pending for those
// a script can run on (each with its signed payload), skipped for
// quarantined or revoked devices, failed with agent_too_old where the
// agent lacks the scripts capability (nothing is signed or sent to it),
// failed with unsupported_language where the platform cannot run the
// language. Start workflows.JobRun afterwards.
func (s *Service) CreateRun(ctx context.Context, spec RunSpec) (Run, error) {
	if spec.ScheduledFor != nil && spec.ScheduledJobID != nil {
		if r, err := s.store.JobRunGetByFire(ctx, db.JobRunGetByFireParams{ScheduledJobID: spec.ScheduledJobID,
			ScheduledFor: spec.ScheduledFor}); err == nil {
			run, err := s.GetRun(ctx, cairn.AllSites, string(r.ID), false)
			run.Existing = true
			return run, err
		} else if !db.IsNoRows(err) {
			return Run{}, err
		}
	}
	if spec.ID == "" {
		id, err := uuid.NewV7()
		if err != nil {
			return Run{}, err
		}
		spec.ID = cairn.RunID(id.String())
	}
	spec.Kind = cmpOr(spec.Kind, RunQuick)
	spec.Trigger = cmpOr(spec.Trigger, TriggerManual)
	var declared []Parameter
	var version *int32
	if spec.AssemblyID != nil {
		a, err := s.GetAssembly(ctx, *spec.AssemblyID, spec.AssemblyVersion)
		if cairn.IsCode(err, cairn.ECodeNotFound) {
			return Run{}, cairn.Invalid("assembly_id", err.Error())
		} else if err != nil {
			return Run{}, err
		}
		if a.Kind != KindScript && a.Kind != KindAnsiblePlaybook {
			return Run{}, cairn.Invalid("assembly_id", fmt.Sprintf("assembly %d is a %s, not a script or playbook", a.ID, a.Kind))
		}
		if spec.AssemblySHA256 != "" && !strings.EqualFold(spec.AssemblySHA256, a.BodySHA256) {
			return Run{}, cairn.Errorf(cairn.ECodeAssemblyChanged,
				"assembly %d version %d no longer has the body it had when this work was saved (SHA-256 %s, now %s); nothing was run",
				a.ID, a.Version, spec.AssemblySHA256, a.BodySHA256)
		}
		spec.Language, spec.Body, declared = a.Language, a.Body, a.Parameters
		if a.Kind == KindAnsiblePlaybook {
			spec.Language = proto.LangAnsible
		}
		spec.RunAs = cmpOr(spec.RunAs, a.RunAs)
		if spec.TimeoutSeconds == 0 {
			spec.TimeoutSeconds = a.TimeoutSeconds
		}
		v := int32(a.Version)
		version = &v
	}
	spec.TimeoutSeconds = cmpOr(spec.TimeoutSeconds, DefaultTimeout)
	params, err := checkRun(spec, declared)
	if err != nil {
		return Run{}, err
	}
	spec.RunAs = cmpOr(spec.RunAs, proto.RunAsSystem)

	if spec.Signed != nil {
		content, err := s.verifiedContent(ctx, *spec.Signed)
		if err != nil {
			return Run{}, err
		}
		spec.Language, spec.Body, spec.TimeoutSeconds, params = content.Language, content.Body, content.TimeoutSeconds, content.Parameters
		// What was signed when the job was saved decides, as for the body.
		spec.RunAs = cmpOr(content.RunAs, proto.RunAsSystem)
	}
	now := s.now().UTC()
	states, err := s.targetStates(ctx, spec.Targets)
	if err != nil {
		return Run{}, err
	}
	ins := db.JobRunResultsInsertParams{RunID: spec.ID}
	for _, t := range spec.Targets {
		st := states[string(t.GUID)]
		status, code, msg, signed := StatusPending, "", "", ""
		capErr := st.caps.Require(t.Hostname, proto.CapScripts)
		switch {
		case st.trust == devicetrust.TrustQuarantined:
			status, code, msg = StatusSkipped, devicetrust.ECodeDeviceQuarantined, t.Hostname+" is quarantined"
		case st.trust != devicetrust.TrustActive:
			status, code, msg = StatusSkipped, devicetrust.ECodeDeviceRevoked, t.Hostname+" is revoked"
		case capErr != nil:
			status, code, msg = StatusFailed, capErr.Code, capErr.Message
		case !runsOn(spec.Language, st.os):
			status, code, msg = StatusFailed, proto.CodeUnsupportedLanguage,
				fmt.Sprintf("%s cannot run %s (%s)", t.Hostname, spec.Language, cmpOr(st.os, "unknown operating system"))
		case spec.Language == proto.LangAnsible && !proto.HasCapability(st.caps.Set, proto.CapAnsible):
			// A Linux agent built before playbooks: the capability it
			// lacks is not a platform's.
			status, code, msg = StatusFailed, cairn.ECodeAgentTooOld,
				fmt.Sprintf("the agent of %s does not report the %q capability, which agents of protocol %d and later have; update the agent",
					t.Hostname, proto.CapAnsible, proto.CapabilityVersion[proto.CapAnsible])
		case spec.RunAs == proto.RunAsCurrentUser && !slices.Contains(st.helpers, proto.HelperCurrentUser):
			status, code, msg = StatusFailed, proto.CodeUserContextUnsupported,
				fmt.Sprintf("%s cannot run jobs in the user's session: its agent does not advertise the %s helper context (user-context jobs run on Windows agents)",
					t.Hostname, proto.HelperCurrentUser)
		default:
			exp := now.Add(payloadTTL)
			job := proto.ScriptJob{Purpose: proto.PurposeScript, RunID: string(spec.ID), DeviceGUID: string(t.GUID), Language: spec.Language,
				Body: spec.Body, Parameters: params, TimeoutSeconds: spec.TimeoutSeconds, RunAs: spec.RunAs, IssuedAt: now, ExpiresAt: &exp}
			raw, err := json.Marshal(job)
			if err != nil {
				return Run{}, err
			}
			one, err := s.signer.Sign(ctx, raw)
			if err != nil {
				return Run{}, err
			}
			if raw, err = json.Marshal(one); err != nil {
				return Run{}, err
			}
			signed = string(raw)
		}
		site := t.SiteID
		ins.Guids, ins.Hostnames, ins.SiteIds = append(ins.Guids, string(t.GUID)), append(ins.Hostnames, t.Hostname), append(ins.SiteIds, int64(site))
		ins.Statuses, ins.ErrorCodes, ins.ErrorMessages = append(ins.Statuses, status), append(ins.ErrorCodes, code), append(ins.ErrorMessages, msg)
		ins.Signed = append(ins.Signed, signed)
	}
	rawParams, err := json.Marshal(params)
	if err != nil {
		return Run{}, err
	}
	existing := false
	err = s.store.InTx(ctx, func(q *db.Queries) error {
		_, err := q.JobRunInsert(ctx, db.JobRunInsertParams{ID: spec.ID, ScheduledJobID: spec.ScheduledJobID, Kind: spec.Kind,
			Trigger: spec.Trigger, AssemblyID: spec.AssemblyID, AssemblyVersion: version, Language: spec.Language,
			ScheduledFor: spec.ScheduledFor, RequestedBy: spec.RequestedBy, WorkflowID: JobRunWorkflowID(spec.ID),
			TargetCount: int32(len(spec.Targets)), Body: spec.Body, Parameters: rawParams,
			TimeoutSeconds: int32(spec.TimeoutSeconds), RunWhenOnline: spec.RunWhenOnline, RunAs: spec.RunAs})
		if db.IsNoRows(err) { // another firing made this fire's run first
			existing = true
			return nil
		} else if err != nil {
			return err
		}
		if err := q.JobRunResultsInsert(ctx, ins); err != nil {
			return err
		}
		// A run whose every target was skipped is finished already.
		return q.JobRunFinish(ctx, spec.ID)
	})
	if err != nil {
		return Run{}, err
	}
	if existing {
		r, err := s.store.JobRunGetByFire(ctx, db.JobRunGetByFireParams{ScheduledJobID: spec.ScheduledJobID, ScheduledFor: spec.ScheduledFor})
		if err != nil {
			return Run{}, err
		}
		run, err := s.GetRun(ctx, cairn.AllSites, string(r.ID), false)
		run.Existing = true
		return run, err
	}
	return s.GetRun(ctx, cairn.AllSites, string(spec.ID), false)
}

// JobRunWorkflowID names the workflow executing a run.
func JobRunWorkflowID(runID cairn.RunID) string { return string("job-run:" + runID) }

type targetState struct {
	trust, os string
	caps      devices.AgentCapabilities
	helpers   []string // helper_contexts the agent advertised
}

func (s *Service) targetStates(ctx context.Context, targets []devices.OperationTarget) (map[string]targetState, error) {
	guids := make([]string, len(targets))
	for i, t := range targets {
		guids[i] = string(t.GUID)
	}
	rows, err := s.store.JobTargetsByGUID(ctx, db.JobTargetsByGUIDParams{Guids: guids, AllSites: true, SiteIds: []int64{}})
	if err != nil {
		return nil, err
	}
	out := make(map[string]targetState, len(rows))
	for _, r := range rows {
		out[string(r.Guid)] = targetState{trust: r.TrustState, os: r.OperatingSystem, caps: devices.CapabilitiesFrom(r.Capabilities),
			helpers: r.HelperContexts}
	}
	return out, nil
}

// ResolveTargets returns the devices of guids inside scope, in the order
// given; a GUID outside scope or unknown is a validation error naming it
// (like not found: the caller learns nothing about other sites).
func (s *Service) ResolveTargets(ctx context.Context, scope cairn.SiteScope, guids []string) ([]devices.OperationTarget, error) {
	var v cairn.Validation
	switch {
	case len(guids) == 0:
		v.Add("device_guids", "must name at least one device")
	case len(guids) > MaxTargets:
		v.Add("device_guids", fmt.Sprintf("must name at most %d devices", MaxTargets))
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	rows, err := s.store.JobTargetsByGUID(ctx, db.JobTargetsByGUIDParams{Guids: guids, AllSites: scope.All, SiteIds: scope.IDs()})
	if err != nil {
		return nil, err
	}
	found := make(map[string]db.JobTargetsByGUIDRow, len(rows))
	for _, r := range rows {
		found[string(r.Guid)] = r
	}
	out := make([]devices.OperationTarget, 0, len(guids))
	seen := map[string]bool{}
	for i, g := range guids {
		r, ok := found[g]
		if !ok {
			return nil, cairn.Invalid(fmt.Sprintf("device_guids[%d]", i), fmt.Sprintf("no device %q", g))
		}
		if seen[g] {
			continue
		}
		seen[g] = true
		out = append(out, devices.OperationTarget{GUID: r.Guid, Hostname: r.Hostname, SiteID: r.SiteID, SiteSlug: r.SiteSlug})
	}
	return out, nil
}

// runsOn reports whether a device whose operating system reads os can run
// lang. An unknown operating system is given the benefit of the doubt
// for Linux languages (most agents) and refused for Windows ones.
func runsOn(lang, os string) bool {
	windows := strings.Contains(strings.ToLower(os), "windows")
	if lang == proto.LangAnsible {
		return !windows // ansible-playbook has no Windows build
	}
	switch LanguagePlatform(lang) {
	case "windows":
		return windows
	case "linux":
		return !windows
	}
	return false
}

// checkRun validates a run's content and turns its parameters into the
// environment values the agent sets (CAIRN_PARAM_<NAME>).
func checkRun(spec RunSpec, declared []Parameter) (map[string]string, error) {
	var v cairn.Validation
	if spec.AssemblyID == nil {
		if LanguagePlatform(spec.Language) == "" {
			v.Add("language", "must be bash, sh or python (Linux), or powershell or cmd (Windows)")
		}
		if strings.TrimSpace(spec.Body) == "" {
			v.Add("body", "is required")
		} else if len(spec.Body) > MaxBody {
			v.Add("body", fmt.Sprintf("must be at most %d bytes", MaxBody))
		}
	}
	if spec.TimeoutSeconds < 1 || spec.TimeoutSeconds > MaxTimeoutSeconds {
		v.Add("timeout_seconds", fmt.Sprintf("must be between 1 and %d", MaxTimeoutSeconds))
	}
	if spec.RunAs != "" && !validRunAs(spec.RunAs) {
		v.Add("run_as", runAsRule)
	}
	out := map[string]string{}
	if len(spec.Parameters) > MaxParameters {
		v.Add("parameters", fmt.Sprintf("must have at most %d entries", MaxParameters))
		return out, v.Err()
	}
	if declared != nil {
		known := map[string]bool{}
		for _, p := range declared {
			known[p.Name] = true
			val, given := spec.Parameters[p.Name]
			if !given || val == nil {
				val = p.Default
			}
			if val == nil {
				if p.Required {
					v.Add("parameters."+p.Name, "is required")
				}
				continue
			}
			text, err := paramValue(p.Type, val)
			if err != nil {
				v.Add("parameters."+p.Name, err.Error())
				continue
			}
			out[p.Name] = text
		}
		for name := range spec.Parameters {
			if !known[name] {
				v.Add("parameters."+name, "is not a parameter of this assembly")
			}
		}
		return out, v.Err()
	}
	names := make([]string, 0, len(spec.Parameters))
	for name := range spec.Parameters {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if !paramName.MatchString(name) {
			v.Add("parameters."+name, "names must be a letter or '_' followed by letters, digits or '_'")
			continue
		}
		var text string
		var err error
		switch val := spec.Parameters[name].(type) {
		case string:
			text = val
		case bool:
			text, err = paramValue("boolean", val)
		case float64, json.Number:
			text, err = paramValue("number", val)
		default:
			err = fmt.Errorf("must be a string, number or boolean")
		}
		if err != nil {
			v.Add("parameters."+name, err.Error())
			continue
		}
		out[name] = text
	}
	return out, v.Err()
}

// GetRun returns a run with (withResults) its results inside scope. A run
// with no result inside an operator's scope is not found.
func (s *Service) GetRun(ctx context.Context, scope cairn.SiteScope, id string, withResults bool) (Run, error) {
	r, err := s.store.JobRunGet(ctx, cairn.RunID(id))
	if err != nil {
		return Run{}, db.NotFound(err, "no such run")
	}
	c, err := s.store.JobRunCounts(ctx, db.JobRunCountsParams{RunID: cairn.RunID(id), AllSites: scope.All, SiteIds: scope.IDs()})
	if err != nil {
		return Run{}, err
	}
	counts := Counts{Pending: c.Pending, Running: c.Running, Succeeded: c.Succeeded, Failed: c.Failed, TimedOut: c.TimedOut, Skipped: c.Skipped}
	total := counts.Pending + counts.Running + counts.Succeeded + counts.Failed + counts.TimedOut + counts.Skipped
	if !scope.All && total == 0 {
		return Run{}, cairn.Errorf(cairn.ECodeNotFound, "no such run")
	}
	run := Run{ID: r.ID, Kind: r.Kind, Status: r.Status, Trigger: r.Trigger, ScheduledJobID: r.ScheduledJobID,
		ScheduledFor: r.ScheduledFor, AssemblyID: r.AssemblyID, AssemblyName: r.AssemblyName, AssemblyVersion: r.AssemblyVersion,
		Language: r.Language, RunAs: r.RunAs, RequestedBy: r.RequestedBy, TimeoutSeconds: int(r.TimeoutSeconds), TargetCount: int(r.TargetCount),
		CreatedAt: r.CreatedAt, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, Counts: counts}
	if run.Status == StatusPending && counts.Pending < total {
		run.Status = StatusRunning
	}
	if !withResults {
		return run, nil
	}
	rows, err := s.store.JobRunResultList(ctx, db.JobRunResultListParams{RunID: cairn.RunID(id), AllSites: scope.All, SiteIds: scope.IDs()})
	if err != nil {
		return Run{}, err
	}
	run.Results = make([]Result, len(rows))
	for i, x := range rows {
		run.Results[i] = Result{GUID: x.DeviceGuid, Hostname: x.Hostname, SiteID: x.SiteID, Status: x.Status, ExitCode: x.ExitCode,
			Stdout: x.Stdout, Stderr: x.Stderr, StdoutTruncated: x.StdoutTruncated, StderrTruncated: x.StderrTruncated,
			ErrorCode: x.ErrorCode, ErrorMessage: x.ErrorMessage, OperationID: x.OperationID, DurationMS: x.DurationMs,
			StartedAt: x.StartedAt, FinishedAt: x.FinishedAt}
		if len(x.AnsibleRecap) > 0 {
			var rc proto.AnsibleRecap
			if json.Unmarshal(x.AnsibleRecap, &rc) == nil {
				run.Results[i].Ansible = &rc
			}
		}
	}
	return run, nil
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
