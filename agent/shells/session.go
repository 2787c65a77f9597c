package shells

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/cairn-rmm/cairn/agent/proto"
)

const (
	// bufSize is one read from the terminal or the socket: one buffer per
	// direction per session, reused for every frame.
	bufSize = 32 << 10
	// maxFrame bounds one incoming frame (a large paste). Frames are
	// streamed, never held whole, so this costs no memory.
	maxFrame = 1 << 20
	// maxControl bounds a text (control) frame, which is read whole.
	maxControl = 4 << 10
	// writeTimeout bounds one socket write: a stuck Engine ends the
	// session instead of blocking the shell's output forever.
	writeTimeout = 10 * time.Second
	// drainWait is how long output may keep arriving after the shell
	// exited, for a background job still holding the terminal.
	drainWait = time.Second
)

// session is one shell and its socket.
type session struct {
	id  string
	log *slog.Logger

	opened    chan struct{} // closed once the open was answered
	result    proto.ShellOpened
	openErr   error
	closeReq  chan struct{}
	closeOnce sync.Once
	// endReason is why the agent itself ended the shell (endWith), sent
	// in the exit frame; "" for a close the Engine asked for.
	endReason string
	done      chan struct{} // closed (by Shells) once run returned and the session is forgotten

	lastTraffic atomic.Int64 // unix nanoseconds
}

func newSession(req proto.ShellOpen, log *slog.Logger) *session {
	return &session{id: req.SessionID, log: log, opened: make(chan struct{}), closeReq: make(chan struct{}), done: make(chan struct{})}
}

func (s *session) setOpened(r proto.ShellOpened, err error) {
	s.result, s.openErr = r, err
	close(s.opened)
}

func (s *session) awaitOpened(ctx context.Context) (proto.ShellOpened, error) {
	select {
	case <-s.opened:
		return s.result, s.openErr
	case <-ctx.Done():
		return proto.ShellOpened{}, ctx.Err()
	}
}

func (s *session) requestClose() { s.closeOnce.Do(func() { close(s.closeReq) }) }

// endWith asks the session to end for reason, which its exit frame
// carries to the Engine.
func (s *session) endWith(reason string) {
	s.closeOnce.Do(func() { s.endReason = reason; close(s.closeReq) })
}

func (s *session) touch() { s.lastTraffic.Store(time.Now().UnixNano()) }

// ending is why a session ends: whether the socket can still carry the
// exit frame, and the close status to send.
type ending struct {
	reason string
	socket bool
	status websocket.StatusCode
}

// run bridges conn and term until the shell exits, the Engine closes the
// socket or asks to close, the session idles out, or ctx (the agent)
// ends. Whatever ends it, the shell is reaped, the exit is reported while
// the socket lasts, and every goroutine of the session has returned.
func (s *session) run(ctx context.Context, conn *websocket.Conn, term terminal, idle, grace time.Duration) {
	defer conn.CloseNow()
	conn.SetReadLimit(maxFrame)
	s.touch()

	// The socket's own operations never take ctx: coder/websocket closes
	// the connection when a read's or write's context ends, and the
	// shutdown path still wants to send the exit frame.
	outDone := make(chan struct{})
	go func() {
		defer close(outDone)
		s.pumpOut(conn, term)
	}()
	inDone := make(chan error, 1)
	go func() { inDone <- s.pumpIn(conn, term) }()

	var end ending
	told := "" // why the agent itself ended the shell, for the exit frame
	timer := time.NewTimer(idle)
	defer timer.Stop()
wait:
	for {
		select {
		case <-term.Done():
			end = ending{"shell exited", true, websocket.StatusNormalClosure}
			// Let the last output through before the exit frame.
			drain := time.NewTimer(drainWait)
			select {
			case <-outDone:
			case <-drain.C:
			}
			drain.Stop()
			break wait
		case err := <-inDone:
			inDone <- err // for the wait below
			end = ending{"socket closed: " + err.Error(), false, 0}
			break wait
		case <-s.closeReq:
			end = ending{"closed by the Engine", true, websocket.StatusNormalClosure}
			if s.endReason != "" {
				end.reason, told = s.endReason, s.endReason
			}
			break wait
		case <-ctx.Done():
			end = ending{"agent shutting down", true, websocket.StatusGoingAway}
			break wait
		case <-timer.C:
			since := time.Since(time.Unix(0, s.lastTraffic.Load()))
			if since < idle {
				timer.Reset(idle - since)
				continue
			}
			end = ending{"idle timeout", true, websocket.StatusNormalClosure}
			break wait
		}
	}

	term.Kill(grace) // no-op for the shell when it already exited; reaps it
	_ = term.Close() // ends pumpOut's pending read
	<-outDone
	code := term.ExitCode()
	if end.socket {
		if err := s.sendExit(conn, code, told); err != nil {
			s.log.Debug("could not send the shell's exit", "session", s.id, "err", err)
		}
		_ = conn.Close(end.status, end.reason)
	} else {
		_ = conn.CloseNow()
	}
	<-inDone
	s.log.Info("shell closed", "session", s.id, "reason", end.reason, "code", code)
}

