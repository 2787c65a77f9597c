package events

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
)

// TypePresenceChanged is emitted when an operator stream opens or closes.
const TypePresenceChanged = "server_operator_presence_changed"

// Presence counts open operator streams across replicas: one row per
// stream, refreshed by its replica; rows of a dead replica expire.
type Presence struct {
	store     *db.Store
	bus       *Bus
	log       *slog.Logger
	ReplicaID string
}

// NewPresence returns a tracker for this replica.
func NewPresence(store *db.Store, bus *Bus, log *slog.Logger) *Presence {
	return &Presence{store: store, bus: bus, log: log, ReplicaID: uuid.NewString()}
}

// OperatorPresence is one operator's live streams.
type OperatorPresence struct {
	Username string    `json:"username"`
	Streams  int64     `json:"streams"`
	Since    time.Time `json:"since"`
}

// Snapshot is the presence event payload.
type Snapshot struct {
	Operators   []OperatorPresence `json:"operators"`
	StreamCount int64              `json:"stream_count"`
}

const (
	presenceTouch = 30 * time.Second
	presenceStale = 90 * time.Second
)

// MaxStreamsPerOperator bounds one operator's open streams across all
// replicas: a console tab holds one, and each costs a connection, a bus
// subscription and a session re-check per keep-alive, so a leaked token
// or a runaway script cannot pin the Engine's connections.
const MaxStreamsPerOperator = 10

// ECodeTooManyStreams refuses a stream beyond MaxStreamsPerOperator.
const ECodeTooManyStreams = "too_many_streams"

// Join records a new stream and announces the change. It refuses a stream
// beyond MaxStreamsPerOperator (streams of replicas that stopped
// refreshing them do not count).
func (p *Presence) Join(ctx context.Context, userID int64, username string) (string, error) {
	id := uuid.NewString()
	err := p.store.InTx(ctx, func(q *db.Queries) error {
		if err := q.OperatorStreamLockUser(ctx, userID); err != nil {
			return err
		}
		n, err := q.OperatorStreamCountByUser(ctx, db.OperatorStreamCountByUserParams{UserID: userID, LiveSince: time.Now().Add(-presenceStale)})
		if err != nil {
			return err
		}
		if n >= MaxStreamsPerOperator {
			return cairn.Errorf(ECodeTooManyStreams, "%d event streams are open for %s already; close a console tab and try again", n, username)
		}
		return q.OperatorStreamInsert(ctx, db.OperatorStreamInsertParams{ID: id, ReplicaID: p.ReplicaID, UserID: userID, Username: username})
	})
	if err != nil {
		return "", err
	}
	p.announce(ctx)
	return id, nil
}

// Leave removes a stream and announces the change.
func (p *Presence) Leave(ctx context.Context, streamID string) {
	if err := p.store.OperatorStreamDelete(ctx, streamID); err != nil {
		p.log.Warn("presence: remove stream", "err", err)
	}
	p.announce(ctx)
}

// Snapshot lists live operators.
func (p *Presence) Snapshot(ctx context.Context) (Snapshot, error) {
	rows, err := p.store.OperatorPresenceList(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	s := Snapshot{Operators: make([]OperatorPresence, len(rows))}
	for i, r := range rows {
		s.Operators[i] = OperatorPresence{Username: r.Username, Streams: r.Streams, Since: r.Since}
		s.StreamCount += r.Streams
	}
	return s, nil
}

// Run refreshes this replica's streams; those of dead replicas are swept
// by DeleteStale (the maintenance schedule).
func (p *Presence) Run(ctx context.Context) {
	tick := time.NewTicker(presenceTouch)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if err := p.store.OperatorStreamTouchReplica(ctx, p.ReplicaID); err != nil && ctx.Err() == nil {
				p.log.Warn("presence: refresh", "err", err)
			}
		}
	}
}

func (p *Presence) announce(ctx context.Context) {
	snap, err := p.Snapshot(ctx)
	if err != nil {
		p.log.Warn("presence: snapshot", "err", err)
		return
	}
	data, _ := json.Marshal(snap)
	if err := p.bus.Publish(ctx, Event{ID: uuid.NewString(), Type: TypePresenceChanged, Data: data}); err != nil {
		p.log.Warn("presence: publish", "err", err)
	}
}
