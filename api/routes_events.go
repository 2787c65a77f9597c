package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/auth"
	"github.com/cairn-rmm/cairn/internal/events"
	"github.com/cairn-rmm/cairn/internal/notify"
)

// TypeNotification is the toast event (SPEC "Operator event stream").
const TypeNotification = "service_notification"

// defaultEventKeepAlive is how often a quiet stream sends a comment, and
// how often every stream re-checks its session.
const defaultEventKeepAlive = 15 * time.Second

func (s *Server) eventRoutes() []Route {
	return []Route{
		{"GET", "/api/realtime/events", AuthToken, raw(s.eventStream).Stream(http.StatusOK, "text/event-stream").Errors(events.ECodeTooManyStreams), "Stream realtime events"},
		{"POST", "/api/notifications/notify", AuthToken, jsonAction(s, http.StatusOK, false, s.notify), "Send a notification"},
	}
}

func (s *Server) notify(r *http.Request, in notify.Input) (notify.Toast, error) {
	p := principal(r.Context())
	toast, err := notify.Build(in, p.Username, p.Role, s.Now())
	if err != nil {
		return notify.Toast{}, err
	}
	data, err := json.Marshal(toast)
	if err != nil {
		return notify.Toast{}, err
	}
	e := events.Event{ID: toast.ID, Type: TypeNotification, Data: data}
	if toast.Username != nil {
		e.Username = *toast.Username
	}
	if err := s.Bus.Publish(r.Context(), e); errors.Is(err, events.ErrTooLarge) {
		return notify.Toast{}, cairn.Invalid("message", "is too long to deliver; shorten it")
	} else if err != nil {
		return notify.Toast{}, err
	}
	return toast, nil
}

// eventStream is the operator's server-sent event stream. Each open stream
// is one live operator session for presence. On each keep-alive it
// re-checks its session: it closes when the session ended (logout, expiry,
// MFA reset, ...) or the operator's role or sites changed, after a
// stream_closed event naming why; the browser reconnects, under the new
// scope or into a 401.
func (s *Server) eventStream(w http.ResponseWriter, r *http.Request) {
	p := principal(r.Context())
	rc := http.NewResponseController(w)
	// The stream outlives the server's write timeout.
	_ = rc.SetWriteDeadline(time.Time{})

	scope := p.SiteScope()
	sub, cancel := s.Bus.Subscribe(func(e events.Event) bool {
		return (e.Username == "" || e.Username == p.Username) && (e.SiteID == 0 || scope.Allows(e.SiteID))
	})
	defer cancel()
	streamID, err := s.Presence.Join(r.Context(), p.UserID, p.Username)
	if err != nil {
		writeError(w, r, s.Log, err)
		return
	}
	defer func() {
		ctx, done := context.WithTimeout(context.WithoutCancel(r.Context()), 5*time.Second)
		defer done()
		s.Presence.Leave(ctx, streamID)
	}()
	defer s.Metrics.StreamOpened()()

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	ready, _ := json.Marshal(map[string]string{"stream_id": streamID})
	if writeEvent(w, streamID, "ready", ready) != nil || rc.Flush() != nil {
		return
	}
	every := s.EventKeepAlive
	if every <= 0 {
		every = defaultEventKeepAlive
	}
	keepAlive := time.NewTicker(every)
	defer keepAlive.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case e, ok := <-sub:
			if !ok {
				return
			}
			if writeEvent(w, e.ID, e.Type, e.Data) != nil || rc.Flush() != nil {
				return
			}
		case <-keepAlive.C:
			if reason := s.streamEnds(r.Context(), p); reason != "" {
				data, _ := json.Marshal(map[string]string{"reason": reason})
				_ = writeEvent(w, streamID, "stream_closed", data)
				_ = rc.Flush()
				return
			}
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil || rc.Flush() != nil {
				return
			}
		}
	}
}

// streamEnds says why a stream of p must close now ("" : it goes on).
func (s *Server) streamEnds(ctx context.Context, p *auth.Principal) string {
	now, err := s.Auth.Recheck(ctx, p)
	switch {
	case cairn.IsCode(err, cairn.ECodeUnauthorized):
		return "session_ended"
	case err != nil:
		// A database hiccup is not the session's end; the next
		// keep-alive asks again.
		s.ctxLog(ctx).Warn("event stream: re-check session", "err", err)
		return ""
	case !p.SameScope(now):
		return "scope_changed"
	}
	return ""
}

func writeEvent(w http.ResponseWriter, id, typ string, data []byte) error {
	// data is compact JSON: it never contains a newline.
	_, err := fmt.Fprintf(w, "id: %s\nevent: %s\ndata: %s\n\n", id, typ, data)
	return err
}
