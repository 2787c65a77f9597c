package api

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/jsonbody"
)

// maxBody bounds every JSON request body.
const maxBody = 1 << 20

type bodyLimitKey struct{}

// withBodyLimit raises the body limit of one route (agent details posts
// carry whole inventories).
func withBodyLimit(n int64, e Endpoint) Endpoint {
	h := e.serve
	e.serve = func(w http.ResponseWriter, r *http.Request) {
		h(w, r.WithContext(context.WithValue(r.Context(), bodyLimitKey{}, n)))
	}
	return e
}

// decodeJSON reads one JSON object into dst, strictly (jsonbody.Decode),
// within the route's body limit, and checks the limits its type declares
// (`limit` tags, api/limits.go), which the API document states.
func decodeJSON(w http.ResponseWriter, r *http.Request, dst any, allowEmpty bool) error {
	limit := int64(maxBody)
	if n, ok := r.Context().Value(bodyLimitKey{}).(int64); ok {
		limit = n
	}
	if err := jsonbody.Decode(w, r, dst, limit, allowEmpty); err != nil {
		return err
	}
	return checkLimits(dst)
}

// maxPathParam bounds every path parameter (characters, unescaped): no
// hostname, ID, token or name the API takes in a path comes near it. The
// API document states it as each path parameter's maxLength.
const maxPathParam = 1024

// pathParamLimit refuses a path parameter longer than maxPathParam
// (validation_failed naming it) before the handler reads it.
func (s *Server) pathParamLimit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rc := chi.RouteContext(r.Context()); rc != nil {
			for i, name := range rc.URLParams.Keys {
				if i < len(rc.URLParams.Values) && utf8.RuneCountInString(pathParam(r, name)) > maxPathParam {
					writeError(w, r, s.Log, cairn.Invalid(name, fmt.Sprintf("must be at most %d characters", maxPathParam)))
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// queryInt reads an optional integer query parameter within [lo, hi].
func queryInt(r *http.Request, name string, def, lo, hi int) (int, error) {
	raw := r.URL.Query().Get(name)
	if raw == "" {
		return def, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < lo || n > hi {
		return 0, cairn.Invalid(name, fmt.Sprintf("must be an integer from %d to %d", lo, hi))
	}
	return n, nil
}

// plainText refuses a request whose path or query carries a NUL or bytes
// that are not UTF-8: PostgreSQL stores neither in text, so such a value
// (a hostname, a username) would otherwise fail its query as a 500.
func (s *Server) plainText(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		field := ""
		if !textOK(r.URL.Path) {
			field = "path"
		}
		for k, vs := range r.URL.Query() {
			if !textOK(k) || slices.ContainsFunc(vs, func(v string) bool { return !textOK(v) }) {
				field = "query"
			}
		}
		if field != "" {
			writeError(w, r, s.Log, cairn.Invalid(field, "must be UTF-8 without NUL characters"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func textOK(v string) bool { return utf8.ValidString(v) && !strings.ContainsRune(v, 0) }
