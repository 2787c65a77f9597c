package shells

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/coder/websocket"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// The browser's socket and the agent's meet in the process that holds the
// browser's (docs/architecture.md "Remote shell"): the Registry is that
// process's table of sessions whose browser socket it holds.

const (
	// maxFrame bounds one frame either way (the agent's own bound).
	maxFrame = 1 << 20
	// writeTimeout bounds one write: a stuck peer ends the session
	// instead of blocking the other side forever.
	writeTimeout = 10 * time.Second
)

// Registry is this process's live sessions, by ID.
type Registry struct {
	mu       sync.Mutex
	sessions map[string]*Live
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{sessions: map[string]*Live{}} }

// Live is a session whose browser socket this process holds: it waits for
// the agent's socket, then runs the bridge until either side ends.
type Live struct {
	ID        string
	reg       *Registry
	agent     chan *websocket.Conn
	delivered bool      // under reg.mu
	agentAuth AgentAuth // under reg.mu, once delivered
	closing   string    // under reg.mu: why it is being closed, once asked
	end       chan string
	endOnce   sync.Once
	done      chan struct{}
	doneOnce  sync.Once
}

// Add registers a session about to wait for its agent.
func (r *Registry) Add(id string) *Live {
	l := &Live{ID: id, reg: r, agent: make(chan *websocket.Conn, 1), end: make(chan string, 1), done: make(chan struct{})}
	r.mu.Lock()
	r.sessions[id] = l
	r.mu.Unlock()
	return l
}

// Waiting reports whether session id waits here for its agent's socket.
func (r *Registry) Waiting(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.sessions[id]
	return l != nil && !l.delivered
}

// AgentAuth is what authenticated the agent's socket: the device's token
// version and when the access token it was opened with expires.
type AgentAuth struct {
	TokenVersion int32
	ExpiresAt    time.Time
}

// Deliver hands the agent's socket, authenticated by auth, to the waiting
// session; false when no session waits for one here (gone, or it has its
// agent already).
func (r *Registry) Deliver(id string, c *websocket.Conn, auth AgentAuth) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.sessions[id]
	if l == nil || l.delivered {
		return false
	}
	l.delivered = true
	l.agentAuth = auth
	l.agent <- c // buffered: never blocks
	return true
}

// MarkClosing records why the live session id is about to be closed,
// before the agent is asked to end its shell: the agent's exit may
// arrive before End is called, and the session must still say who
// closed it.
func (r *Registry) MarkClosing(id, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l := r.sessions[id]; l != nil && l.closing == "" {
		l.closing = reason
	}
}

// End asks the live session id to close with reason: at once, or after
// grace unless it ends by itself first (the agent was asked to end the
// shell and may still report its exit). It returns a channel closed once
// the session is released; ok is false when it does not live here.
func (r *Registry) End(id, reason string, grace time.Duration) (done <-chan struct{}, ok bool) {
	r.mu.Lock()
	l := r.sessions[id]
	if l != nil && l.closing == "" {
		l.closing = reason
	}
	r.mu.Unlock()
	if l == nil {
		return nil, false
	}
	stop := func() { l.endOnce.Do(func() { l.end <- reason }) }
	if grace <= 0 {
		stop()
	} else {
		go func() {
			t := time.NewTimer(grace)
			defer t.Stop()
			select {
			case <-t.C:
				stop()
			case <-l.done:
			}
		}()
	}
	return l.done, true
}

// AgentAuth is what authenticated the delivered agent socket.
func (l *Live) AgentAuth() AgentAuth {
	l.reg.mu.Lock()
	defer l.reg.mu.Unlock()
	return l.agentAuth
}

// ClosingReason is the reason End was given ("" when not asked).
func (l *Live) ClosingReason() string {
	l.reg.mu.Lock()
	defer l.reg.mu.Unlock()
	return l.closing
}

// Agent delivers the agent's socket.
func (l *Live) Agent() <-chan *websocket.Conn { return l.agent }

