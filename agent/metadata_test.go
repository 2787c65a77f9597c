package agent_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent"
)

var t0 = time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)

func TestParseFieldNumber(t *testing.T) {
	t.Parallel()
	for s, ok := range map[string]bool{
		"1": true, "500": true, "42": true,
		"0": false, "501": false, "-1": false, "": false, "x": false, "1.5": false, "99999999999999999999": false,
	} {
		_, err := agent.ParseFieldNumber(s)
		require.Equal(t, ok, err == nil, "field %q", s)
	}
}

func TestMetadataValueProblem(t *testing.T) {
	t.Parallel()
	for v, ok := range map[string]bool{
		"": true, "rack 4": true, strings.Repeat("a", 1024): true, strings.Repeat("é", 1024): true,
		strings.Repeat("a", 1025): false, strings.Repeat("é", 1025): false, "\xff": false,
		"a\tb\nc": true, "a\r\nb": true, "bell\x07": false, "\x1b[31m": false,
	} {
		require.Equal(t, ok, agent.MetadataValueProblem(v) == "", "value of length %d", len(v))
	}
}

func TestSetAndGetMetadata(t *testing.T) {
	t.Parallel()
	c := agent.Default()
	_, _, src := c.GetMetadata(7)
	require.Equal(t, agent.MetadataUnknown, src)

	e, err := c.SetMetadata(7, "rack 4", t0.In(time.FixedZone("X", 3600)))
	require.NoError(t, err)
	require.Equal(t, time.UTC, e.ModifiedAt.Location(), "modified_at is UTC")
	v, at, src := c.GetMetadata(7)
	require.Equal(t, "rack 4", v)
	require.Equal(t, agent.MetadataQueued, src)
	require.True(t, at.Equal(t0))

	_, err = c.SetMetadata(7, "   ", t0.Add(time.Second))
	require.NoError(t, err)
	require.Equal(t, []agent.MetadataEntry{{FieldNumber: 7, Value: "", ModifiedAt: t0.Add(time.Second)}},
		c.PendingMetadata(), "a blank value replaces the queued write with a clear")

	_, err = c.SetMetadata(0, "x", t0)
	require.Error(t, err)
	_, err = c.SetMetadata(8, strings.Repeat("a", 1025), t0)
	require.Error(t, err)
	require.Len(t, c.PendingMetadata(), 1)

	require.Equal(t, 1, c.AckMetadata([]agent.MetadataAck{{FieldNumber: 7, ModifiedAt: t0.Add(time.Second)}}))
	v, _, src = c.GetMetadata(7)
	require.Equal(t, agent.MetadataAcknowledged, src)
	require.Empty(t, v)
}

func TestAckOfOlderWriteKeepsNewerOne(t *testing.T) {
	t.Parallel()
	c := agent.Default()
	sent, err := c.SetMetadata(5, "old", t0)
	require.NoError(t, err)
	pending := c.PendingMetadata() // the heartbeat sends this
	require.Equal(t, []agent.MetadataEntry{sent}, pending)

	// Written again before the ack arrives, with a clock that did not move.
	newer, err := c.SetMetadata(5, "new", t0)
	require.NoError(t, err)
	require.True(t, newer.ModifiedAt.After(sent.ModifiedAt), "modified_at strictly increases per field")

	require.Zero(t, c.AckMetadata([]agent.MetadataAck{{FieldNumber: 5, ModifiedAt: sent.ModifiedAt}}))
	v, _, src := c.GetMetadata(5)
	require.Equal(t, "new", v)
	require.Equal(t, agent.MetadataQueued, src)

	require.Equal(t, 1, c.AckMetadata([]agent.MetadataAck{{FieldNumber: 5, ModifiedAt: newer.ModifiedAt}}))
	require.Empty(t, c.PendingMetadata())
	v, _, src = c.GetMetadata(5)
	require.Equal(t, "new", v)
	require.Equal(t, agent.MetadataAcknowledged, src)

	// A later write stays later than the acknowledged one even if the clock stepped back.
	e, err := c.SetMetadata(5, "again", t0.Add(-time.Hour))
	require.NoError(t, err)
	require.True(t, e.ModifiedAt.After(newer.ModifiedAt))
}

func TestAckSupersededForgetsLocalValue(t *testing.T) {
	t.Parallel()
	c := agent.Default()
	e, err := c.SetMetadata(9, "mine", t0)
	require.NoError(t, err)
	_, err = c.SetMetadata(10, "other", t0)
	require.NoError(t, err)
	require.Equal(t, 1, c.AckMetadata([]agent.MetadataAck{
		{FieldNumber: 9, ModifiedAt: e.ModifiedAt, Superseded: true},
		{FieldNumber: 11, ModifiedAt: t0}, // nothing queued: ignored
	}))
	_, _, src := c.GetMetadata(9)
	require.Equal(t, agent.MetadataUnknown, src, "the Engine holds a newer value this agent has not seen")
	require.Len(t, c.PendingMetadata(), 1)
}

// Values the Engine read back (operator edits) become the acknowledged
// value without touching the queue; a field the Engine never had is
// forgotten. The revision is stored in agent.json.
func TestEngineMetadata(t *testing.T) {
	t.Parallel()
	c := agent.Default()
	_, err := c.SetMetadata(9, "local", t0)
	require.NoError(t, err)
	c.SetEngineMetadata(9, "from the console", t0.Add(-time.Minute))
	c.SetEngineMetadata(10, "other", t0)
	v, _, src := c.GetMetadata(9)
	require.Equal(t, "local", v, "the queued write is newer and stays")
	require.Equal(t, agent.MetadataQueued, src)
	v, at, src := c.GetMetadata(10)
	require.Equal(t, "other", v)
	require.Equal(t, agent.MetadataAcknowledged, src)
	require.True(t, at.Equal(t0))
	c.ForgetEngineMetadata(10)
	_, _, src = c.GetMetadata(10)
	require.Equal(t, agent.MetadataUnknown, src)

	c.Metadata.EngineRevision = 42
	b, err := c.Marshal()
	require.NoError(t, err)
	back, err := agent.Parse(b)
	require.NoError(t, err)
	require.EqualValues(t, 42, back.Metadata.EngineRevision)

	_, err = c.SetMetadata(11, "ring\x07", t0)
	require.Error(t, err, "control characters are refused")
	e, err := c.SetMetadata(12, "a\r\nb", t0)
	require.NoError(t, err)
	require.Equal(t, "a\nb", e.Value, "stored as the Engine stores it")
}
