package metadata

import (
	"context"
	"fmt"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
)

// Stored is the part of a stored value the conflict rule reads.
type Stored struct {
	Value      string
	ModifiedAt time.Time
	Source     string
}

// Decide applies the conflict rule to one agent write against the stored
// value (nil: none): the agent's modified_at is first clamped to now (a
// clock ahead must not win forever), then the newest modified_at wins. A
// write equal in time, value and source to the stored one is the same
// write sent again (its ack was lost) and is accepted again. It returns
// whether the write is accepted and the time to store it with.
func Decide(stored *Stored, value string, modifiedAt, now time.Time) (accept bool, at time.Time) {
	at = modifiedAt.UTC().Truncate(time.Microsecond)
	if now = now.UTC().Truncate(time.Microsecond); at.After(now) {
		at = now
	}
	switch {
	case stored == nil, at.After(stored.ModifiedAt):
		return true, at
	case at.Equal(stored.ModifiedAt) && stored.Source == SourceAgent && stored.Value == value:
		return true, at
	}
	return false, at
}

// SyncResult is the metadata part of a heartbeat answer.
type SyncResult struct {
	Acks []proto.MetadataAck
	// Revision and Changed: operators changed Changed after the agent's
	// revision; the agent reads them and then holds Revision. Zero/nil
	// when the agent is current.
	Revision int64
	Changed  []int
}

// NeedsSync says whether a heartbeat has metadata work: writes to apply,
// or a device revision (from the heartbeat flush's cache) past the
// agent's. Everything else answers without touching the database.
func NeedsSync(hb proto.Heartbeat, cachedRevision int64) bool {
	return len(hb.MetadataFields) > 0 || cachedRevision > hb.MetadataRevision
}

// AgentSync applies a heartbeat's metadata writes in one transaction and
// acks each (accepted, superseded, or rejected as invalid: every write is
// acked, so a write the Engine will never take cannot wedge the agent's
// queue), then names the fields operators changed after the agent's
// revision. Acks echo the agent's modified_at.
func (s *Service) AgentSync(ctx context.Context, guid cairn.DeviceGUID, hb proto.Heartbeat, cachedRevision int64) (SyncResult, error) {
	res := SyncResult{Acks: []proto.MetadataAck{}}
	if len(hb.MetadataFields) > 0 {
		changed, err := s.applyAgentWrites(ctx, guid, hb.MetadataFields, &res)
		if err != nil {
			return SyncResult{}, err
		}
		if changed {
			if dev, err := s.deviceInScope(ctx, cairn.SiteScope{All: true}, guid); err == nil {
				s.publish(ctx, dev)
			}
		}
	}
	if cachedRevision > hb.MetadataRevision {
		rows, err := s.store.MetadataChangedSince(ctx, db.MetadataChangedSinceParams{DeviceGuid: guid, Revision: hb.MetadataRevision})
		if err != nil {
			return SyncResult{}, err
		}
		// Every change at or below the cached revision was committed before
		// the flush read it, so the query above saw it.
		res.Revision = cachedRevision
		res.Changed = make([]int, 0, len(rows))
		for _, r := range rows {
			res.Changed = append(res.Changed, int(r.FieldNumber))
			res.Revision = max(res.Revision, r.Revision)
		}
	}
	return res, nil
}

// maxWrites bounds one heartbeat's writes (one per field at most).
const maxWrites = FieldMax

func (s *Service) applyAgentWrites(ctx context.Context, guid cairn.DeviceGUID, writes []proto.MetadataWrite, res *SyncResult) (changed bool, err error) {
	if len(writes) > maxWrites {
		return false, cairn.Invalid("metadata_fields", fmt.Sprintf("must have at most %d entries", maxWrites))
	}
	now := s.clock()
	err = s.store.InTx(ctx, func(q *db.Queries) error {
		res.Acks, changed = res.Acks[:0], false
		if _, err := q.MetadataDeviceLock(ctx, guid); err != nil {
			return db.NotFound(err, "device not found")
		}
		for _, w := range writes {
			ack := proto.MetadataAck{FieldNumber: w.FieldNumber, ModifiedAt: w.ModifiedAt}
			value, problem := proto.NormalizeMetadataValue(w.Value)
			if w.FieldNumber < FieldMin || w.FieldNumber > FieldMax {
				problem = fmt.Sprintf("field number must be from %d to %d", FieldMin, FieldMax)
			}
			if problem != "" {
				ack.Superseded, ack.Rejected = true, "value "+problem
				res.Acks = append(res.Acks, ack)
				continue
			}
			var stored *Stored
			cur, err := q.MetadataValueGetForUpdate(ctx, db.MetadataValueGetForUpdateParams{DeviceGuid: guid, FieldNumber: int32(w.FieldNumber)})
			switch {
			case err == nil:
				stored = &Stored{Value: decode(cur.ValueB64), ModifiedAt: cur.ModifiedAt.UTC(), Source: cur.Source}
			case !db.IsNoRows(err):
				return err
			}
			accept, at := Decide(stored, value, w.ModifiedAt, now)
			if !accept {
				ack.Superseded = true
				res.Acks = append(res.Acks, ack)
				continue
			}
			if err := q.MetadataValuePut(ctx, db.MetadataValuePutParams{DeviceGuid: guid, FieldNumber: int32(w.FieldNumber),
				ValueB64: encode(value), ModifiedAt: at, Source: SourceAgent}); err != nil {
				return err
			}
			changed = changed || stored == nil || stored.Value != value
			res.Acks = append(res.Acks, ack)
		}
		return nil
	})
	return changed, err
}