func (s *session) sendExit(conn *websocket.Conn, code int, reason string) error {
	b, err := json.Marshal(proto.ShellControl{Type: proto.ShellExit, Code: code, Reason: reason})
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	return conn.Write(wctx, websocket.MessageText, b)
}

// pumpOut copies terminal output to binary frames until the terminal or
// the socket ends.
func (s *session) pumpOut(conn *websocket.Conn, term terminal) {
	buf := make([]byte, bufSize)
	for {
		n, err := term.Read(buf)
		if n > 0 {
			s.touch()
			wctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
			werr := conn.Write(wctx, websocket.MessageBinary, buf[:n])
			cancel()
			if werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// pumpIn copies binary frames to the terminal and applies control
// frames, until the socket ends (its error is returned).
func (s *session) pumpIn(conn *websocket.Conn, term terminal) error {
	buf := make([]byte, bufSize)
	for {
		typ, r, err := conn.Reader(context.Background())
		if err != nil {
			return err
		}
		s.touch()
		if typ == websocket.MessageText {
			s.control(r, buf, term)
			continue
		}
		// Copied by hand: io.Copy into an *os.File allocates a buffer per
		// call, which would be one per keystroke.
		for {
			n, rerr := r.Read(buf)
			if n > 0 {
				if _, werr := term.Write(buf[:n]); werr != nil {
					// The shell is gone and the exit path reports it; the
					// frame is still read to its end for the next one.
					_, _ = io.Copy(io.Discard, r)
					break
				}
			}
			if rerr != nil {
				if !errors.Is(rerr, io.EOF) {
					return rerr
				}
				break
			}
		}
	}
}

// control applies one text frame; malformed ones are ignored, as the
// terminal must not die of a console bug.
func (s *session) control(r io.Reader, buf []byte, term terminal) {
	n, err := io.ReadFull(r, buf[:maxControl+1])
	switch {
	case err == nil: // more than maxControl bytes
		s.log.Debug("ignoring an oversized shell control frame", "session", s.id)
		_, _ = io.Copy(io.Discard, r) // the next frame needs this one read to its end
		return
	case !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF):
		return // the socket broke; the next read reports it
	}
	var c proto.ShellControl
	if err := json.Unmarshal(buf[:n], &c); err != nil {
		s.log.Debug("ignoring a shell control frame that is not JSON", "session", s.id, "err", err)
		return
	}
	if c.Type != proto.ShellResize {
		return
	}
	if c.Cols <= 0 || c.Rows <= 0 || c.Cols > maxTermSize || c.Rows > maxTermSize {
		s.log.Debug("ignoring a resize out of range", "session", s.id, "cols", c.Cols, "rows", c.Rows)
		return
	}
	if err := term.Resize(c.Cols, c.Rows); err != nil {
		s.log.Debug("resize failed", "session", s.id, "err", err)
	}
}
