package vnc

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/cairn-rmm/cairn"
)

// Session events a gateway reports of a live session (SPEC "Remote
// desktop rules" 8; POST /api/internal/vnc/session-event). The Engine
// turns each into the session's row or its RemoteDesktop workflow's
// signal, whichever gateway saw it.
const (
	// EventAttached: the browser's socket reached the gateway.
	EventAttached = "attached"
	// EventFirstFrame: the agent's first FramebufferUpdate passed (At).
	EventFirstFrame = "first_frame"
	// EventDetached: the browser or the agent left; the workflow keeps the
	// server for the reconnect window before vnc_stop.
	EventDetached = "detached"
	// EventClosed: the gateway ended the session for good (Reason), e.g.
	// it is shutting down.
	EventClosed = "closed"
	// EventError: the attachment failed (Code, Message); the session ends
	// failed.
	EventError = "error"
)

// Event is one session event.
type Event struct {
	SessionID string `json:"session_id"`
	// Event is attached, first_frame, detached, closed or error.
	Event string `json:"event"`
	// At is when it happened (default: when the Engine receives it).
	At *time.Time `json:"at,omitempty"`
	// Reason is a closed event's (default: stopped).
	Reason string `json:"reason,omitempty"`
	// Code and Message are an error event's: a Cairn error code and its
	// text (never a credential).
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// EventSink receives a gateway's session events: in-process in the serve
// replica that runs the gateway (api), or signed HTTP calls to the
// Engine from a gateway process (internal/gateway).
type EventSink interface {
	SessionEvent(ctx context.Context, e Event) error
}

// Attach runs one browser attachment of session: it reports attached,
// relays (reporting the first frame), and reports how it ended: detached
// after a relay, or error when the session could not be opened. It
// returns Serve's reason and error; a sink's failure does not end the
// relay (the sink logs it).
func (g *Gateway) Attach(ctx context.Context, session string, browser net.Conn, sink EventSink) (string, error) {
	bg := context.WithoutCancel(ctx)
	_ = sink.SessionEvent(bg, Event{SessionID: session, Event: EventAttached})
	first := g.FirstFrame
	g.FirstFrame = func(at time.Time) {
		if first != nil {
			first(at)
		}
		_ = sink.SessionEvent(bg, Event{SessionID: session, Event: EventFirstFrame, At: &at})
	}
	reason, err := g.Serve(ctx, browser)
	if err != nil && ctx.Err() != nil {
		// The relay was ended from this side (a handoff, or the browser's
		// request gone) mid-handshake: a leave, not a failure of the
		// session.
		reason, err = "relay_ended", nil
	}
	if err != nil {
		ReportError(bg, sink, session, err)
		return "", err
	}
	_ = sink.SessionEvent(bg, Event{SessionID: session, Event: EventDetached, Reason: reason})
	return reason, nil
}

// ReportError reports err as session's error event.
func ReportError(ctx context.Context, sink EventSink, session string, err error) {
	code, msg := cairn.ErrorCode(err), "the remote desktop could not be opened"
	var ce *cairn.Error
	if errors.As(err, &ce) {
		msg = ce.Message
	}
	_ = sink.SessionEvent(ctx, Event{SessionID: session, Event: EventError, Code: code, Message: msg})
}

// Validate checks an event's fields (the Internal route's input).
func (e Event) Validate() error {
	var v cairn.Validation
	switch e.Event {
	case EventAttached, EventFirstFrame, EventDetached:
	case EventClosed:
		if len(e.Reason) > 64 {
			v.Add("reason", "must be at most 64 characters")
		}
	case EventError:
		if e.Code == "" || len(e.Code) > 64 {
			v.Add("code", "must be an error code of at most 64 characters")
		}
		if len(e.Message) > 2000 {
			v.Add("message", "must be at most 2000 characters")
		}
	default:
		v.Add("event", "must be attached, first_frame, detached, closed or error")
	}
	return v.Err()
}
