// Package shell is the agent's remote shell (docs/agent.md "Remote
// shell"): on proto.EventShellOpen it dials the session's own WebSocket to
// the Engine and bridges it to the privileged account's login shell in a
// PTY (Linux) or behind pipes (Windows); proto.EventShellClose ends one.
//
// Shells belong to the agent, not to the realtime socket that asked for
// them: the socket may drop and come back while an operator keeps typing,
// so they run under the context given to Register and end with it.
package shells

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/runtime"
)

// Defaults for zero Options fields.
const (
	DefaultMaxShells   = 8
	DefaultIdleTimeout = 15 * time.Minute
	DefaultKillGrace   = 2 * time.Second
)

// Options tune the shells; zero fields take the defaults.
type Options struct {
	// MaxShells caps concurrent shells; one more is refused shell_limit.
	MaxShells int
	// IdleTimeout ends a shell when ShellOpen.IdleTimeoutSeconds is 0.
	IdleTimeout time.Duration
	// KillGrace is how long a shell has between SIGHUP and SIGKILL.
	KillGrace time.Duration
	Logger    *slog.Logger
}

// Shells are the open shell sessions of one agent.
type Shells struct {
	ctx  context.Context
	stop context.CancelFunc
	opts Options
	log  *slog.Logger

	mu       sync.Mutex
	sessions map[string]*session // by session ID, opening ones included
	closed   bool
	wg       sync.WaitGroup // one per session in sessions, taken under mu
}

// Closed answers EventShellClose once the shell is gone.
type Closed struct {
	Closed bool `json:"closed"`
}

