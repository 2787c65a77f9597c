package agentupdates

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/transport"
)

// maxQueued bounds the events waiting for the Engine; the Engine keeps at
// most 100 per operation anyway.
const maxQueued = 200

// pending is one event waiting to be posted.
type pending struct {
	OperationID string            `json:"operation_id"`
	ToBuildID   string            `json:"to_build_id,omitempty"`
	ArtifactID  string            `json:"artifact_id,omitempty"`
	Event       proto.UpdateEvent `json:"event"`
}

// poster posts progress events in order, retrying while the Engine is
// unreachable (it may be restarting in the middle of an update).
type poster struct {
	u     *Updater
	mu    sync.Mutex
	queue []pending
	wake  chan struct{}
	idle  *sync.Cond
}

func newPoster(u *Updater) *poster {
	p := &poster{u: u, wake: make(chan struct{}, 1)}
	p.idle = sync.NewCond(&p.mu)
	return p
}

func (p *poster) add(e pending) {
	p.mu.Lock()
	p.queue = append(p.queue, e)
	if len(p.queue) > maxQueued {
		p.queue = p.queue[len(p.queue)-maxQueued:]
	}
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// run posts until ctx ends.
func (p *poster) run(ctx context.Context) {
	wait := time.Second
	for {
		p.mu.Lock()
		batch := p.next()
		p.mu.Unlock()
		if len(batch) == 0 {
			select {
			case <-ctx.Done():
				return
			case <-p.wake:
				continue
			}
		}
		err := p.send(ctx, batch)
		if err != nil && ctx.Err() != nil {
			return
		}
		var refused *transport.Error
		if err != nil && !(errors.As(err, &refused) && refused.Status >= 400 && refused.Status < 500 && refused.Status != 408 && refused.Status != 429) {
			p.u.log.Warn("could not post update progress; retrying", "err", err, "in", wait)
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			wait = min(wait*2, 15*time.Second)
			continue
		}
		if err != nil {
			p.u.log.Warn("the Engine refused update progress; dropping it", "operation", batch[0].OperationID, "err", err)
		}
		wait = time.Second
		p.mu.Lock()
		if len(p.queue) >= len(batch) {
			p.queue = p.queue[len(batch):]
		}
		if len(p.queue) == 0 {
			p.idle.Broadcast()
		}
		p.mu.Unlock()
	}
}

// next is the head of the queue: consecutive events of one operation.
// Caller holds mu.
func (p *poster) next() []pending {
	if len(p.queue) == 0 {
		return nil
	}
	n := 1
	for n < len(p.queue) && p.queue[n].OperationID == p.queue[0].OperationID {
		n++
	}
	return append([]pending(nil), p.queue[:n]...)
}

func (p *poster) send(ctx context.Context, batch []pending) error {
	c, err := p.u.caller(ctx)
	if err != nil {
		return err
	}
	body := proto.UpdateProgress{OperationID: batch[0].OperationID, BuildID: p.u.opts.BuildID}
	for _, e := range batch {
		body.Events = append(body.Events, e.Event)
		if e.ToBuildID != "" {
			body.ToBuildID, body.ArtifactID = e.ToBuildID, e.ArtifactID
		}
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return c.Call(rctx, http.MethodPost, proto.PathUpdateProgress, body, &proto.UpdateProgressResponse{})
}

// flush waits until every queued event is posted or ctx ends, and returns
// what is left.
func (p *poster) flush(ctx context.Context) []pending {
	done := make(chan struct{})
	go func() {
		p.mu.Lock()
		for len(p.queue) > 0 && ctx.Err() == nil {
			p.idle.Wait()
		}
		p.mu.Unlock()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		p.mu.Lock()
		p.idle.Broadcast()
		p.mu.Unlock()
		<-done
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	left := append([]pending(nil), p.queue...)
	p.queue = nil
	return left
}
