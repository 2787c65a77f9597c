package ratelimit

import (
	"context"
	"math"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
)

// Backoff is a failure budget with increasing delays instead of a hard
// lock: the first Free-1 failures cost nothing, the Free-th makes the next
// attempt wait Base, and each further failure doubles the wait up to Max.
// Failures are forgotten after Decay without one, and at once on success.
// Someone who knows only a username can therefore slow its owner down by
// at most Max per attempt, never lock the account.
type Backoff struct {
	Free  int
	Base  time.Duration
	Max   time.Duration
	Decay time.Duration
}

// Delay is how long the next attempt waits after the n-th failure.
func (b Backoff) Delay(n int) time.Duration {
	if n < b.Free {
		return 0
	}
	d := b.Base
	for i := b.Free; i < n && d < b.Max; i++ {
		d *= 2
	}
	return min(d, b.Max)
}

// Throttle keeps failure counts in PostgreSQL so every Engine replica
// shares them and a replica that goes away forgets nothing.
type Throttle struct {
	store *db.Store
	now   func() time.Time
}

// NewThrottle returns a throttle over store with the given clock.
func NewThrottle(store *db.Store, now func() time.Time) *Throttle {
	return &Throttle{store: store, now: now}
}

// Attempt admits one attempt under key, or answers rate_limited (with the
// seconds to wait) while an earlier failure's delay runs. An admitted
// attempt counts as a failure straight away, under a row lock, so a burst
// of concurrent guesses cannot all slip through before the first is
// counted; Succeeded takes it back. It returns the failure count
// including this attempt.
func (t *Throttle) Attempt(ctx context.Context, key string, b Backoff) (int, error) {
	now := t.now()
	var n int
	var blocked time.Time
	err := t.store.InTx(ctx, func(q *db.Queries) error {
		row, err := q.AuthThrottleLock(ctx, db.AuthThrottleLockParams{Key: key, Now: now})
		if err != nil {
			return err
		}
		if now.Before(row.BlockedUntil) {
			blocked = row.BlockedUntil
			return nil
		}
		n = int(row.Failures) + 1
		if now.Sub(row.LastFailureAt) > b.Decay {
			n = 1
		}
		return q.AuthThrottleSet(ctx, db.AuthThrottleSetParams{Key: key, Failures: int32(n), Now: now,
			BlockedUntil: now.Add(b.Delay(n))})
	})
	if err != nil {
		return 0, err
	}
	if !blocked.IsZero() {
		return 0, waitUntil(blocked, now)
	}
	return n, nil
}

// Blocked answers rate_limited like Attempt while key waits out a delay,
// without counting anything: for checking every key of a request before
// any of them is charged.
func (t *Throttle) Blocked(ctx context.Context, key string) error {
	row, err := t.store.AuthThrottleGet(ctx, key)
	if db.IsNoRows(err) {
		return nil
	} else if err != nil {
		return err
	}
	if now := t.now(); now.Before(row.BlockedUntil) {
		return waitUntil(row.BlockedUntil, now)
	}
	return nil
}

func waitUntil(until, now time.Time) error {
	retry := max(int(math.Ceil(until.Sub(now).Seconds())), 1)
	return &cairn.Error{Code: cairn.ECodeRateLimited, Message: "too many failed attempts; try again later", RetryAfterSeconds: retry}
}

// Succeeded forgets the failures of keys.
func (t *Throttle) Succeeded(ctx context.Context, keys ...string) error {
	return t.store.AuthThrottleDelete(ctx, keys)
}
