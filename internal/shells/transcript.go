package shells

import (
	"bytes"
	"encoding/json"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// MaxTranscript bounds one session's transcript (it is held in memory
// until the session ends, then stored in one write).
const MaxTranscript = 4 << 20

// markerReserve keeps room for the truncation marker under the bound.
const markerReserve = 256

// Recorder writes an asciicast v2 transcript: a header line, then one
// [seconds, "o", text] event per output frame of the agent and [seconds,
// "r", "COLSxROWS"] per resize. Operator input is not recorded: what the
// terminal echoes is in the output, and what it does not echo (passwords)
// must stay out. Past the bound one marker event ("m") says the rest was
// dropped.
type Recorder struct {
	mu        sync.Mutex
	start     time.Time
	now       func() time.Time
	max       int
	buf       bytes.Buffer
	carry     []byte // an incomplete UTF-8 sequence at the end of the last frame
	truncated bool
}

// Header is the asciicast v2 header line.
type Header struct {
	Version   int               `json:"version"`
	Width     int               `json:"width"`
	Height    int               `json:"height"`
	Timestamp int64             `json:"timestamp"`
	Title     string            `json:"title,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
}

// NewRecorder starts a transcript of a cols x rows terminal at start;
// max <= 0 means MaxTranscript. now defaults to time.Now.
func NewRecorder(cols, rows int, title string, start time.Time, max int, now func() time.Time) *Recorder {
	if max <= 0 {
		max = MaxTranscript
	}
	if now == nil {
		now = time.Now
	}
	r := &Recorder{start: start, now: now, max: max}
	h, _ := json.Marshal(Header{Version: 2, Width: cols, Height: rows, Timestamp: start.Unix(), Title: title,
		Env: map[string]string{"TERM": "xterm-256color"}})
	r.buf.Write(h)
	r.buf.WriteByte('\n')
	return r
}

// Output records terminal output. Frames may split a UTF-8 sequence; the
// incomplete tail waits for the next frame so no character is mangled.
func (r *Recorder) Output(b []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.truncated || len(b) == 0 {
		return
	}
	data := append(r.carry, b...)
	r.carry = nil
	if cut := incompleteTail(data); cut < len(data) {
		r.carry = append([]byte(nil), data[cut:]...)
		data = data[:cut]
	}
	if len(data) == 0 {
		return
	}
	// json.Marshal turns invalid UTF-8 into U+FFFD.
	text, _ := json.Marshal(string(data))
	r.event("o", text)
}

// Resize records a terminal size change.
func (r *Recorder) Resize(cols, rows int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.truncated {
		return
	}
	text, _ := json.Marshal(strconv.Itoa(cols) + "x" + strconv.Itoa(rows))
	r.event("r", text)
}

// event appends one line, or the truncation marker once the bound is hit.
func (r *Recorder) event(code string, text []byte) {
	t := strconv.FormatFloat(r.now().Sub(r.start).Seconds(), 'f', 6, 64)
	n := 1 + len(t) + 2 + 1 + len(code) + 1 + 2 + len(text) + 2
	if r.buf.Len()+n > r.max-markerReserve {
		r.truncated = true
		r.carry = nil
		msg, _ := json.Marshal("transcript truncated: it reached the " + strconv.Itoa(r.max>>10) + " KiB limit")
		r.line(t, "m", msg)
		return
	}
	r.line(t, code, text)
}

func (r *Recorder) line(t, code string, text []byte) {
	r.buf.WriteByte('[')
	r.buf.WriteString(t)
	r.buf.WriteString(`, "`)
	r.buf.WriteString(code)
	r.buf.WriteString(`", `)
	r.buf.Write(text)
	r.buf.WriteString("]\n")
}

// Bytes returns the transcript so far and whether it was truncated.
func (r *Recorder) Bytes() ([]byte, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Clone(r.buf.Bytes()), r.truncated
}

// incompleteTail returns where a trailing incomplete UTF-8 sequence
// starts (len(b) when there is none). Invalid bytes are not held back.
func incompleteTail(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return i
			}
			return len(b)
		}
	}
	return len(b)
}
