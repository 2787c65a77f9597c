package workflowclient

import (
	"context"
	"encoding/json"
	"github.com/cairn-rmm/cairn"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/grants"
	"github.com/cairn-rmm/cairn/internal/patches"
	"github.com/cairn-rmm/cairn/workflows"
)

// PatchGrantLifetime is how long an install's grants stay valid: long
// enough for the installs queued ahead of it in its device's lane.
const PatchGrantLifetime = 24 * time.Hour

// PatchLaneStarter hands installs to their device's patch lane
// (signal-with-start of patch-lane:<guid>). It runs where the install was
// authorised, so it grants the install's request and its re-scan.
type PatchLaneStarter struct {
	Client client.Client
	Grants Granter
}

// Enqueue sends the install to its device's lane, starting the lane on
// the device's site queue if none runs.
func (s PatchLaneStarter) Enqueue(ctx context.Context, inst patches.Install, target patches.Target, actor string) error {
	req, err := json.Marshal(inst.AgentRequest())
	if err != nil {
		return err
	}
	installGrant, err := s.Grants.Sign(ctx, grants.Operation{GUID: cairn.DeviceGUID(target.GUID), OperationID: cairn.OperationID(workflows.PatchInstallOperationID(inst.ID)),
		Type: proto.EventPatchInstall, Payload: req, Actor: actor}, PatchGrantLifetime)
	if err != nil {
		return err
	}
	refresh := json.RawMessage(`{}`)
	refreshGrant, err := s.Grants.Sign(ctx, grants.Operation{GUID: cairn.DeviceGUID(target.GUID), OperationID: cairn.OperationID(workflows.PatchRescanOperationID(inst.ID)),
		Type: proto.EventPatchRefresh, Payload: refresh, Actor: actor}, PatchGrantLifetime)
	if err != nil {
		return err
	}
	order := workflows.PatchInstallOrder{InstallID: inst.ID, Request: req, InstallGrant: installGrant, RefreshGrant: refreshGrant}
	return s.signal(ctx, target, order)
}

// EnqueueReboot sends a reboot to its device's lane, after the installs
// already in it.
func (s PatchLaneStarter) EnqueueReboot(ctx context.Context, rb patches.Reboot, target patches.Target, actor string) error {
	req, err := json.Marshal(rb.AgentRequest())
	if err != nil {
		return err
	}
	grant, err := s.Grants.Sign(ctx, grants.Operation{GUID: cairn.DeviceGUID(target.GUID), OperationID: cairn.OperationID(workflows.PatchRebootOperationID(rb.ID)),
		Type: proto.EventPatchReboot, Payload: req, Actor: actor}, PatchGrantLifetime)
	if err != nil {
		return err
	}
	return s.signal(ctx, target, workflows.PatchInstallOrder{Reboot: &workflows.PatchRebootOrder{RebootID: rb.ID, Request: req, Grant: grant}})
}

// EnqueueEnforcement sends a patch_policy_enforcement_request to its
// device's lane, after the orders already in it.
func (s PatchLaneStarter) EnqueueEnforcement(ctx context.Context, e patches.Enforcement, target patches.Target, actor string) error {
	req, err := json.Marshal(e.AgentRequest())
	if err != nil {
		return err
	}
	grant, err := s.Grants.Sign(ctx, grants.Operation{GUID: target.GUID, OperationID: cairn.OperationID(workflows.PatchEnforcementOperationID(e.ID)),
		Type: proto.EventPatchPolicyEnforcement, Payload: req, Actor: actor}, PatchGrantLifetime)
	if err != nil {
		return err
	}
	return s.signal(ctx, target, workflows.PatchInstallOrder{Enforcement: &workflows.PatchEnforcementOrder{EnforcementID: e.ID, Request: req, Grant: grant}})
}

// signal hands an order to the device's lane (signal-with-start).
func (s PatchLaneStarter) signal(ctx context.Context, target patches.Target, order workflows.PatchInstallOrder) error {
	_, err := SignalWithStart(ctx, s.Client, client.StartWorkflowOptions{
		ID:                    workflows.PatchLaneWorkflowID(string(target.GUID)),
		TaskQueue:             workflows.SiteTaskQueue(target.SiteSlug),
		WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		TypedSearchAttributes: deviceAttrs(string(target.GUID), target.SiteSlug, workflows.JobKindPatchInstall),
	}, workflows.SignalPatchInstall, order, workflows.PatchLane, workflows.PatchLaneInput{GUID: string(target.GUID)})
	return err
}
