package shells

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// Transcript limits and defaults (docs/api.md "Remote shell").
const (
	// DefaultTranscriptMax bounds one session's transcript
	// (CAIRN_SHELL_TRANSCRIPT_MAX_BYTES): reaching it ends the session.
	DefaultTranscriptMax int64 = 64 << 20
	// MinTranscriptMax and MaxTranscriptMax bound the setting.
	MinTranscriptMax int64 = 64 << 10
	MaxTranscriptMax int64 = 16 << 30
	// TranscriptChunk is when the recorder writes what it holds: one
	// chunk row of at least this size (one event may make it larger).
	TranscriptChunk = 64 << 10
	// maxUnstored bounds what the recorder holds while PostgreSQL refuses
	// its writes; beyond it the session ends (ErrTranscriptStore).
	maxUnstored = 16 * TranscriptChunk
	// markerReserve keeps room for the closing marker under the cap.
	markerReserve = 512
)

// Errors a recorder ends a session with: the event was not recorded, so
// the bridge must not pass its frame on.
var (
	// ErrTranscriptFull: the event would take the transcript past its cap.
	ErrTranscriptFull = errors.New("shells: the transcript reached its limit")
	// ErrTranscriptStore: PostgreSQL keeps refusing the transcript's chunks.
	ErrTranscriptStore = errors.New("shells: the transcript could not be stored")
)

// ChunkWriter stores chunk seq of a transcript; writing a chunk again
// must change nothing.
type ChunkWriter func(ctx context.Context, seq int32, data []byte) error

// RecorderOptions configure a transcript.
type RecorderOptions struct {
	Cols, Rows int
	Title      string
	Start      time.Time
	// Max is the cap (<= 0: DefaultTranscriptMax).
	Max int64
	// RecordInput records the operator's keystrokes as "i" events.
	RecordInput bool
	// Write stores each chunk; Now defaults to time.Now.
	Write ChunkWriter
	Now   func() time.Time
}

// Recorder writes an asciicast v2 transcript, streamed out in chunks of
// about TranscriptChunk bytes: a header line, then one [seconds, "o",
// text] event per output frame of the agent, [seconds, "i", text] per
// input frame of the operator (unless input recording is off: then what
// the terminal does not echo, such as passwords, stays out), [seconds,
// "r", "COLSxROWS"] per resize, and a closing marker ("m") when the
// session ended because of the transcript. It never drops an event
// silently: an event it cannot record is refused with an error that ends
// the session.
type Recorder struct {
	mu      sync.Mutex
	o       RecorderOptions
	buf     bytes.Buffer
	pending []byte // a chunk whose write failed: retried as it is, under its seq
	seq     int32
	stored  int64 // bytes written out
	outTail []byte
	inTail  []byte // incomplete UTF-8 sequences at the end of the last frames
	ended   error  // once refused, every later event is
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

// NewRecorder starts a transcript; nothing is written before the first
// chunk fills or Flush.
func NewRecorder(o RecorderOptions) *Recorder {
	if o.Max <= 0 {
		o.Max = DefaultTranscriptMax
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	r := &Recorder{o: o}
	h, _ := json.Marshal(Header{Version: 2, Width: o.Cols, Height: o.Rows, Timestamp: o.Start.Unix(), Title: o.Title,
		Env: map[string]string{"TERM": "xterm-256color"}})
	r.buf.Write(h)
	r.buf.WriteByte('\n')
	return r
}

// Output records terminal output.
func (r *Recorder) Output(ctx context.Context, b []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.text(ctx, "o", &r.outTail, b)
}

// Input records the operator's keystrokes, when input is recorded.
func (r *Recorder) Input(ctx context.Context, b []byte) error {
	if !r.o.RecordInput {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.text(ctx, "i", &r.inTail, b)
}

// Resize records a terminal size change.
func (r *Recorder) Resize(ctx context.Context, cols, rows int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	text, _ := json.Marshal(strconv.Itoa(cols) + "x" + strconv.Itoa(rows))
	return r.event(ctx, "r", text)
}

// text records frame b as an event of code. Frames may split a UTF-8
// sequence; the incomplete tail waits for the next frame so no character
// is mangled.
func (r *Recorder) text(ctx context.Context, code string, tail *[]byte, b []byte) error {
	if r.ended != nil {
		return r.ended
	}
	if len(b) == 0 {
		return nil
	}
	data := append(*tail, b...)
	*tail = nil
	if cut := incompleteTail(data); cut < len(data) {
		*tail = append([]byte(nil), data[cut:]...)
		data = data[:cut]
	}
	if len(data) == 0 {
		return nil
	}
	// json.Marshal turns invalid UTF-8 into U+FFFD.
	text, _ := json.Marshal(string(data))
	return r.event(ctx, code, text)
}

// event appends one line, writing a chunk out once one is full. An event
// past the cap is refused: the closing marker says so and the session
// ends.
func (r *Recorder) event(ctx context.Context, code string, text []byte) error {
	if r.ended != nil {
		return r.ended
	}
	t := r.stamp()
	n := int64(1 + len(t) + 2 + 1 + len(code) + 1 + 2 + len(text) + 2)
	if r.stored+r.held()+n > r.o.Max-markerReserve {
		r.ended = ErrTranscriptFull
		msg, _ := json.Marshal(r.LimitMessage())
		r.line(t, "m", msg)
		return r.ended
	}
	if r.held()+n > maxUnstored {
		// Writes have been failing: one more try, else the session ends
		// rather than hold more (or drop what it holds).
		if err := r.flush(ctx); err != nil && r.held()+n > maxUnstored {
			r.ended = ErrTranscriptStore
			return r.ended
		}
	}
	r.line(t, code, text)
	if r.held() >= TranscriptChunk {
		// A failed write is kept and retried with the next event or tick.
		_ = r.flush(ctx)
	}
	return nil
}

// LimitMessage says why a session whose transcript is full ended.
func (r *Recorder) LimitMessage() string {
	return fmt.Sprintf("the session's transcript reached its limit of %s", byteSize(r.o.Max))
}

func (r *Recorder) stamp() string {
	return strconv.FormatFloat(r.o.Now().Sub(r.o.Start).Seconds(), 'f', 6, 64)
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

// held is what the recorder has not written out yet.
func (r *Recorder) held() int64 { return int64(len(r.pending) + r.buf.Len()) }

// flush writes out what is held, a chunk at a time. A chunk whose write
// failed is kept as it is and retried first under the same seq: a write
// that did reach the database (its answer was lost) then changes nothing,
// and nothing that arrived meanwhile is merged into it and lost.
func (r *Recorder) flush(ctx context.Context) error {
	for r.pending != nil || r.buf.Len() > 0 {
		if r.pending == nil {
			r.pending = bytes.Clone(r.buf.Bytes())
			r.buf.Reset()
		}
		if err := r.o.Write(ctx, r.seq, r.pending); err != nil {
			return err
		}
		r.seq++
		r.stored += int64(len(r.pending))
		r.pending = nil
	}
	return nil
}

// Flush writes out what is held (the guard calls it on each tick, so a
// quiet session's transcript is stored within a tick).
func (r *Recorder) Flush(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.flush(ctx)
}

// Bytes is the size of the transcript so far.
func (r *Recorder) Bytes() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stored + r.held()
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return strconv.FormatInt(n>>30, 10) + " GiB"
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
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
