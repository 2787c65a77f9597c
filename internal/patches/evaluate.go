package patches

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
)

// EvaluatedInstall is an install a policy evaluation asked for.
type EvaluatedInstall struct {
	Install
	Hostname string `json:"hostname"`
	// PolicyID is the policy whose rule approves the update.
	PolicyID int64 `json:"policy_id"`
}

// EvaluateResult is what one evaluation did.
type EvaluateResult struct {
	EvaluatedPolicyIDs []int64 `json:"evaluated_policy_ids"`
	// DeviceCount counts the devices judged.
	DeviceCount int `json:"device_count"`
	// OutsideWindowDeviceCount counts devices with approved updates (or a
	// reboot due) whose maintenance window is closed now: a later
	// evaluation inside it installs them (an offline device catches up the
	// same way).
	OutsideWindowDeviceCount int `json:"outside_window_device_count"`
	DeferredCount            int `json:"deferred_count"`
	// Installs are the installs created; an update with an open install
	// already is not asked for again.
	Installs []EvaluatedInstall `json:"installs"`
	// Reboots are the reboots requested after those installs, per the
	// devices' effective reboot_policy (when_required: the agent reboots
	// only if the device says it needs one; never: none), and those of
	// devices with nothing to install that say they need one
	// (when_required or always), at most once per RebootRetryInterval.
	Reboots []EvaluatedReboot `json:"reboots"`
	// Enforcements are the patch_policy_enforcement_requests asked of
	// Windows devices: on a device's first evaluation and when its
	// effective enforcement_mode changed (EnforcementDue).
	Enforcements []EvaluatedEnforcement `json:"enforcements"`
	// FrozenDeviceCount counts devices whose effective enforcement_mode is
	// frozen: evaluation installs nothing on them.
	FrozenDeviceCount int `json:"frozen_device_count"`
	// Jobs are the immediate patch_install jobs the installs belong to
	// (devices with the same approved updates share one): each fires now
	// and hands its installs to the devices' lanes while it holds a slot
	// of each target site's scheduled lane.
	Jobs []JobStart `json:"jobs"`
}

// EvaluatedEnforcement is an enforcement a policy evaluation asked for.
type EvaluatedEnforcement struct {
	Enforcement
	Hostname string `json:"hostname"`
}

// RebootRetryInterval is how long an evaluation waits after asking a
// device for a reboot before asking again on its own account (nothing to
// install, the device still saying it needs one): a user signed in, who
// made the agent skip it, may have signed out by then. The agent checks
// the need itself when the request runs, so a repeat after a reboot the
// inventory has not yet reported answers not_required.
const RebootRetryInterval = time.Hour

// EvaluatedReboot is a reboot a policy evaluation asked for.
type EvaluatedReboot struct {
	Reboot
	Hostname string `json:"hostname"`
}

// Queued is an install, or a reboot (Reboot set), to hand to its
// device's patch lane; a device's reboot follows its installs.
type Queued struct {
	Install     Install
	Reboot      *Reboot
	Enforcement *Enforcement
	Target      Target
}

