// Package events fans operator events, control messages and messages for
// agent sockets out across every Engine replica through PostgreSQL
// LISTEN/NOTIFY. A publisher NOTIFYs; each replica's one listening
// connection hands the message to its local subscribers (SSE streams, the
// site-worker manager, the cipher, the agent socket hub). Nothing is
// stored: these are live signals, and toasts are not persisted.
package events

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/cairn-rmm/cairn"

	"github.com/cairn-rmm/cairn/db"
)

// Channels.
const (
	channelEvents  = "cairn_events"
	channelControl = "cairn_control"
	// ChannelAgents carries messages for agent sockets, each addressed to
	// the replica that holds the socket (workers/agentsocket). It is a raw
	// channel: see Notify and Listen.
	ChannelAgents = "cairn_agents"
)

// rawChannels are the channels whose payloads go to Listen subscribers as
// they are. Each needs its LISTEN query in db/queries/listen.sql.
var rawChannels = map[string]bool{ChannelAgents: true}

// Control topics: a change other replicas must react to.
const (
	ControlSites = "sites" // sites created, renamed or deleted
	ControlAegis = "aegis" // master cipher reset or rotated
	ControlSetup = "setup" // first-run setup finished
)

// Device event types (SPEC "Operator event stream"). Publish them with the
// device's SiteID, so only operators who may see the device receive them.
const (
	// TypeAgentStatusChanged: a device's agent health, connection or trust
	// state changed.
	TypeAgentStatusChanged     = "agent_status_changed"
	TypeDeviceInventoryChanged = "device_inventory_changed"
	TypeDeviceServicesChanged  = "device_services_changed"
)

// MaxPayload is what one NOTIFY may carry (PostgreSQL's limit is 8000 bytes).
const MaxPayload = 7900

// ErrTooLarge is returned for an event whose encoding exceeds MaxPayload.
var ErrTooLarge = errors.New("events: event too large to publish")

// Event is an operator event as it travels between replicas.
type Event struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	// Username, when set, limits delivery to that operator's streams.
	Username string `json:"username,omitempty"`
	// SiteID, when set, limits delivery to operators whose site scope
	// includes that site: a device event must not reveal a device to an
	// operator who may not see it.
	SiteID cairn.SiteID    `json:"site_id,omitempty"`
	Data   json.RawMessage `json:"data"`
}

// Bus publishes and delivers events.
type Bus struct {
	store *db.Store
	log   *slog.Logger

	mu      sync.Mutex
	next    int
	subs    map[int]*subscriber
	control map[string][]chan struct{}
	raw     map[string]map[int]chan []byte
}

type subscriber struct {
	ch     chan Event
	filter func(Event) bool
}

// NewBus returns a bus; call Run to start listening.
func NewBus(store *db.Store, log *slog.Logger) *Bus {
	return &Bus{store: store, log: log, subs: map[int]*subscriber{}, control: map[string][]chan struct{}{},
		raw: map[string]map[int]chan []byte{}}
}

// Encode checks that e fits one notification.
func Encode(e Event) ([]byte, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	if len(b) > MaxPayload {
		return nil, ErrTooLarge
	}
	return b, nil
}

// Publish sends e to every replica's subscribers.
func (b *Bus) Publish(ctx context.Context, e Event) error {
	payload, err := Encode(e)
	if err != nil {
		return err
	}
	return b.store.EventNotify(ctx, db.EventNotifyParams{Channel: channelEvents, Payload: string(payload)})
}

// Signal tells every replica that topic changed.
func (b *Bus) Signal(ctx context.Context, topic string) error {
	return b.store.EventNotify(ctx, db.EventNotifyParams{Channel: channelControl, Payload: topic})
}

// Notify sends payload to the Listen subscribers of a raw channel on every
// replica, this one included. Payloads over MaxPayload are refused with
// ErrTooLarge.
func (b *Bus) Notify(ctx context.Context, channel string, payload []byte) error {
	mustBeRaw(channel)
	if len(payload) > MaxPayload {
		return ErrTooLarge
	}
	return b.store.EventNotify(ctx, db.EventNotifyParams{Channel: channel, Payload: string(payload)})
}

