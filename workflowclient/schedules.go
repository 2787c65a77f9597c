package workflowclient

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
)

// memoFingerprint is the action memo key holding the fingerprint of what
// Cairn controls of a schedule, so EnsureSchedule tells drift without
// parsing specs back (Temporal describes a cron spec as calendars).
const memoFingerprint = "cairn_fingerprint"

// Schedule is a Temporal Schedule as Cairn wants it.
type Schedule struct {
	ID     string
	Spec   client.ScheduleSpec
	Action *client.ScheduleWorkflowAction
	Policy client.SchedulePolicies
	// Paused nil leaves the paused state to whoever set it (an SRE's
	// pause of a maintenance schedule stays); otherwise Cairn keeps it so,
	// with Note.
	Paused *bool
	Note   string
	// Definition is what Cairn controls of the schedule besides its
	// paused state, hashed into the fingerprint: any JSON value that
	// changes whenever Spec, Action or Policy would (give it a version
	// field, bumped when its meaning changes).
	Definition any
}

// Fingerprint hashes a schedule's Definition.
func Fingerprint(definition any) string {
	raw, _ := json.Marshal(definition)
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:12])
}

// EnsureSchedule makes the schedule s.ID match s: created when missing,
// updated when the fingerprint its action's memo carries is not s's (a
// definition changed, or the schedule was not made by this code), and
// paused or unpaused as s says. Every replica may call it at once: a
// schedule another replica created a moment earlier is checked again
// rather than created twice.
func EnsureSchedule(ctx context.Context, c client.Client, dc converter.DataConverter, s Schedule) error {
	if dc == nil {
		dc = converter.GetDefaultDataConverter()
	}
	fp := Fingerprint(s.Definition)
	action := *s.Action
	action.Memo = maps.Clone(action.Memo)
	if action.Memo == nil {
		action.Memo = map[string]any{}
	}
	action.Memo[memoFingerprint] = fp
	paused := s.Paused != nil && *s.Paused
	note := ""
	if paused {
		note = s.Note
	}
	h := c.ScheduleClient().GetHandle(ctx, s.ID)
	var desc *client.ScheduleDescription
	for range 3 {
		var err error
		desc, err = h.Describe(ctx)
		var notFound *serviceerror.NotFound
		if !errors.As(err, &notFound) {
			if err != nil {
				return err
			}
			break
		}
		_, err = c.ScheduleClient().Create(ctx, client.ScheduleOptions{
			ID: s.ID, Spec: s.Spec, Action: &action, Overlap: s.Policy.Overlap,
			CatchupWindow: s.Policy.CatchupWindow, Paused: paused, Note: note,
		})
		var exists *serviceerror.AlreadyExists
		if err == nil || (!errors.Is(err, temporal.ErrScheduleAlreadyRunning) && !errors.As(err, &exists)) {
			return err
		}
		// Another replica created it a moment ago: check it again.
	}
	if desc == nil {
		return errors.New("the schedule kept being created and deleted")
	}
	if fingerprintOf(desc.Schedule, dc) != fp {
		return h.Update(ctx, client.ScheduleUpdateOptions{DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
			sch := in.Description.Schedule
			spec, policy := s.Spec, s.Policy
			sch.Spec, sch.Action, sch.Policy = &spec, &action, &policy
			if s.Paused != nil {
				sch.State = &client.ScheduleState{Paused: paused, Note: note}
			}
			return &client.ScheduleUpdate{Schedule: &sch}, nil
		}})
	}
	if s.Paused == nil {
		return nil
	}
	isPaused := desc.Schedule.State != nil && desc.Schedule.State.Paused
	switch {
	case isPaused && !paused:
		return h.Unpause(ctx, client.ScheduleUnpauseOptions{Note: "enabled in Cairn"})
	case !isPaused && paused:
		return h.Pause(ctx, client.SchedulePauseOptions{Note: note})
	}
	return nil
}

// fingerprintOf reads the fingerprint of a described schedule ("" when
// it has none: it was not made by this code).
func fingerprintOf(sch client.Schedule, dc converter.DataConverter) string {
	act, ok := sch.Action.(*client.ScheduleWorkflowAction)
	if !ok {
		return ""
	}
	p, ok := act.Memo[memoFingerprint].(*commonpb.Payload)
	var fp string
	if !ok || dc.FromPayload(p, &fp) != nil {
		return ""
	}
	return fp
}
