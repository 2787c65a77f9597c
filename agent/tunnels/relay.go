package tunnels

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net"
	"sync"
	"time"
)

// A forward relays TCP connections the Engine opens to the in-process
// tunnel's address on a port to a local target (the Windows RDP role:
// the tunnel's :3389 to TermService on 127.0.0.1:3389). With the
// in-process tunnel nothing on the host listens on the tunnel address,
// so this relay is the only way in; it exists only while its owner (the
// role) keeps it. wg-quick tunnels need none: the host's own listener is
// reachable on the interface.

// Forward relays the tunnel address's port to target while the tunnel
// runs in process (now and after any restart of it), until Unforward.
// With a wg-quick tunnel it is recorded and does nothing.
func (t *Tunnel) Forward(port int, target string) error {
	t.mu.Lock()
	if t.forwards == nil {
		t.forwards = map[int]string{}
	}
	t.forwards[port] = target
	fw := maps.Clone(t.forwards)
	b, _ := t.backend.(*netstackBackend)
	t.mu.Unlock()
	if b == nil {
		return nil
	}
	return b.setForwards(fw, t.log)
}

// Unforward stops relaying port: its open relayed connections are closed
// and new ones refused.
func (t *Tunnel) Unforward(port int) {
	t.mu.Lock()
	delete(t.forwards, port)
	fw := maps.Clone(t.forwards)
	b, _ := t.backend.(*netstackBackend)
	t.mu.Unlock()
	if b != nil {
		_ = b.setForwards(fw, t.log)
	}
}

// relay is one forwarded port's listener and its open connections.
type relay struct {
	target string
	l      net.Listener
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

// setForwards makes the device's relays match want (port: target).
func (b *netstackBackend) setForwards(want map[int]string, log *slog.Logger) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.want = want
	if log != nil {
		b.log = log
	}
	return b.syncRelays()
}

// syncRelays (under b.mu) makes the relays on the current device match
// b.want. A port once listened on keeps its listener for the device's
// life (the netstack cannot bind a port again while closed connections
// of the old listener linger in TIME_WAIT): an unforwarded port's relay
// closes its connections and refuses new ones (accepted and closed at
// once, nothing is dialled) until it is forwarded again.
func (b *netstackBackend) syncRelays() error {
	if b.dev == nil {
		for port, r := range b.relays {
			r.close()
			delete(b.relays, port)
		}
		return nil
	}
	for port, r := range b.relays {
		if _, ok := b.want[port]; !ok {
			r.setTarget("")
		}
	}
	var errs []error
	for port, target := range b.want {
		if r, ok := b.relays[port]; ok {
			r.setTarget(target)
			continue
		}
		l, err := b.dev.ListenTCP(port)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		r := &relay{target: target, l: l, conns: map[net.Conn]struct{}{}}
		if b.relays == nil {
			b.relays = map[int]*relay{}
		}
		b.relays[port] = r
		go r.serve(b.logger())
	}
	return errors.Join(errs...)
}

func (b *netstackBackend) logger() *slog.Logger {
	if b.log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return b.log
}

func (r *relay) serve(log *slog.Logger) {
	for {
		c, err := r.l.Accept()
		if err != nil {
			return
		}
		target, ok := r.take(c)
		if !ok {
			_ = c.Close()
			continue
		}
		go r.pipe(c, target, log)
	}
}

// take tracks an accepted connection and returns where to relay it
// (false: the port is not forwarded now).
func (r *relay) take(c net.Conn) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.target == "" {
		return "", false
	}
	r.conns[c] = struct{}{}
	return r.target, true
}

// setTarget changes where new connections go; a changed or removed
// target ends the open ones.
func (r *relay) setTarget(target string) {
	r.mu.Lock()
	if r.target == target {
		r.mu.Unlock()
		return
	}
	r.target = target
	conns := r.conns
	r.conns = map[net.Conn]struct{}{}
	r.mu.Unlock()
	for c := range conns {
		_ = c.Close()
	}
}

// track adds the dialled half of a relayed connection (false: the relay
// was closed or retargeted meanwhile, its inbound half already closed).
func (r *relay) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.target == "" {
		return false
	}
	r.conns[c] = struct{}{}
	return true
}

func (r *relay) untrack(c net.Conn) {
	r.mu.Lock()
	delete(r.conns, c)
	r.mu.Unlock()
}

func (r *relay) pipe(in net.Conn, target string, log *slog.Logger) {
	defer r.untrack(in)
	defer in.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	out, err := (&net.Dialer{}).DialContext(ctx, "tcp", target)
	cancel()
	if err != nil {
		log.Warn("relay: the local service does not answer", "target", target, "err", err)
		return
	}
	if !r.track(out) {
		_ = out.Close()
		return
	}
	defer r.untrack(out)
	defer out.Close()
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		} else {
			_ = dst.Close()
		}
		done <- struct{}{}
	}
	go cp(out, in)
	go cp(in, out)
	<-done
	<-done
}

func (r *relay) close() {
	r.mu.Lock()
	r.closed = true
	conns := r.conns
	r.conns = map[net.Conn]struct{}{}
	r.mu.Unlock()
	_ = r.l.Close()
	for c := range conns {
		_ = c.Close()
	}
}