// EndRequested delivers a close request's reason.
func (l *Live) EndRequested() <-chan string { return l.end }

// Release removes the session from the registry. A socket delivered but
// never taken is closed.
func (l *Live) Release() {
	l.doneOnce.Do(func() {
		l.reg.mu.Lock()
		if l.reg.sessions[l.ID] == l {
			delete(l.reg.sessions, l.ID)
		}
		l.reg.mu.Unlock()
		select {
		case c := <-l.agent:
			_ = c.Close(websocket.StatusNormalClosure, "the shell session is over")
		default:
		}
		close(l.done)
	})
}

// Control frames the Engine adds for the browser besides the agent's
// "exit": "error" says why a session could not open, before the close.
const controlError = "error"

// errorFrame is the Engine's "error" control frame.
type errorFrame struct {
	Type    string `json:"type"`
	Error   string `json:"error"`
	Message string `json:"message"`
}

// Refuse tells the browser why its session cannot open and closes its
// socket (1011, the code as the reason): a browser cannot read the HTTP
// answer of a refused WebSocket, so every refusal after the upgrade goes
// this way.
func Refuse(c *websocket.Conn, code, message string) {
	b, _ := json.Marshal(errorFrame{Type: controlError, Error: code, Message: message})
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	_ = c.Write(ctx, websocket.MessageText, b)
	cancel()
	_ = c.Close(websocket.StatusInternalError, closeReason(code))
}

// Result is how a bridge ended.
type Result struct {
	// ExitCode is the shell's, when the agent reported it.
	ExitCode *int
	Reason   string
}

// ending is what ended a bridge and how each side is closed.
type ending struct {
	reason  string
	browser websocket.StatusCode
	agent   websocket.StatusCode
	// notice: the Engine ended the session (not the shell or a peer), so
	// the operator's terminal is told why before the close.
	notice bool
}

// recorderEnding ends a session whose transcript refused an event: the
// operator must not see what is not recorded.
func recorderEnding(rec *Recorder, err error) ending {
	reason := "the session's transcript could not be stored"
	if errors.Is(err, ErrTranscriptFull) {
		reason = rec.LimitMessage()
	}
	return ending{reason, websocket.StatusNormalClosure, websocket.StatusNormalClosure, true}
}

// Notice is the line the operator's terminal shows when the Engine ends a
// session, before the socket closes.
func Notice(reason string) []byte {
	return []byte("\r\n\x1b[1m[Cairn] The session was closed: " + reason + ".\x1b[0m\r\n")
}

// Bridge copies frames between the browser's socket and the agent's until
// either ends, end delivers a close request, ctx ends, or rec refuses a
// frame (the transcript is full or cannot be stored); then both are
// closed, the operator's terminal told why when the Engine ended it.
// Binary frames are terminal bytes both ways, recorded in rec (the
// operator's as input); text frames are proto.ShellControl: a valid
// resize goes to the agent (and the transcript), the agent's exit to the
// browser, anything else is dropped.
func Bridge(ctx context.Context, browser, agent *websocket.Conn, rec *Recorder, end <-chan string) Result {
	browser.SetReadLimit(maxFrame)
	agent.SetReadLimit(maxFrame)
	pumpCtx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var (
		mu   sync.Mutex
		exit *int
	)
	ends := make(chan ending, 2)
	go func() { ends <- pumpBrowser(pumpCtx, browser, agent, rec) }()
	go func() {
		ends <- pumpAgent(pumpCtx, agent, browser, rec, func(code int) {
			mu.Lock()
			exit = &code
			mu.Unlock()
		})
	}()

	pending := 2
	var e ending
	select {
	case e = <-ends:
		pending--
	case reason := <-end:
		e = ending{reason, websocket.StatusNormalClosure, websocket.StatusNormalClosure, true}
	case <-ctx.Done():
		e = ending{"the Engine is shutting down", websocket.StatusGoingAway, websocket.StatusGoingAway, true}
	}
	if e.notice {
		_ = write(context.Background(), browser, websocket.MessageBinary, Notice(e.reason))
	}
	// Each close waits (bounded by the library) for the peer's answer,
	// which the pumps still read; both run at once.
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = browser.Close(e.browser, closeReason(e.reason)) }()
	go func() { defer wg.Done(); _ = agent.Close(e.agent, closeReason(e.reason)) }()
	wg.Wait()
	cancel()
	for ; pending > 0; pending-- {
		<-ends
	}
	mu.Lock()
	defer mu.Unlock()
	return Result{ExitCode: exit, Reason: e.reason}
}