// Evaluate judges the visible devices (policyID 0) or one policy's
// eligible devices through their effective hierarchies and records an
// install of every approved pending update on a device whose maintenance
// window is open now, in immediate patch_install jobs (res.Jobs) the
// caller fires (StartJobs): a job's fire hands its installs, and the
// reboots after them, to the devices' lanes while it holds its sites'
// lane slots. The returned Queued are reboots of devices with nothing
// to install, which the caller hands to their lanes itself.
func (s *Service) Evaluate(ctx context.Context, scope cairn.SiteScope, actor string, policyID int64) (EvaluateResult, []Queued, error) {
	res := EvaluateResult{EvaluatedPolicyIDs: []int64{}, Installs: []EvaluatedInstall{}, Reboots: []EvaluatedReboot{},
		Enforcements: []EvaluatedEnforcement{}, Jobs: []JobStart{}}
	var only *Policy
	if policyID != 0 {
		p, err := s.policy(ctx, scope, policyID)
		if err != nil {
			return res, nil, err
		}
		only = &p
	}
	f, err := s.loadFleet(ctx, scope, nil, nil)
	if err != nil {
		return res, nil, err
	}
	devices := f.devices
	if only != nil {
		devices = f.eligible(*only)
		res.EvaluatedPolicyIDs = append(res.EvaluatedPolicyIDs, only.ID)
	} else {
		for _, p := range f.policies {
			if p.Enabled && visible(scope, p) {
				res.EvaluatedPolicyIDs = append(res.EvaluatedPolicyIDs, p.ID)
			}
		}
	}
	var windows []cairn.DeviceGUID
	for _, d := range devices {
		if f.windows[d.GUID] {
			windows = append(windows, d.GUID)
		}
	}
	lastEnforcement, err := s.latestEnforcements(ctx, windows)
	if err != nil {
		return res, nil, err
	}
	var queued []Queued
	// Devices with the same approved updates share one immediate
	// patch_install job; its run records their installs now and its fire
	// hands them to the lanes once it holds the sites' lane slots.
	groups := map[string]*evaluationGroup{}
	var groupOrder []string
	type rebootOnly struct {
		target Target
		req    RebootRequest
	}
	var alone []rebootOnly
	policyOf := map[cairn.DeviceGUID]map[string]int64{}
	// What already has an open install is not asked for again: left out
	// here, so a steady-state evaluation makes no job at all.
	openRows, err := s.store.PatchInstallOpenKeys(ctx)
	if err != nil {
		return res, nil, err
	}
	open := make(map[cairn.DeviceGUID]map[string]bool, len(openRows))
	for _, r := range openRows {
		if open[r.DeviceGuid] == nil {
			open[r.DeviceGuid] = map[string]bool{}
		}
		open[r.DeviceGuid][r.PatchKey] = true
	}
	for _, d := range devices {
		res.DeviceCount++
		eff := f.effective(d)
		// Enforcement is configuration, not an install: no window holds
		// it back, and it goes ahead of the device's installs.
		if f.windows[d.GUID] && EnforcementDue(eff.EnforcementMode, lastEnforcement[d.GUID], f.now) {
			var source *int64
			if eff.EnforcementSource != 0 {
				source = &eff.EnforcementSource
			}
			enf, err := s.RequestEnforcement(ctx, d.GUID, eff.EnforcementMode, source, actor)
			if err != nil {
				return res, queued, err
			}
			res.Enforcements = append(res.Enforcements, EvaluatedEnforcement{Enforcement: enf, Hostname: d.Hostname})
			queued = append(queued, Queued{Enforcement: &enf, Target: Target{GUID: d.GUID, Hostname: d.Hostname, SiteSlug: f.slugs[d.GUID]}})
		}
		if eff.EnforcementMode == proto.PatchModeFrozen {
			res.FrozenDeviceCount++
			continue
		}
		var approved []string
		for _, dec := range eff.Decisions {
			switch dec.Status {
			case DecisionApproved:
				if open[d.GUID][dec.PatchKey] {
					continue
				}
				approved = append(approved, dec.PatchKey)
				if policyOf[d.GUID] == nil {
					policyOf[d.GUID] = map[string]int64{}
				}
				policyOf[d.GUID][dec.PatchKey] = dec.SourcePolicyID
			case DecisionDeferred:
				res.DeferredCount++
			}
		}
		rebootDue := f.rebootDue[d.GUID] && (eff.RebootPolicy == RebootWhenRequired || eff.RebootPolicy == RebootAlways)
		if len(approved) == 0 && !rebootDue {
			continue
		}
		if !eff.Window.Open(f.now) {
			res.OutsideWindowDeviceCount++
			continue
		}
		source := eff.RebootSource
		target := Target{GUID: d.GUID, Hostname: d.Hostname, SiteSlug: f.slugs[d.GUID]}
		// A device that says it needs a reboot gets one on its own when
		// nothing is installed before it (the agent checks the need
		// again, whatever the policy's when_required or always).
		if rebootDue {
			alone = append(alone, rebootOnly{target: target, req: RebootRequest{DeviceGUID: d.GUID, WhenRequired: true,
				Forced: eff.RebootForced, PolicyID: &source, Actor: actor}})
		}
		if len(approved) == 0 {
			continue
		}
		slices.Sort(approved)
		key := strings.Join(approved, "\n")
		g := groups[key]
		if g == nil {
			g = &evaluationGroup{keys: approved, reboots: map[cairn.DeviceGUID]RebootRequest{}}
			groups[key] = g
			groupOrder = append(groupOrder, key)
		}
		g.targets = append(g.targets, RunTarget{GUID: d.GUID, Hostname: d.Hostname, SiteID: d.SiteID, SiteSlug: f.slugs[d.GUID]})
		// The reboot goes after the installs, in the same lane: never
		// during one.
		if eff.RebootPolicy != RebootNever && eff.RebootPolicy != "" {
			g.reboots[d.GUID] = RebootRequest{DeviceGUID: d.GUID, WhenRequired: eff.RebootPolicy == RebootWhenRequired,
				Forced: eff.RebootForced, PolicyID: &source, Actor: actor}
		}
	}
	installed := map[cairn.DeviceGUID]bool{}
	hostnames := map[cairn.DeviceGUID]string{}
	for _, d := range devices {
		hostnames[d.GUID] = d.Hostname
	}
	for _, key := range groupOrder {
		g := groups[key]
		start, made, reboots, err := s.createEvaluationJob(ctx, *g, actor, cairn.RunID(newInstallID()))
		if err != nil {
			return res, queued, err
		}
		if len(made) == 0 {
			continue
		}
		res.Jobs = append(res.Jobs, start)
		for _, inst := range made {
			installed[inst.DeviceGUID] = true
			res.Installs = append(res.Installs, EvaluatedInstall{Install: inst, Hostname: hostnames[inst.DeviceGUID],
				PolicyID: policyOf[inst.DeviceGUID][inst.PatchKey]})
		}
		for _, rb := range reboots {
			res.Reboots = append(res.Reboots, EvaluatedReboot{Reboot: rb, Hostname: hostnames[rb.DeviceGUID]})
		}
	}
	for _, a := range alone {
		if installed[a.target.GUID] {
			continue // its run's reboot follows its installs
		}
		rb, err := s.RequestReboot(ctx, a.req)
		if err != nil {
			return res, queued, err
		}
		res.Reboots = append(res.Reboots, EvaluatedReboot{Reboot: rb, Hostname: a.target.Hostname})
		queued = append(queued, Queued{Reboot: &rb, Target: a.target})
	}
	if err := s.store.PatchPolicyEvaluated(ctx, res.EvaluatedPolicyIDs); err != nil {
		return res, queued, err
	}
	return res, queued, nil
}

