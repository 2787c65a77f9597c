package api

import (
	"context"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/auth"
)

// auditEntry collects what the audit trail records about one request while
// it runs: the auth middleware adds the operator, a handler may name the
// subject (login does), writeError adds the error code.
type auditEntry struct {
	Username string
	Role     string
	Target   string
	Outcome  string
	// APITokenID names the API token the request used (0: none).
	APITokenID int64
}

type auditKey struct{}

func auditFrom(r *http.Request) *auditEntry {
	e, _ := r.Context().Value(auditKey{}).(*auditEntry)
	return e
}

// audit records every state-changing request once it is answered, and
// every request made with an API token, reads included: automation acts
// unattended, so each of its uses is attributed to the operator and the
// token. It never records bodies: they may carry passwords and tokens.
func (s *Server) audit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if safeMethod(r.Method) && !bearsAPIToken(r) {
			next.ServeHTTP(w, r)
			return
		}
		entry := &auditEntry{Target: urlParams(r)}
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		next.ServeHTTP(ww, r.WithContext(context.WithValue(r.Context(), auditKey{}, entry)))

		outcome := entry.Outcome
		if outcome == "" {
			outcome = "success"
			if ww.Status() >= 400 {
				outcome = http.StatusText(ww.Status())
			}
		}
		var tokenID *int64
		if entry.APITokenID != 0 {
			tokenID = &entry.APITokenID
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 5*time.Second)
		defer cancel()
		err := s.Store.AuditInsert(ctx, db.AuditInsertParams{
			Username: entry.Username, Role: entry.Role, Action: r.Method + " " + chi.RouteContext(r.Context()).RoutePattern(),
			Target: entry.Target, ClientAddr: s.clientMeta(r).Addr, Status: int32(ww.Status()), Outcome: outcome,
			RequestID: middleware.GetReqID(r.Context()), ApiTokenID: tokenID,
		})
		if err != nil {
			s.reqLog(r).Error("audit trail: record request", "err", err)
		}
	})
}

// bearsAPIToken reports a request presenting an API token (by its prefix,
// before any lookup: a refused token's attempts are recorded too).
func bearsAPIToken(r *http.Request) bool {
	return strings.HasPrefix(r.Header.Get("Authorization"), "Bearer "+auth.APITokenPrefix)
}

// urlParams renders the route's path parameters, e.g. "username=alice".
func urlParams(r *http.Request) string {
	rc := chi.RouteContext(r.Context())
	if rc == nil {
		return ""
	}
	parts := make([]string, 0, len(rc.URLParams.Keys))
	for i, k := range rc.URLParams.Keys {
		if k != "*" {
			parts = append(parts, k+"="+rc.URLParams.Values[i])
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

type auditEntryJSON struct {
	ID         int64     `json:"id"`
	At         time.Time `json:"at"`
	Username   string    `json:"username"`
	Role       string    `json:"role"`
	Action     string    `json:"action"`
	Target     string    `json:"target"`
	ClientAddr string    `json:"client_addr"`
	Status     int32     `json:"status"`
	Outcome    string    `json:"outcome"`
	RequestID  string    `json:"request_id"`
	// APITokenID is the API token the request used (null: a session).
	APITokenID *int64 `json:"api_token_id"`
}

type auditPage struct {
	Entries      []auditEntryJSON `json:"entries"`
	NextBeforeID *int64           `json:"next_before_id"`
}

func (s *Server) auditList(r *http.Request) (auditPage, error) {
	limit, err := queryInt(r, "limit", 100, 1, 500)
	if err != nil {
		return auditPage{}, err
	}
	before, err := queryInt(r, "before_id", 0, 0, 1<<62)
	if err != nil {
		return auditPage{}, err
	}
	rows, err := s.Store.AuditList(r.Context(), db.AuditListParams{BeforeID: int64(before),
		Username: strings.ToLower(r.URL.Query().Get("username")), MaxRows: int32(limit)})
	if err != nil {
		return auditPage{}, err
	}
	page := auditPage{Entries: make([]auditEntryJSON, len(rows))}
	for i, e := range rows {
		page.Entries[i] = auditEntryJSON{ID: e.ID, At: e.At, Username: e.Username, Role: e.Role, Action: e.Action,
			Target: e.Target, ClientAddr: e.ClientAddr, Status: e.Status, Outcome: e.Outcome, RequestID: e.RequestID,
			APITokenID: e.ApiTokenID}
	}
	if len(rows) == limit {
		next := rows[len(rows)-1].ID
		page.NextBeforeID = &next
	}
	return page, nil
}
