package shells

import (
	"context"
	"time"
)

// Liveness. A session's bytes flow through the one process holding both
// its sockets, so a process that dies takes its sessions with it but
// cannot close their records. The process confirms its live sessions
// every TouchInterval; the shell-sessions maintenance job closes those
// unconfirmed for LostAfter, with their activity rows.
const (
	TouchInterval = 30 * time.Second
	LostAfter     = 2 * time.Minute
)

// ReasonLost is the close reason of a session whose process stopped.
const ReasonLost = "the Engine process bridging the session stopped"

// IDs lists the sessions this process holds.
func (r *Registry) IDs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := make([]string, 0, len(r.sessions))
	for id := range r.sessions {
		ids = append(ids, id)
	}
	return ids
}

// KeepAlive confirms the registry's sessions every TouchInterval, in one
// statement, until ctx ends.
func (r *Registry) KeepAlive(ctx context.Context, svc *Service, every time.Duration) {
	if every <= 0 {
		every = TouchInterval
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if ids := r.IDs(); len(ids) > 0 {
			if _, err := svc.store.ShellSessionTouchMany(ctx, ids); err != nil && ctx.Err() == nil {
				svc.log.Warn("confirm live shell sessions", "err", err)
			}
		}
	}
}

// CloseLost closes the sessions nobody confirmed for lostAfter (their
// process died), with their activity rows, and returns how many.
func (s *Service) CloseLost(ctx context.Context, lostAfter time.Duration) (int64, error) {
	if lostAfter <= 0 {
		lostAfter = LostAfter
	}
	ids, err := s.store.ShellSessionListLost(ctx, lostAfter.Seconds())
	if err != nil {
		return 0, err
	}
	var n int64
	for _, id := range ids {
		if _, err := s.Finish(ctx, id, Outcome{Reason: ReasonLost}); err != nil {
			return n, err
		}
		n++
	}
	if n > 0 {
		s.log.Info("closed shell sessions of a stopped process", "count", n)
	}
	return n, nil
}
