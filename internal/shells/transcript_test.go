package shells

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// events parses an asciicast v2 transcript into its header and events.
func events(t *testing.T, b []byte) (Header, [][]any) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, len(b)+1)
	require.True(t, sc.Scan())
	var h Header
	require.NoError(t, json.Unmarshal(sc.Bytes(), &h))
	var out [][]any
	for sc.Scan() {
		var e []any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &e), "line %q", sc.Text())
		require.Len(t, e, 3)
		out = append(out, e)
	}
	return h, out
}

// chunks is a ChunkWriter in memory that can be made to fail.
type chunks struct {
	mu   sync.Mutex
	data [][]byte
	fail bool
}

func (c *chunks) write(_ context.Context, seq int32, data []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail {
		return errors.New("database down")
	}
	if int(seq) != len(c.data) {
		return fmt.Errorf("chunk %d after %d chunks", seq, len(c.data))
	}
	c.data = append(c.data, bytes.Clone(data))
	return nil
}

func (c *chunks) all() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Join(c.data, nil)
}

func TestRecorderWritesAsciicast(t *testing.T) {
	ctx := context.Background()
	start := time.Unix(1_900_000_000, 0)
	now := start
	var c chunks
	r := NewRecorder(RecorderOptions{Cols: 120, Rows: 40, Title: "web-01", Start: start, RecordInput: true, Write: c.write,
		Now: func() time.Time { return now }})
	now = now.Add(1500 * time.Millisecond)
	require.NoError(t, r.Input(ctx, []byte("ls\r")))
	require.NoError(t, r.Output(ctx, []byte("héllo\r\n")))
	// "é" is 0xC3 0xA9: a frame may end between the two bytes.
	require.NoError(t, r.Output(ctx, []byte("caf\xc3")))
	now = now.Add(time.Second)
	require.NoError(t, r.Output(ctx, []byte("\xa9 \xff")))
	require.NoError(t, r.Resize(ctx, 100, 30))
	require.Empty(t, c.all(), "nothing is written before a chunk fills or a flush")
	require.NoError(t, r.Flush(ctx))

	h, ev := events(t, c.all())
	require.Equal(t, Header{Version: 2, Width: 120, Height: 40, Timestamp: 1_900_000_000, Title: "web-01",
		Env: map[string]string{"TERM": "xterm-256color"}}, h)
	require.Equal(t, [][]any{
		{1.5, "i", "ls\r"},
		{1.5, "o", "héllo\r\n"},
		{1.5, "o", "caf"},
		{2.5, "o", "é \ufffd"},
		{2.5, "r", "100x30"},
	}, ev)
}

// Input recording off: keystrokes (a password typed at a prompt that
// does not echo) stay out of the transcript.
func TestRecorderLeavesInputOutWhenOff(t *testing.T) {
	ctx := context.Background()
	var c chunks
	r := NewRecorder(RecorderOptions{Cols: 80, Rows: 24, Start: time.Now(), Write: c.write})
	require.NoError(t, r.Output(ctx, []byte("Password: ")))
	require.NoError(t, r.Input(ctx, []byte("hunter2\r")))
	require.NoError(t, r.Flush(ctx))
	require.NotContains(t, string(c.all()), "hunter2")
	_, ev := events(t, c.all())
	require.Len(t, ev, 1)
}

// A transcript streams out in chunks as it grows, so memory holds about
// one chunk whatever the session's length.
func TestRecorderStreamsChunks(t *testing.T) {
	ctx := context.Background()
	var c chunks
	r := NewRecorder(RecorderOptions{Cols: 80, Rows: 24, Start: time.Now(), Write: c.write})
	frame := []byte(strings.Repeat("x", 1000))
	for range 1000 {
		require.NoError(t, r.Output(ctx, frame))
		r.mu.Lock()
		held := r.buf.Len()
		r.mu.Unlock()
		require.Less(t, held, TranscriptChunk+len(frame)+100)
	}
	c.mu.Lock()
	n := len(c.data)
	c.mu.Unlock()
	require.Greater(t, n, 10)
	require.NoError(t, r.Flush(ctx))
	_, ev := events(t, c.all())
	require.Len(t, ev, 1000, "chunks are byte ranges of one file")
	require.Equal(t, int64(len(c.all())), r.Bytes())
}