// newInstallID is the ID of an install about to be recorded.
func newInstallID() string { return uuid.NewString() }

// Abandon finishes installs that could not be handed to their lanes
// (Temporal did not take the order) as failed, so the next evaluation
// asks for them afresh instead of finding them open forever. A lane that
// got an order after all skips it: the install is no longer open.
func (s *Service) Abandon(ctx context.Context, queued []Queued, cause error) error {
	for _, q := range queued {
		var err error
		switch {
		case q.Enforcement != nil:
			_, err = s.store.PatchEnforcementFinish(ctx, db.PatchEnforcementFinishParams{ID: q.Enforcement.ID, State: EnforcementFailed,
				Message: "not handed to the device's patch lane: " + cause.Error(), Values: []byte("[]")})
		case q.Reboot != nil:
			_, err = s.store.PatchRebootFinish(ctx, db.PatchRebootFinishParams{ID: q.Reboot.ID, State: RebootFailed,
				Message: "not handed to the device's patch lane: " + cause.Error(), SignedIn: []string{}})
		default:
			_, err = s.store.PatchInstallFinish(ctx, db.PatchInstallFinishParams{ID: q.Install.ID, State: StateFailed,
				Message: "not handed to the device's patch lane: " + cause.Error()})
		}
		if err != nil && !db.IsNoRows(err) {
			return err
		}
	}
	return nil
}

// EnqueueAll hands queued installs to their lanes with enqueue; when one
// fails, it and the ones after it are abandoned and the error returned.
func (s *Service) EnqueueAll(ctx context.Context, queued []Queued, enqueue func(context.Context, Queued) error) error {
	for i, q := range queued {
		if err := enqueue(ctx, q); err != nil {
			if aerr := s.Abandon(context.WithoutCancel(ctx), queued[i:], err); aerr != nil {
				return errors.Join(err, aerr)
			}
			return err
		}
	}
	return nil
}

// StartJobs fires the jobs an evaluation created with start; when one
// cannot be started, its run and those after it are abandoned (their
// installs finished as failed, so the next evaluation asks again) and the
// error returned.
func (s *Service) StartJobs(ctx context.Context, jobs []JobStart, start func(context.Context, JobStart) error) error {
	for i, j := range jobs {
		if err := start(ctx, j); err != nil {
			var errs []error
			for _, rest := range jobs[i:] {
				if aerr := s.AbandonRun(context.WithoutCancel(ctx), rest.RunID, err); aerr != nil {
					errs = append(errs, aerr)
				}
			}
			return errors.Join(append([]error{err}, errs...)...)
		}
	}
	return nil
}
