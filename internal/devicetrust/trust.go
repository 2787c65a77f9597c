package devicetrust

// Trust actions (SPEC "Device trust state"). Each one bumps the device's
// token version in the same statement that changes its state, so every
// access token minted before the action stops working at once; the caller
// then drops the device's socket and records the activity. Each write is
// conditional on the state and version the action read (no lock is held
// between the read and the write), so of two concurrent actions the second
// fails with a conflict instead of chaining from a state it never saw.

import (
	"context"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
)

// Trust actions.
const (
	ActionQuarantine   = "quarantine"
	ActionUnquarantine = "unquarantine"
	ActionRevoke       = "revoke"
	ActionPurge        = "purge"
)

// TrustResult is a device after an action.
type TrustResult struct {
	GUID         cairn.DeviceGUID
	Hostname     string
	SiteID       cairn.SiteID
	TrustState   string // "purged" after a purge
	TokenVersion int32
	// EndedTransfers are the device's live file transfers the action
	// ended (quarantine, revoke, purge): their workflows are to be told.
	EndedTransfers []cairn.TransferID
}

// endedBy is the message of a transfer a trust action ended, and of a
// shell it closed.
var endedBy = map[string]string{
	ActionQuarantine: "the device was quarantined",
	ActionRevoke:     "the device's trust was revoked",
	ActionPurge:      "the device was purged",
}

// EndedBy is what an action that shuts the device out tells the
// operations it ends ("" for one that does not).
func EndedBy(action string) string { return endedBy[action] }

// ApplyTrust performs action on the device with guid, inside scope. actor
// is the operator's name, kept on the purge barrier.
func ApplyTrust(ctx context.Context, store *db.Store, scope cairn.SiteScope, guid, action, actor string, now time.Time) (TrustResult, error) {
	var out TrustResult
	err := store.InTx(ctx, func(q *db.Queries) error {
		d, err := q.DeviceGetByGUID(ctx, cairn.DeviceGUID(guid))
		if err == nil && !scope.Allows(d.SiteID) {
			return cairn.Errorf(cairn.ECodeNotFound, "device %s not found", guid)
		}
		if err != nil {
			return db.NotFound(err, "device %s not found", guid)
		}
		out = TrustResult{GUID: d.Guid, Hostname: d.Hostname, SiteID: d.SiteID}
		// Live transfers end with the action, in its transaction (before a
		// purge deletes their rows): nothing more reaches or leaves the
		// device through them, whatever becomes of the follow-up.
		if msg := endedBy[action]; msg != "" {
			if out.EndedTransfers, err = q.FileTransferEndForDevices(ctx, db.FileTransferEndForDevicesParams{
				Guids: []string{string(d.Guid)}, ErrorMessage: msg}); err != nil {
				return err
			}
		}
		var next string
		switch action {
		case ActionQuarantine:
			if d.TrustState != TrustActive {
				return cairn.Errorf(cairn.ECodeConflict, "only an active device can be quarantined; %s is %s", d.Hostname, d.TrustState)
			}
			next = TrustQuarantined
		case ActionUnquarantine:
			if d.TrustState != TrustQuarantined {
				return cairn.Errorf(cairn.ECodeConflict, "%s is not quarantined", d.Hostname)
			}
			next = TrustActive
		case ActionRevoke:
			next = TrustRevoked
		case ActionPurge:
			// The barrier keeps the key and version so refresh answers
			// device_purged and a re-approval recreates the GUID above it.
			if err := q.DevicePurgeInsert(ctx, db.DevicePurgeInsertParams{
				Guid: d.Guid, Jkt: d.Jkt, Hostname: d.Hostname, TokenVersion: d.TokenVersion, PurgedBy: actor,
			}); err != nil {
				return err
			}
			n, err := q.DevicePurgeIfUnchanged(ctx, db.DevicePurgeIfUnchangedParams{
				Guid: d.Guid, FromState: d.TrustState, FromVersion: d.TokenVersion,
			})
			if err != nil {
				return err
			}
			if n == 0 {
				return changedMeanwhile(d.Hostname)
			}
			// SPEC trust table: scheduled-job targets that named the
			// device are rewritten without it.
			if _, err := q.ScheduledJobTargetsRemoveDevice(ctx, string(d.Guid)); err != nil {
				return err
			}
			out.TrustState, out.TokenVersion = "purged", d.TokenVersion
			return nil
		default:
			return cairn.Invalid("action", "must be quarantine, unquarantine, revoke or purge")
		}
		updated, err := q.DeviceTrustSet(ctx, db.DeviceTrustSetParams{
			Guid: d.Guid, TrustState: next, Now: now, FromState: d.TrustState, FromVersion: d.TokenVersion,
		})
		if db.IsNoRows(err) {
			return changedMeanwhile(d.Hostname)
		}
		if err != nil {
			return err
		}
		if next == TrustRevoked {
			if err := q.RefreshTokenRevokeDevice(ctx, db.RefreshTokenRevokeDeviceParams{DeviceGuid: d.Guid, Now: &now}); err != nil {
				return err
			}
		}
		out.TrustState, out.TokenVersion = updated.TrustState, updated.TokenVersion
		return nil
	})
	return out, err
}

// changedMeanwhile refuses an action whose device changed between its read
// and its conditional write.
func changedMeanwhile(hostname string) error {
	return cairn.Errorf(cairn.ECodeConflict, "%s changed while the action ran; reload it and try again", hostname)
}
