package events_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/events"
	"github.com/cairn-rmm/cairn/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// listening starts a bus on store and returns once its listener is up
// (OnControl fires after every LISTEN), so nothing sent later is lost.
func listening(t *testing.T, store *db.Store) *events.Bus {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	bus := events.NewBus(store, slog.New(slog.NewTextHandler(io.Discard, nil)))
	up := bus.OnControl("test-listening")
	go bus.Run(ctx)
	select {
	case <-up:
	case <-time.After(10 * time.Second):
		t.Fatal("bus did not start listening")
	}
	return bus
}

func TestNotifyReachesListenersOfEveryReplica(t *testing.T) {
	t.Parallel()
	store := pgtest.NewDB(t)
	a, b := listening(t, store), listening(t, store)
	onA, stopA := a.Listen(events.ChannelAgents)
	defer stopA()
	onB, stopB := b.Listen(events.ChannelAgents)
	defer stopB()

	require.NoError(t, a.Notify(context.Background(), events.ChannelAgents, []byte(`{"to":"b"}`)))
	for _, ch := range []<-chan []byte{onA, onB} {
		select {
		case got := <-ch:
			require.JSONEq(t, `{"to":"b"}`, string(got))
		case <-time.After(10 * time.Second):
			t.Fatal("payload not delivered")
		}
	}

	// A cancelled listener's channel is closed and gets nothing more.
	stopB()
	_, open := <-onB
	require.False(t, open)
}

func TestNotifyRefusesPayloadsOverTheLimit(t *testing.T) {
	t.Parallel()
	bus := events.NewBus(pgtest.NewDB(t), slog.New(slog.NewTextHandler(io.Discard, nil)))
	err := bus.Notify(context.Background(), events.ChannelAgents, []byte(strings.Repeat("x", events.MaxPayload+1)))
	require.ErrorIs(t, err, events.ErrTooLarge)
}

func TestOnlyRawChannelsCanBeListenedTo(t *testing.T) {
	t.Parallel()
	bus := events.NewBus(nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.Panics(t, func() { bus.Listen("cairn_events") })
}