// pumpBrowser copies the operator's keystrokes and resizes to the agent.
func pumpBrowser(ctx context.Context, browser, agent *websocket.Conn, rec *Recorder) ending {
	for {
		typ, data, err := browser.Read(ctx)
		if err != nil {
			return ending{"the operator's socket closed", websocket.StatusNormalClosure, websocket.StatusNormalClosure, false}
		}
		if typ == websocket.MessageText {
			var c proto.ShellControl
			if json.Unmarshal(data, &c) != nil || c.Type != proto.ShellResize ||
				c.Cols < 1 || c.Rows < 1 || c.Cols > MaxTermSize || c.Rows > MaxTermSize {
				continue // a console bug must not end the session
			}
			if err := rec.Resize(ctx, c.Cols, c.Rows); err != nil {
				return recorderEnding(rec, err)
			}
			data, _ = json.Marshal(proto.ShellControl{Type: proto.ShellResize, Cols: c.Cols, Rows: c.Rows})
		} else if err := rec.Input(ctx, data); err != nil {
			return recorderEnding(rec, err)
		}
		if err := write(ctx, agent, typ, data); err != nil {
			return ending{"the agent's socket stopped taking input", websocket.StatusInternalError, websocket.StatusInternalError, false}
		}
	}
}

// pumpAgent copies the shell's output (recorded) and its exit to the
// browser.
//
// An exit the agent caused itself carries its reason (the remote_shell
// role was stopped, proto.ShellReasonRoleStopped): that becomes the
// session's close reason and the operator's terminal is told it.
func pumpAgent(ctx context.Context, agent, browser *websocket.Conn, rec *Recorder, exited func(int)) ending {
	sawExit := false
	told := ""
	for {
		typ, data, err := agent.Read(ctx)
		if err != nil {
			if told != "" {
				return ending{told, websocket.StatusNormalClosure, websocket.StatusNormalClosure, true}
			}
			if sawExit || websocket.CloseStatus(err) == websocket.StatusNormalClosure {
				return ending{"the shell ended", websocket.StatusNormalClosure, websocket.StatusNormalClosure, false}
			}
			return ending{"the agent's socket closed", websocket.StatusInternalError, websocket.StatusNormalClosure, false}
		}
		if typ == websocket.MessageText {
			var c proto.ShellControl
			if json.Unmarshal(data, &c) != nil || c.Type != proto.ShellExit {
				continue
			}
			sawExit = true
			told = closeReason(strings.TrimSpace(strings.Map(func(r rune) rune {
				if unicode.IsControl(r) {
					return -1
				}
				return r
			}, c.Reason)))
			exited(c.Code)
			data, _ = json.Marshal(proto.ShellControl{Type: proto.ShellExit, Code: c.Code})
		} else if err := rec.Output(ctx, data); err != nil {
			return recorderEnding(rec, err)
		}
		if err := write(ctx, browser, typ, data); err != nil {
			return ending{"the operator's socket stopped taking output", websocket.StatusInternalError, websocket.StatusNormalClosure, false}
		}
	}
}

func write(ctx context.Context, c *websocket.Conn, typ websocket.MessageType, data []byte) error {
	wctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	return c.Write(wctx, typ, data)
}

// closeReason fits a close reason into a control frame (123 bytes).
func closeReason(s string) string {
	if len(s) <= 123 {
		return s
	}
	return s[:120] + "..."
}