// Listen returns a channel of the payloads notified on a raw channel and a
// cancel function. Like Subscribe, a listener 1024 payloads behind loses
// payloads rather than stall the others; payloads sent while the
// connection is being re-established are lost too.
func (b *Bus) Listen(channel string) (<-chan []byte, func()) {
	mustBeRaw(channel)
	b.mu.Lock()
	defer b.mu.Unlock()
	id := b.next
	b.next++
	ch := make(chan []byte, 1024)
	if b.raw[channel] == nil {
		b.raw[channel] = map[int]chan []byte{}
	}
	b.raw[channel][id] = ch
	return ch, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if _, ok := b.raw[channel][id]; ok {
			delete(b.raw[channel], id)
			close(ch)
		}
	}
}

func mustBeRaw(channel string) {
	if !rawChannels[channel] {
		panic("events: " + channel + " is not a raw channel")
	}
}

// Subscribe returns a channel of events passing filter (nil: all) and a
// cancel function. A subscriber that falls 256 events behind loses events
// rather than stall the others.
func (b *Bus) Subscribe(filter func(Event) bool) (<-chan Event, func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	id := b.next
	b.next++
	s := &subscriber{ch: make(chan Event, 256), filter: filter}
	b.subs[id] = s
	return s.ch, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if _, ok := b.subs[id]; ok {
			delete(b.subs, id)
			close(s.ch)
		}
	}
}

// OnControl returns a channel that receives a value whenever topic is
// signalled, and after every listener (re)connect, when signals may have
// been missed. Signals coalesce.
func (b *Bus) OnControl(topic string) <-chan struct{} {
	ch := make(chan struct{}, 1)
	b.mu.Lock()
	b.control[topic] = append(b.control[topic], ch)
	b.mu.Unlock()
	return ch
}

// Run listens until ctx ends, reconnecting with backoff.
func (b *Bus) Run(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := b.listen(ctx)
		if ctx.Err() != nil {
			return
		}
		b.log.Warn("event listener lost its connection; reconnecting", "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

func (b *Bus) listen(ctx context.Context) error {
	conn, err := b.store.Pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// The listening connection must not return to the pool with LISTEN on it.
	pc := conn.Hijack()
	defer pc.Close(context.Background())
	q := db.New(pc)
	if err := q.ListenEvents(ctx); err != nil {
		return err
	}
	if err := q.ListenControl(ctx); err != nil {
		return err
	}
	if err := q.ListenAgents(ctx); err != nil {
		return err
	}
	b.fireAllControl()
	for {
		n, err := pc.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		switch n.Channel {
		case channelEvents:
			var e Event
			if err := json.Unmarshal([]byte(n.Payload), &e); err != nil {
				b.log.Error("undecodable event", "err", err)
				continue
			}
			b.deliver(e)
		case channelControl:
			b.fireControl(n.Payload)
		default:
			if rawChannels[n.Channel] {
				b.deliverRaw(n.Channel, []byte(n.Payload))
			}
		}
	}
}

func (b *Bus) deliver(e Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range b.subs {
		if s.filter != nil && !s.filter(e) {
			continue
		}
		select {
		case s.ch <- e:
		default:
			b.log.Warn("event subscriber is too slow; dropped an event", "type", e.Type)
		}
	}
}

func (b *Bus) deliverRaw(channel string, payload []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, ch := range b.raw[channel] {
		select {
		case ch <- payload:
		default:
			b.log.Warn("raw listener is too slow; dropped a payload", "channel", channel)
		}
	}
}

func (b *Bus) fireControl(topic string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, ch := range b.control[topic] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (b *Bus) fireAllControl() {
	b.mu.Lock()
	topics := make([]string, 0, len(b.control))
	for t := range b.control {
		topics = append(topics, t)
	}
	b.mu.Unlock()
	for _, t := range topics {
		b.fireControl(t)
	}
}
