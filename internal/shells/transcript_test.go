package shells

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
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

func TestRecorderWritesAsciicast(t *testing.T) {
	start := time.Unix(1_900_000_000, 0)
	now := start
	r := NewRecorder(120, 40, "web-01", start, 0, func() time.Time { return now })
	now = now.Add(1500 * time.Millisecond)
	r.Output([]byte("héllo\r\n"))
	// "é" is 0xC3 0xA9: a frame may end between the two bytes.
	r.Output([]byte("caf\xc3"))
	now = now.Add(time.Second)
	r.Output([]byte("\xa9 \xff"))
	r.Resize(100, 30)

	b, truncated := r.Bytes()
	require.False(t, truncated)
	h, ev := events(t, b)
	require.Equal(t, Header{Version: 2, Width: 120, Height: 40, Timestamp: 1_900_000_000, Title: "web-01",
		Env: map[string]string{"TERM": "xterm-256color"}}, h)
	require.Equal(t, [][]any{
		{1.5, "o", "héllo\r\n"},
		{1.5, "o", "caf"},
		{2.5, "o", "é \ufffd"},
		{2.5, "r", "100x30"},
	}, ev)
}

func TestRecorderStopsAtItsBound(t *testing.T) {
	r := NewRecorder(80, 24, "", time.Now(), 4096, nil)
	for range 100 {
		r.Output([]byte(strings.Repeat("x", 100)))
	}
	b, truncated := r.Bytes()
	require.True(t, truncated)
	require.LessOrEqual(t, len(b), 4096)
	_, ev := events(t, b)
	last := ev[len(ev)-1]
	require.Equal(t, "m", last[1])
	require.Contains(t, last[2], "truncated")
	r.Output([]byte("more"))
	again, _ := r.Bytes()
	require.Equal(t, b, again, "nothing is added after the marker")
}
