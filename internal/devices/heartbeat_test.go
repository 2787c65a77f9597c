package devices_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
)

// Many heartbeats from many devices cost one statement per flush, and
// nothing before it: the calls only queue. A device's later heartbeat
// replaces its earlier one.
func TestHeartbeatsAreCoalescedIntoOneStatement(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	const n = 50
	ids := make([]devicetrust.Identity, n)
	for i := range ids {
		ids[i] = f.device(t, fmt.Sprintf("guid-%02d", i), fmt.Sprintf("host-%02d", i))
	}
	for round := range 3 {
		for i, id := range ids {
			res, err := f.svc.Heartbeat(ctx, id, proto.Heartbeat{AgentVersion: fmt.Sprintf("1.%d", round), BootID: "boot-a",
				Metrics: proto.Metrics{CPUPercent: float64(i), UptimeSeconds: int64(round)}, SentAt: time.Unix(0, 0)})
			require.NoError(t, err)
			require.Equal(t, devices.HeartbeatIntervalSeconds, res.IntervalSeconds)
			require.Equal(t, f.clock.Now(), res.ServerTime)
			require.NotNil(t, res.MetadataFieldAcks, "acks are an empty list, never null")
			require.Empty(t, res.MetadataFieldAcks)
		}
		f.clock.Advance(time.Second)
	}
	require.Zero(t, f.stmts.count("DeviceHeartbeatApply"), "a heartbeat call writes nothing itself")
	require.Nil(t, f.row(t, "guid-07").LastSeen)

	require.NoError(t, f.svc.Flush(ctx))
	require.Equal(t, 1, f.stmts.count("DeviceHeartbeatApply"))
	for i, id := range ids {
		d := f.row(t, string(id.GUID))
		require.NotNil(t, d.LastSeen)
		// The Engine's clock of the last beat, not the agent's sent_at.
		require.Equal(t, f.clock.Now().Add(-time.Second), d.LastSeen.UTC())
		require.Equal(t, "1.2", d.AgentVersion)
		require.Equal(t, "boot-a", d.BootID)
		var m proto.Metrics
		require.NoError(t, json.Unmarshal(d.Metrics, &m))
		require.Equal(t, float64(i), m.CPUPercent)
		require.Equal(t, int64(2), m.UptimeSeconds)
	}

	require.NoError(t, f.svc.Flush(ctx))
	require.Equal(t, 1, f.stmts.count("DeviceHeartbeatApply"), "an empty queue sends nothing")
}

// Run flushes early once FlushSize devices are queued, without waiting for
// the interval.
func TestHeartbeatFlushesEarlyWhenTheQueueIsFull(t *testing.T) {
	t.Parallel()
	f := setup(t)
	svc := devices.NewService(f.store, f.events, devices.Config{Now: f.clock.Now, FlushInterval: time.Hour, FlushSize: 3})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go svc.Run(ctx)
	for i := range 3 {
		id := f.device(t, fmt.Sprintf("g%d", i), fmt.Sprintf("h%d", i))
		_, err := svc.Heartbeat(ctx, id, proto.Heartbeat{})
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return f.row(t, "g2").LastSeen != nil }, 10*time.Second, 20*time.Millisecond)
}

// last_seen never moves back: a status post with a later time wins over
// an older queued heartbeat.
func TestHeartbeatDoesNotMoveLastSeenBack(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	id := f.device(t, "g", "h")
	_, err := f.svc.Heartbeat(ctx, id, proto.Heartbeat{})
	require.NoError(t, err)
	f.clock.Advance(time.Minute)
	require.NoError(t, f.svc.Status(ctx, id, proto.Status{Phase: "running"}))
	require.NoError(t, f.svc.Flush(ctx))
	require.Equal(t, f.clock.Now(), f.row(t, "g").LastSeen.UTC())
}

// A device without inventory is asked for details on the heartbeat after
// a flush saw it; storing details stops the asking.
func TestHeartbeatAsksForDetailsUntilInventoryExists(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	id := f.device(t, "g", "h")
	beat := func() bool {
		res, err := f.svc.Heartbeat(ctx, id, proto.Heartbeat{})
		require.NoError(t, err)
		require.NoError(t, f.svc.Flush(ctx))
		return res.DetailsWanted
	}
	require.False(t, beat(), "nothing is known before the first flush")
	require.True(t, beat())
	require.True(t, beat())
	_, err := f.svc.Details(ctx, id, proto.Details{Inventory: proto.Inventory{Software: []proto.Software{}}})
	require.NoError(t, err)
	require.False(t, beat())
	require.False(t, beat())
}

// A heartbeat of a device that no longer exists is dropped by the flush
// without failing it for the others.
func TestHeartbeatOfAnUnknownDeviceIsDropped(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	known := f.device(t, "known", "known-host")
	_, err := f.svc.Heartbeat(ctx, devicetrust.Identity{GUID: "gone"}, proto.Heartbeat{})
	require.NoError(t, err)
	_, err = f.svc.Heartbeat(ctx, known, proto.Heartbeat{})
	require.NoError(t, err)
	require.NoError(t, f.svc.Flush(ctx))
	require.NotNil(t, f.row(t, "known").LastSeen)
	_, err = f.store.DeviceGetInScope(ctx, db.DeviceGetInScopeParams{Guid: "gone", AllSites: true, SiteIds: []int64{}})
	require.True(t, db.IsNoRows(err))
}

func TestHeartbeatRejectsBadInput(t *testing.T) {
	t.Parallel()
	f := setup(t)
	id := f.device(t, "g", "h")
	for _, tc := range []struct {
		field string
		hb    proto.Heartbeat
	}{
		{"agent_version", proto.Heartbeat{AgentVersion: strings.Repeat("v", 65)}},
		{"boot_id", proto.Heartbeat{BootID: strings.Repeat("b", 129)}},
		{"metrics.cpu_percent", proto.Heartbeat{Metrics: proto.Metrics{CPUPercent: -1}}},
		{"metrics.cpu_percent", proto.Heartbeat{Metrics: proto.Metrics{CPUPercent: math.NaN()}}},
		{"metrics.uptime_seconds", proto.Heartbeat{Metrics: proto.Metrics{UptimeSeconds: -5}}},
		{"metrics.logged_in_users", proto.Heartbeat{Metrics: proto.Metrics{LoggedInUsers: make([]string, 257)}}},
		{"metrics.logged_in_users", proto.Heartbeat{Metrics: proto.Metrics{LoggedInUsers: []string{strings.Repeat("u", 257)}}}},
	} {
		_, err := f.svc.Heartbeat(context.Background(), id, tc.hb)
		var e *cairn.Error
		require.ErrorAs(t, err, &e, tc.field)
		require.Equal(t, cairn.ECodeValidation, e.Code)
		require.Contains(t, e.Fields, tc.field)
	}
	require.NoError(t, f.svc.Flush(context.Background()))
	require.Nil(t, f.row(t, "g").LastSeen, "a refused heartbeat is not recorded")
}
