package events

import (
	"context"
	"time"
)

// DeleteStale removes the streams of replicas that stopped refreshing
// them (a replica that died without closing its streams) and announces
// the change. Each replica refreshes its own rows in Run; this sweep runs
// once per deployment from the maintenance schedule, on any replica.
func (p *Presence) DeleteStale(ctx context.Context) (int64, error) {
	n, err := p.store.OperatorStreamDeleteStale(ctx, time.Now().Add(-presenceStale))
	if err == nil && n > 0 {
		p.announce(ctx)
	}
	return n, err
}
