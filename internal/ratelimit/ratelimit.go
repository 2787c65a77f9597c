// Package ratelimit counts attempts in fixed windows kept in PostgreSQL, so
// every Engine replica shares one budget per key.
package ratelimit

import (
	"context"
	"math"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
)

// Rule is a budget: at most Limit hits per Window.
type Rule struct {
	Limit  int
	Window time.Duration
}

// Limiter records hits.
type Limiter struct{ q *db.Queries }

// New returns a limiter over q.
func New(q *db.Queries) *Limiter { return &Limiter{q: q} }

// Hit counts one attempt against key and returns rate_limited (with the
// seconds until the window ends) once the budget is spent.
func (l *Limiter) Hit(ctx context.Context, key string, r Rule) error {
	row, err := l.q.RateLimitHit(ctx, db.RateLimitHitParams{Key: key, WindowSeconds: r.Window.Seconds()})
	if err != nil {
		return err
	}
	if int(row.Hits) <= r.Limit {
		return nil
	}
	retry := int(math.Ceil(time.Until(row.WindowStart.Add(r.Window)).Seconds()))
	if retry < 1 {
		retry = 1
	}
	return &cairn.Error{Code: cairn.ECodeRateLimited, Message: "too many attempts; try again later", RetryAfterSeconds: retry}
}

// Reset forgets the hits of key (after a success).
func (l *Limiter) Reset(ctx context.Context, key string) error { return l.q.RateLimitReset(ctx, key) }