// Reaching the cap refuses the event with ErrTranscriptFull (the session
// ends) and closes the transcript with a marker saying why; nothing is
// recorded after it.
func TestRecorderEndsAtItsCap(t *testing.T) {
	ctx := context.Background()
	var c chunks
	r := NewRecorder(RecorderOptions{Cols: 80, Rows: 24, Start: time.Now(), Max: 4096, RecordInput: true, Write: c.write})
	var err error
	for range 100 {
		if err = r.Output(ctx, []byte(strings.Repeat("x", 100))); err != nil {
			break
		}
	}
	require.ErrorIs(t, err, ErrTranscriptFull)
	require.ErrorIs(t, r.Input(ctx, []byte("more")), ErrTranscriptFull)
	require.ErrorIs(t, r.Resize(ctx, 1, 1), ErrTranscriptFull)
	require.NoError(t, r.Flush(ctx))
	b := c.all()
	require.LessOrEqual(t, len(b), 4096)
	_, ev := events(t, b)
	last := ev[len(ev)-1]
	require.Equal(t, "m", last[1])
	require.Equal(t, "the session's transcript reached its limit of 4 KiB", last[2])
	require.Equal(t, "the session's transcript reached its limit of 4 KiB", r.LimitMessage())
}

// While PostgreSQL refuses chunks the recorder holds them, up to a bound;
// past it the session ends (ErrTranscriptStore) rather than lose them.
func TestRecorderEndsWhenItCannotStore(t *testing.T) {
	ctx := context.Background()
	c := chunks{fail: true}
	r := NewRecorder(RecorderOptions{Cols: 80, Rows: 24, Start: time.Now(), Write: c.write})
	frame := []byte(strings.Repeat("x", 1000))
	var err error
	accepted := 0
	for range 10 * maxUnstored / len(frame) {
		if err = r.Output(ctx, frame); err != nil {
			break
		}
		accepted++
	}
	require.ErrorIs(t, err, ErrTranscriptStore)
	c.mu.Lock()
	c.fail = false
	c.mu.Unlock()
	require.NoError(t, r.Flush(ctx), "what was held is stored once the database answers")
	_, ev := events(t, c.all())
	// Every accepted frame, and not the refused one (the bridge did not
	// pass it on).
	require.Equal(t, accepted, len(ev))
}

// A chunk whose write reached the database but whose answer was lost is
// retried as it was, under its seq (the store ignores a chunk it has),
// so nothing written meanwhile is merged into it and lost.
func TestRecorderRetriesAChunkAsItWas(t *testing.T) {
	ctx := context.Background()
	stored := map[int32][]byte{}
	lost := true
	write := func(_ context.Context, seq int32, data []byte) error {
		if _, ok := stored[seq]; !ok {
			stored[seq] = bytes.Clone(data)
		}
		if lost {
			lost = false
			return errors.New("connection reset")
		}
		return nil
	}
	r := NewRecorder(RecorderOptions{Cols: 80, Rows: 24, Start: time.Now(), Write: write})
	require.NoError(t, r.Output(ctx, []byte("first")))
	require.Error(t, r.Flush(ctx))
	require.NoError(t, r.Output(ctx, []byte("second")))
	require.NoError(t, r.Flush(ctx))
	var all []byte
	for seq := int32(0); seq < int32(len(stored)); seq++ {
		all = append(all, stored[seq]...)
	}
	_, ev := events(t, all)
	require.Len(t, ev, 2)
	require.Equal(t, "first", ev[0][2])
	require.Equal(t, "second", ev[1][2])
}
