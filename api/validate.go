package api

import (
	"net/http"
	"sort"
	"strings"

	"github.com/cairn-rmm/cairn"
)

// requireFields reports every blank field of fields (name -> value).
func requireFields(fields map[string]string) error {
	names := make([]string, 0, len(fields))
	for n := range fields {
		names = append(names, n)
	}
	sort.Strings(names)
	var v cairn.Validation
	for _, n := range names {
		if strings.TrimSpace(fields[n]) == "" {
			v.Add(n, "is required")
		}
	}
	return v.Err()
}

// validator is implemented by request bodies with checks beyond decoding.
type validator interface{ validate() error }

// decodeValid decodes a required body into req and validates it.
func decodeValid(w http.ResponseWriter, r *http.Request, req validator) error {
	if err := decodeJSON(w, r, req, false); err != nil {
		return err
	}
	return req.validate()
}

// jsonAction is the shape of most handlers: decode the body into Req
// (strictly), validate it, call the domain, and encode its answer with
// status. allowEmpty accepts a missing body as {}.
func jsonAction[Req, Resp any](s *Server, status int, allowEmpty bool, fn func(r *http.Request, req Req) (Resp, error)) Endpoint {
	doc := endpointDoc{request: typeOf[Req](), requestOptional: allowEmpty, status: status}
	if status != http.StatusNoContent {
		doc.response = typeOf[Resp]()
	}
	return Endpoint{doc: doc, serve: func(w http.ResponseWriter, r *http.Request) {
		var req Req
		if err := decodeJSON(w, r, &req, allowEmpty); err != nil {
			writeError(w, r, s.Log, err)
			return
		}
		if v, ok := any(&req).(validator); ok {
			if err := v.validate(); err != nil {
				writeError(w, r, s.Log, err)
				return
			}
		}
		resp, err := fn(r, req)
		if err != nil {
			writeError(w, r, s.Log, err)
			return
		}
		if status == http.StatusNoContent {
			w.WriteHeader(status)
			return
		}
		writeJSON(w, status, resp)
	}}
}

// getAction is jsonAction for requests without a body.
func getAction[Resp any](s *Server, fn func(r *http.Request) (Resp, error)) Endpoint {
	doc := endpointDoc{status: http.StatusOK, response: typeOf[Resp]()}
	return Endpoint{doc: doc, serve: func(w http.ResponseWriter, r *http.Request) {
		resp, err := fn(r)
		if err != nil {
			writeError(w, r, s.Log, err)
			return
		}
		writeJSON(w, http.StatusOK, resp)
	}}
}
