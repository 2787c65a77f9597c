package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/logs"
)

// logRoutes are GET /api/server/logs and /api/server/logs/<...> (SPEC
// "Server administration"): the processes' JSON log files in the log
// directory, read with filters and a bounded scan, or followed live.
func (s *serverAdminAPI) logRoutes() []Route {
	filters := []QueryParam{
		queryString("level", "lowest level shown: debug, info, warn or error"),
		queryString("since", "only entries at or after this time (RFC 3339)"),
		queryString("until", "only entries at or before this time (RFC 3339)"),
		queryString("q", "only entries whose redacted text contains this, case-insensitively"),
	}
	return []Route{
		{"GET", "/api/server/logs", AuthAdmin, getAction(s.Server, s.logSources), "List the log sources"},
		{"GET", "/api/server/logs/{source}", AuthAdmin, getAction(s.Server, s.logRead).Errors(cairn.ECodeNotFound).
			Query(append(filters, queryInteger("limit", fmt.Sprintf("newest matching entries answered, 1 to %d (default %d)", logs.MaxLimit, logs.DefaultLimit)))...), "Read a log source"},
		{"GET", "/api/server/logs/{source}/stream", AuthAdmin, raw(s.logStream).Stream(http.StatusOK, "text/event-stream").Errors(cairn.ECodeNotFound).
			Query(filters[0], filters[3]), "Follow a log source live"},
	}
}

type logSourcesJSON struct {
	// Enabled is false when the Engine writes no log files
	// (CAIRN_LOG_DIR=off): only its stderr has its lines.
	Enabled bool          `json:"enabled"`
	Sources []logs.Source `json:"sources"`
	// MaxScanBytes bounds what one read scans; MaxLimit the entries it
	// answers.
	MaxScanBytes int `json:"max_scan_bytes"`
	MaxLimit     int `json:"max_limit"`
}

func (s *serverAdminAPI) logSources(*http.Request) (logSourcesJSON, error) {
	out := logSourcesJSON{Enabled: s.LogDir != "", Sources: []logs.Source{}, MaxScanBytes: logs.MaxScanBytes, MaxLimit: logs.MaxLimit}
	if s.LogDir == "" {
		return out, nil
	}
	src, err := logs.Sources(s.LogDir)
	if err != nil {
		return logSourcesJSON{}, err
	}
	out.Sources = src
	return out, nil
}

// logQuery reads the filters of a logs route.
func logQuery(r *http.Request) (logs.Query, error) {
	var q logs.Query
	var v cairn.Validation
	qs := r.URL.Query()
	if lv := qs.Get("level"); lv != "" {
		if err := q.MinLevel.UnmarshalText([]byte(lv)); err != nil || !slices.Contains([]string{"debug", "info", "warn", "error"}, strings.ToLower(lv)) {
			v.Add("level", "must be debug, info, warn or error")
		}
		q.HasLevel = true
	}
	for _, f := range []struct {
		name string
		to   *time.Time
	}{{"since", &q.Since}, {"until", &q.Until}} {
		if raw := qs.Get(f.name); raw != "" {
			t, err := time.Parse(time.RFC3339Nano, raw)
			if err != nil {
				v.Add(f.name, "must be an RFC 3339 time")
			}
			*f.to = t
		}
	}
	q.Text = qs.Get("q")
	if len(q.Text) > 200 {
		v.Add("q", "must be at most 200 characters")
	}
	n, err := queryInt(r, "limit", logs.DefaultLimit, 1, logs.MaxLimit)
	if err != nil {
		v.Add("limit", fmt.Sprintf("must be an integer from 1 to %d", logs.MaxLimit))
	}
	q.Limit = n
	return q, v.Err()
}

func (s *serverAdminAPI) logSource(r *http.Request) (string, error) {
	source := chi.URLParam(r, "source")
	if !logs.ValidSource(source) {
		return "", cairn.Invalid("source", "must name a log source of GET /api/server/logs")
	}
	if s.LogDir == "" {
		return "", cairn.Errorf(cairn.ECodeNotFound, "the Engine writes no log files (CAIRN_LOG_DIR=off)")
	}
	return source, nil
}

func (s *serverAdminAPI) logRead(r *http.Request) (logs.Result, error) {
	source, err := s.logSource(r)
	if err != nil {
		return logs.Result{}, err
	}
	q, err := logQuery(r)
	if err != nil {
		return logs.Result{}, err
	}
	res, err := logs.Read(s.LogDir, source, q)
	if errors.Is(err, logs.ErrNoSource) {
		return logs.Result{}, cairn.Errorf(cairn.ECodeNotFound, "no log source %q", source)
	}
	return res, err
}

// logStream follows a source over server-sent events: an "entry" event
// per new matching line, a keep-alive comment while quiet, and the
// stream closes when the operator's session ends.
func (s *serverAdminAPI) logStream(w http.ResponseWriter, r *http.Request) {
	source, err := s.logSource(r)
	if err == nil {
		var q logs.Query
		q, err = logQuery(r)
		if err == nil {
			s.followLog(w, r, source, q)
			return
		}
	}
	writeError(w, r, s.Log, err)
}

func (s *serverAdminAPI) followLog(w http.ResponseWriter, r *http.Request, source string, q logs.Query) {
	if _, err := logs.Sources(s.LogDir); err != nil {
		writeError(w, r, s.Log, err)
		return
	}
	p := principal(r.Context())
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{})
	every := s.EventKeepAlive
	if every <= 0 {
		every = defaultEventKeepAlive
	}
	started := false
	start := func() error {
		if started {
			return nil
		}
		started = true
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-store")
		h.Set("X-Accel-Buffering", "no")
		w.WriteHeader(http.StatusOK)
		if writeLogEvent(w, "ready", []byte(`{"source":`+jsonString(source)+`}`)) != nil {
			return errStreamGone
		}
		return rc.Flush()
	}
	last := time.Now()
	err := logs.Follow(r.Context(), s.LogDir, source, q, func(e logs.Entry) error {
		if err := start(); err != nil {
			return err
		}
		data, _ := json.Marshal(e)
		last = time.Now()
		if writeLogEvent(w, "entry", data) != nil {
			return errStreamGone
		}
		return rc.Flush()
	}, func() error {
		if err := start(); err != nil {
			return err
		}
		if time.Since(last) < every {
			return nil
		}
		last = time.Now()
		if reason := s.streamEnds(r.Context(), p); reason != "" {
			data, _ := json.Marshal(map[string]string{"reason": reason})
			_ = writeLogEvent(w, "stream_closed", data)
			_ = rc.Flush()
			return errStreamGone
		}
		if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
			return errStreamGone
		}
		return rc.Flush()
	})
	switch {
	case errors.Is(err, logs.ErrNoSource) && !started:
		writeError(w, r, s.Log, cairn.Errorf(cairn.ECodeNotFound, "no log source %q", source))
	case err != nil && !errors.Is(err, errStreamGone) && !started:
		writeError(w, r, s.Log, err)
	case err != nil && !errors.Is(err, errStreamGone):
		s.ctxLog(r.Context()).Warn("log stream", "source", source, "err", err, slog.String("route", "logs"))
	}
}

var errStreamGone = errors.New("api: the stream's client is gone")

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// writeLogEvent writes an event without an ID: a log stream does not
// resume from one.
func writeLogEvent(w http.ResponseWriter, typ string, data []byte) error {
	_, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, data)
	return err
}
