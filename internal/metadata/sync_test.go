package metadata

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The conflict rule (SPEC: newest modified_at wins; future agent
// timestamps are clamped to the Engine's now before comparison).
func TestDecide(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	agentAt := func(v string, at time.Time) *Stored { return &Stored{Value: v, ModifiedAt: at, Source: SourceAgent} }
	opAt := func(v string, at time.Time) *Stored {
		return &Stored{Value: v, ModifiedAt: at, Source: "operator:alice"}
	}
	cases := []struct {
		name     string
		stored   *Stored
		value    string
		at       time.Time
		accept   bool
		storedAt time.Time
	}{
		{"nothing stored", nil, "a", now.Add(-time.Hour), true, now.Add(-time.Hour)},
		{"newer than stored", opAt("x", now.Add(-time.Hour)), "a", now.Add(-time.Minute), true, now.Add(-time.Minute)},
		{"older than an operator write", opAt("x", now.Add(-time.Minute)), "a", now.Add(-time.Hour), false, now.Add(-time.Hour)},
		{"older than an agent write", agentAt("x", now.Add(-time.Minute)), "a", now.Add(-time.Hour), false, now.Add(-time.Hour)},
		{"same time as an operator write", opAt("x", now.Add(-time.Minute)), "x", now.Add(-time.Minute), false, now.Add(-time.Minute)},
		{"the same agent write again (lost ack)", agentAt("a", now.Add(-time.Minute)), "a", now.Add(-time.Minute), true, now.Add(-time.Minute)},
		{"same time, other value", agentAt("b", now.Add(-time.Minute)), "a", now.Add(-time.Minute), false, now.Add(-time.Minute)},
		{"future write is clamped to now", nil, "a", now.Add(time.Hour), true, now},
		{"future write clamped, beats an older value", opAt("x", now.Add(-time.Second)), "a", now.Add(24 * time.Hour), true, now},
		{"future write clamped, loses to a value stored at now", opAt("x", now), "a", now.Add(time.Hour), false, now},
		{"future write clamped, loses to an operator write past now (replica clock ahead)", opAt("x", now.Add(time.Second)), "a", now.Add(time.Hour), false, now},
		{"sub-microsecond precision is dropped", nil, "a", now.Add(-time.Hour + 999), true, now.Add(-time.Hour)},
		{"a cleared value is newer too", agentAt("", now.Add(-time.Minute)), "a", now.Add(-time.Hour), false, now.Add(-time.Hour)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			accept, at := Decide(c.stored, c.value, c.at, now)
			require.Equal(t, c.accept, accept)
			require.True(t, c.storedAt.Equal(at), "stored at %s, want %s", at, c.storedAt)
		})
	}
}

func TestReservedDefinitions(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]string{1: "Server Roles", 2: "Bitlocker Drive Encryption", 3: "Reserved", 10: "Reserved"} {
		d, ok := reservedDescription(n)
		require.True(t, ok, n)
		require.Equal(t, want, d)
	}
	for _, n := range []int{0, 11, 500} {
		require.False(t, Reserved(n), n)
	}
}
