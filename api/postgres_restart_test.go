package api_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/authtest"
	"github.com/cairn-rmm/cairn/internal/devpostgres"
	"github.com/cairn-rmm/cairn/internal/events"
	"github.com/cairn-rmm/cairn/internal/testport"
)

// Item 19: PostgreSQL restarts under load and the Engine recovers without
// a restart of its own. Requests meanwhile answer 503 (never hang), /ready
// says postgres unavailable, a heartbeat accepted before the outage is
// written after it (heartbeats queue in memory and survive failed
// flushes), and the event listener re-subscribes: an event published
// after the restart reaches a subscriber on this replica.
func TestEngineRecoversFromPostgresRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	port := testport.Free(t)
	dir := filepath.Join(t.TempDir(), "pg")
	cluster, err := devpostgres.Start(ctx, devpostgres.Options{Dir: dir, Port: port, InstallIfMissing: true})
	require.NoError(t, err)
	t.Cleanup(func() { cluster.Stop() })
	require.NoError(t, db.Migrate(ctx, cluster.URL))
	store, err := db.OpenWith(ctx, cluster.URL, db.PoolConfig{AcquireTimeout: time.Second})
	require.NoError(t, err)
	t.Cleanup(store.Close)

	f := &fixture{store: store, clk: authtest.NewClock(), github: newFakeGitHub(t)}
	f.engine = f.newEngine(t)
	f.url = f.engine.http.URL
	admin := f.admin(t)
	site := f.createSite(t, admin, "pgrestart")
	a := f.enrolled(t, admin, site, "pg-01")
	heartbeat := func() response {
		return a.device(t, "POST", proto.PathHeartbeat, proto.Heartbeat{SentAt: time.Now().UTC(), AgentVersion: "1.2.3",
			BootID: "boot-1", Metrics: proto.Metrics{LoggedInUsers: []string{}}})
	}
	lastSeen := func() string {
		r := f.do(t, "GET", "/api/devices/"+a.guid, admin, nil)
		require.Equal(t, 200, r.Status, r.Raw)
		s, _ := r.Body["last_seen"].(string)
		return s
	}
	require.Equal(t, 200, heartbeat().Status)
	require.NoError(t, f.engine.devices.Flush(ctx))
	seenBefore := lastSeen()
	evs, stopEvents := f.engine.bus.Subscribe(nil)
	defer stopEvents()

	// Load: operators list devices throughout the restart.
	var stop atomic.Bool
	var load sync.WaitGroup
	var answered, shed, failed atomic.Int64
	for range 4 {
		load.Add(1)
		go func() {
			defer load.Done()
			client := &http.Client{}
			for !stop.Load() {
				req, _ := http.NewRequest("GET", f.url+"/api/devices", nil)
				req.Header.Set("Authorization", "Bearer "+admin)
				res, err := client.Do(req)
				if err != nil {
					continue
				}
				res.Body.Close()
				answered.Add(1)
				switch res.StatusCode {
				case http.StatusServiceUnavailable:
					shed.Add(1)
				case http.StatusOK:
				default:
					failed.Add(1)
				}
			}
		}()
	}
	defer func() { stop.Store(true); load.Wait() }()

	// A heartbeat accepted just before the outage, not yet flushed.
	require.Eventually(t, func() bool { return lastSeen() != "" && heartbeat().Status == 200 }, time.Minute, 10*time.Millisecond)
	cluster.Stop()

	r := f.do(t, "GET", "/ready", "", nil)
	require.Equal(t, 503, r.Status, r.Raw)
	require.Equal(t, "unavailable", r.Body["checks"].(map[string]any)["postgres"])
	r = f.do(t, "GET", "/api/devices/"+a.guid, admin, nil)
	require.Equal(t, 503, r.Status, r.Raw)
	require.Equal(t, "service_unavailable", r.Body["error"])
	require.Error(t, f.engine.devices.Flush(ctx), "the flush fails and keeps the heartbeat queued")
	require.Eventually(t, func() bool { return shed.Load() > 0 }, time.Minute, 10*time.Millisecond, "the load sees 503s")

	// The same cluster on the same port: no Engine restart.
	cluster, err = devpostgres.Start(ctx, devpostgres.Options{Dir: dir, Port: port})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return f.do(t, "GET", "/ready", "", nil).Status == 200 }, 2*time.Minute, 50*time.Millisecond)
	require.NoError(t, f.engine.devices.Flush(ctx))
	require.Greater(t, lastSeen(), seenBefore, "the heartbeat queued across the outage is written")
	require.Equal(t, 200, heartbeat().Status)
	before := answered.Load()
	require.Eventually(t, func() bool { return answered.Load() > before+20 }, time.Minute, 10*time.Millisecond, "the load goes on")
	require.Equal(t, 200, f.do(t, "GET", "/api/devices", admin, nil).Status)
	require.Zero(t, failed.Load(), "requests during the restart answer 200 or 503, never 500")

	// LISTEN is back: an event published now reaches this replica's
	// subscriber (each try publishes a fresh one).
	require.Eventually(t, func() bool {
		id := fmt.Sprintf("after-restart-%d", time.Now().UnixNano())
		if err := f.engine.bus.Publish(ctx, events.Event{ID: id, Type: "fault.test", Data: []byte(`{}`)}); err != nil {
			return false
		}
		for {
			select {
			case e := <-evs:
				if e.ID == id {
					return true
				}
			case <-time.After(time.Second):
				return false
			}
		}
	}, 2*time.Minute, 10*time.Millisecond, "the event listener re-subscribed")
}