// Register adds the shell handlers to h. Shells run under ctx (the
// agent's run context): when it ends or Close is called, every shell is
// killed and its socket closed.
func Register(ctx context.Context, h *runtime.Handlers, opts Options) (*Shells, error) {
	if opts.MaxShells <= 0 {
		opts.MaxShells = DefaultMaxShells
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.KillGrace <= 0 {
		opts.KillGrace = DefaultKillGrace
	}
	ctx, stop := context.WithCancel(ctx)
	s := &Shells{ctx: ctx, stop: stop, opts: opts, log: opts.Logger, sessions: map[string]*session{}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if err := h.Register(proto.EventShellOpen, s.open); err != nil {
		stop()
		return nil, fmt.Errorf("shell: %w", err)
	}
	if err := h.Register(proto.EventShellClose, s.close); err != nil {
		stop()
		return nil, fmt.Errorf("shell: %w", err)
	}
	return s, nil
}

// Wait returns once every shell has ended and its socket is closed.
func (s *Shells) Wait() { s.wg.Wait() }

// Close ends every shell (as when ctx ends) and waits until each is
// reaped and its socket closed. The agent calls it before exiting,
// whatever made its run loop return.
func (s *Shells) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.stop()
	s.wg.Wait()
}

// EndAll ends every open shell for reason (the exit frame carries it to
// the Engine) and returns once each is reaped and its socket closed. The
// agent calls it when an operator stops the remote_shell role: a stopped
// role refuses new shells, and the ones already open must not outlive
// the operator's decision. Shells still opening are ended once open.
func (s *Shells) EndAll(ctx context.Context, reason string) {
	s.mu.Lock()
	open := make([]*session, 0, len(s.sessions))
	for _, sess := range s.sessions {
		open = append(open, sess)
	}
	s.mu.Unlock()
	for _, sess := range open {
		if _, err := sess.awaitOpened(ctx); err != nil {
			continue // never opened: nothing runs
		}
		sess.endWith(reason)
	}
	for _, sess := range open {
		select {
		case <-sess.done:
		case <-sess.opened:
			if sess.openErr != nil {
				continue
			}
			select {
			case <-sess.done:
			case <-ctx.Done():
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

func opError(code, format string, args ...any) error {
	return &proto.Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// open serves EventShellOpen. The slot is taken before the dial so that
// concurrent opens cannot overshoot the limit.
func (s *Shells) open(ctx context.Context, call runtime.Caller, payload json.RawMessage) (any, error) {
	req, err := parseOpen(payload)
	if err != nil {
		return nil, err
	}
	if !supported {
		return nil, opError(proto.CodeOpUnsupported, "remote shells are not supported on this platform")
	}
	dialer, ok := call.(runtime.WebSocketDialer)
	if !ok {
		return nil, errors.New("shell: this agent's caller cannot dial WebSockets")
	}

	s.mu.Lock()
	if prev := s.sessions[req.SessionID]; prev != nil {
		// A redelivered open (the realtime socket moved): answer what the
		// first delivery got instead of starting a second shell.
		s.mu.Unlock()
		return prev.awaitOpened(ctx)
	}
	if s.closed || s.ctx.Err() != nil {
		s.mu.Unlock()
		return nil, opError(proto.CodeOpFailed, "the agent is shutting down")
	}
	if len(s.sessions) >= s.opts.MaxShells {
		s.mu.Unlock()
		return nil, opError(proto.CodeOpShellLimit, "this agent already runs %d shells", s.opts.MaxShells)
	}
	sess := newSession(req, s.log)
	s.sessions[req.SessionID] = sess
	s.wg.Add(1)
	s.mu.Unlock()

	result, err := s.start(ctx, dialer, sess, req)
	sess.setOpened(result, err)
	if err != nil {
		s.forget(sess)
		s.wg.Done()
		return nil, err
	}
	return result, nil
}

// start dials the session socket and starts the shell; on success the
// session runs on its own until it ends.
func (s *Shells) start(ctx context.Context, dialer runtime.WebSocketDialer, sess *session, req proto.ShellOpen) (proto.ShellOpened, error) {
	conn, err := dialer.DialWebSocket(ctx, req.URL, http.Header{proto.HeaderShellToken: {req.Token}})
	if err != nil {
		s.log.Warn("shell socket dial failed", "session", req.SessionID, "err", err)
		return proto.ShellOpened{}, opError(proto.CodeOpFailed, "could not open the shell socket: %v", err)
	}
	term, err := startTerminal(req.Cols, req.Rows)
	if err != nil {
		_ = conn.Close(websocket.StatusInternalError, "the shell did not start")
		s.log.Warn("shell did not start", "session", req.SessionID, "err", err)
		return proto.ShellOpened{}, opError(proto.CodeOpFailed, "could not start the shell: %v", err)
	}
	idle := time.Duration(req.IdleTimeoutSeconds) * time.Second
	if idle == 0 {
		idle = s.opts.IdleTimeout
	}
	s.log.Info("shell opened", "session", req.SessionID, "shell", term.Shell(), "pid", term.PID())
	go func() {
		// Forgotten before done: whoever waits on done may open the next
		// shell in the freed slot.
		defer s.wg.Done()
		defer close(sess.done)
		defer s.forget(sess)
		sess.run(s.ctx, conn, term, idle, s.opts.KillGrace)
	}()
	return proto.ShellOpened{Opened: true, Shell: term.Shell(), PID: term.PID()}, nil
}

func (s *Shells) forget(sess *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sessions[sess.id] == sess {
		delete(s.sessions, sess.id)
	}
}

// close serves EventShellClose: it answers once the shell is reaped.
func (s *Shells) close(ctx context.Context, _ runtime.Caller, payload json.RawMessage) (any, error) {
	var req proto.ShellClose
	if err := json.Unmarshal(payload, &req); err != nil || req.SessionID == "" {
		return nil, opError(proto.CodeOpInvalid, "a shell close needs a session_id")
	}
	s.mu.Lock()
	sess := s.sessions[req.SessionID]
	s.mu.Unlock()
	if sess == nil {
		return nil, opError(proto.CodeOpNotFound, "no shell session %q on this agent", req.SessionID)
	}
	if _, err := sess.awaitOpened(ctx); err != nil {
		return nil, opError(proto.CodeOpNotFound, "shell session %q never opened", req.SessionID)
	}
	sess.requestClose()
	select {
	case <-sess.done:
		return Closed{Closed: true}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// maxTermSize bounds cols and rows: larger is a bug, not a screen.
const maxTermSize = 1000

// parseOpen validates ShellOpen; zero cols or rows mean 80x24.
func parseOpen(payload json.RawMessage) (proto.ShellOpen, error) {
	var req proto.ShellOpen
	if err := json.Unmarshal(payload, &req); err != nil {
		return req, opError(proto.CodeOpInvalid, "the shell open payload is not valid JSON: %v", err)
	}
	bad := func(format string, args ...any) (proto.ShellOpen, error) {
		return req, opError(proto.CodeOpInvalid, format, args...)
	}
	switch {
	case req.SessionID == "" || len(req.SessionID) > 128:
		return bad("session_id must be 1 to 128 characters")
	case req.Token == "":
		return bad("token is required")
	case req.Cols < 0 || req.Rows < 0 || req.Cols > maxTermSize || req.Rows > maxTermSize:
		return bad("cols and rows must be between 0 and %d", maxTermSize)
	case req.IdleTimeoutSeconds < 0:
		return bad("idle_timeout_seconds must not be negative")
	}
	u, err := url.Parse(req.URL)
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
		return bad("url must be an absolute ws:// or wss:// address")
	}
	// The socket is the session's own: catching a URL for another session
	// here beats bridging a shell to the wrong operator.
	if !strings.HasSuffix(u.EscapedPath(), proto.PathShellSocket+"/"+url.PathEscape(req.SessionID)) {
		return bad("url must end in %s/<session_id>", proto.PathShellSocket)
	}
	if req.Cols == 0 {
		req.Cols = 80
	}
	if req.Rows == 0 {
		req.Rows = 24
	}
	return req, nil
}
