package fakeengine

import (
	"net/http"
	"strings"

	"github.com/coder/websocket"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// ShellConn is an accepted shell socket: the Engine's end of a session,
// handed to the test as is.
type ShellConn struct {
	SessionID string
	GUID      string
	WS        *websocket.Conn
}

// ShellSession registers a session the fake will accept one shell socket
// for, and returns the URL and token the Engine would put in
// proto.ShellOpen.
func (e *Engine) ShellSession(id string) (url, token string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	token = "shell-" + random()
	e.shellTokens[id] = token
	return "ws" + strings.TrimPrefix(e.URL, "http") + proto.PathShellSocket + "/" + id, token
}

// ShellConns delivers every accepted shell socket.
func (e *Engine) ShellConns() <-chan *ShellConn { return e.shellConns }

// shellSocket checks Device auth, as every agent route, plus the
// session's single-use token.
func (e *Engine) shellSocket(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	d := e.device(w, r)
	if d == nil {
		e.mu.Unlock()
		return
	}
	id := r.PathValue("session")
	want, ok := e.shellTokens[id]
	if !ok || r.Header.Get(proto.HeaderShellToken) != want {
		e.event("shell_refused")
		e.mu.Unlock()
		writeErr(w, http.StatusForbidden, "shell_token_invalid", "unknown session or wrong token")
		return
	}
	delete(e.shellTokens, id)
	e.event("shell")
	e.mu.Unlock()

	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	// The hijacked connection outlives this handler; the test owns it.
	select {
	case e.shellConns <- &ShellConn{SessionID: id, GUID: d.GUID, WS: ws}:
	default:
		_ = ws.Close(websocket.StatusTryAgainLater, "nobody is watching shell sockets")
	}
}
