package runtime

import (
	"encoding/json"
	"sync"
	"time"
)

// The Engine delivers an operation again, with the same OperationID, when
// it lost track of the first delivery (the socket moved to another worker,
// the reply was lost). Acting twice would be wrong for most operations (a
// second restart of a service, a second kill of a reused PID), so the
// agent remembers each operation's reply for a while and answers a repeat
// with it.
const (
	// opCacheSize bounds the finished operations remembered. Operations
	// come one by one from operators and workflows: 512 covers far more
	// than the Engine's redelivery window holds at once.
	opCacheSize = 512
	// opCacheTTL is how long a finished operation's reply is kept; the
	// Engine gives up on an operation well before that.
	opCacheTTL = 15 * time.Minute
)

// opCache maps operation keys to their flight: running, or finished with
// a reply. Running flights are never evicted (their number is bounded by
// what the Engine has in flight for this device); finished ones expire
// after ttl and the oldest go first when more than size are kept.
type opCache struct {
	mu   sync.Mutex
	now  func() time.Time
	size int
	ttl  time.Duration
	m    map[string]*opFlight
}

// opFlight is one operation. reply and ended are written once, under
// opCache.mu, before done is closed; readers wait on done first.
type opFlight struct {
	done  chan struct{}
	reply json.RawMessage
	ended time.Time
}

func newOpCache(now func() time.Time) *opCache {
	return &opCache{now: now, size: opCacheSize, ttl: opCacheTTL, m: map[string]*opFlight{}}
}

// join returns the flight of key and whether the caller is the first and
// must run the operation (then it calls finish exactly once).
func (c *opCache) join(key string) (f *opFlight, run bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if f, ok := c.m[key]; ok && !c.expired(f, now) {
		return f, false
	}
	delete(c.m, key)
	c.evict(now)
	f = &opFlight{done: make(chan struct{})}
	c.m[key] = f
	return f, true
}

// finish records the reply and wakes everyone waiting on the flight.
func (c *opCache) finish(f *opFlight, reply json.RawMessage) {
	c.mu.Lock()
	f.reply, f.ended = reply, c.now()
	c.mu.Unlock()
	close(f.done)
}

func (c *opCache) expired(f *opFlight, now time.Time) bool {
	return !f.ended.IsZero() && now.Sub(f.ended) >= c.ttl
}

// evict makes room for one more entry: expired entries go, then the
// finished entries that ended first. Callers hold c.mu. The scan is
// linear, which at a few hundred entries and operator-paced arrivals costs
// nothing worth a second index.
func (c *opCache) evict(now time.Time) {
	if len(c.m) < c.size {
		return
	}
	for k, f := range c.m {
		if c.expired(f, now) {
			delete(c.m, k)
		}
	}
	for len(c.m) >= c.size {
		oldest := ""
		for k, f := range c.m {
			if !f.ended.IsZero() && (oldest == "" || f.ended.Before(c.m[oldest].ended)) {
				oldest = k
			}
		}
		if oldest == "" {
			return // all running: they leave when they finish and expire
		}
		delete(c.m, oldest)
	}
}

// len is the number of entries (tests).
func (c *opCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
