package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"

	"github.com/go-chi/chi/v5"

	cairnengine "github.com/cairn-rmm/cairn/engine"
)

// apiDocument is the API document, generated from the route table as
// `make generate` writes docs/openapi.json.
var apiDocument = sync.OnceValues(func() (*openapi3.T, error) {
	b, err := cairnengine.DocumentJSON()
	if err != nil {
		return nil, err
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(b)
	if err != nil {
		return nil, err
	}
	return doc, doc.Validate(loader.Context)
})

// validated checks every request a test sends to h and every answer h
// gives against the API document, and fails t on a mismatch: an answer
// whose status the route does not declare or whose body does not match
// its schema, a query parameter the route does not declare, or a request
// the document calls invalid that the Engine nonetheless served (a 2xx or
// 3xx). A request the document allows may still be refused: the document
// gives shapes, the handlers the rules. Bodies of answers that are not
// JSON (files, event streams, sockets) are not read.
func validated(t testing.TB, h http.Handler) http.Handler {
	doc, err := apiDocument()
	if err != nil {
		t.Fatalf("the API document does not load: %v", err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// File bodies (multipart uploads, streamed transfer content) pass
		// through unread: a test's 200 MiB must not be held here, and the
		// document describes only JSON request bodies.
		var reqBody []byte
		if r.Body != nil && !streamedBody(r) {
			reqBody, _ = io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(reqBody))
		}
		rctx := chi.NewRouteContext()
		rec := &recordingWriter{ResponseWriter: w}
		h.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), chi.RouteCtxKey, rctx)))
		if msg := checkExchange(doc, rctx, r, reqBody, rec); msg != "" {
			t.Errorf("API document mismatch: %s %s (route %s) -> %d: %s", r.Method, r.URL.RequestURI(), rctx.RoutePattern(), rec.status(), msg)
		}
	})
}

func checkExchange(doc *openapi3.T, rctx *chi.Context, r *http.Request, reqBody []byte, rec *recordingWriter) string {
	pattern := rctx.RoutePattern()
	item := doc.Paths.Find(pattern)
	var op *openapi3.Operation
	if item != nil {
		op = item.GetOperation(r.Method)
	}
	if op == nil {
		// Not a route (the console, a 404 or 405): only the console's
		// files and the shared error body are sent.
		return ""
	}
	params := map[string]string{}
	for i, k := range rctx.URLParams.Keys {
		params[k] = rctx.URLParams.Values[i]
	}
	// Authentication is the handlers' business (the authorization
	// matrix tests it); the document checks shapes.
	unsecured := *op
	unsecured.Security = &openapi3.SecurityRequirements{}
	route := &routers.Route{Spec: doc, Path: pattern, PathItem: item, Method: r.Method, Operation: &unsecured}
	req := r.Clone(context.Background())
	req.Body = io.NopCloser(bytes.NewReader(reqBody))
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{IncludeResponseStatus: true}}
	status := rec.status()
	reqErr := openapi3filter.ValidateRequest(context.Background(), in)
	// Handlers ignore query parameters they do not read (the scope tests
	// send stray ones on purpose); one the handler refused by name is
	// one it reads, and must be declared.
	if status == http.StatusBadRequest && rec.isJSON() {
		var e struct {
			Fields map[string]string `json:"fields"`
		}
		_ = json.Unmarshal(rec.body.Bytes(), &e)
		for name := range r.URL.Query() {
			if _, named := e.Fields[name]; named && unsecured.Parameters.GetByInAndName(openapi3.ParameterInQuery, name) == nil {
				return fmt.Sprintf("query parameter %q is read but not declared", name)
			}
		}
	}
	if reqErr != nil && status < 400 {
		return "the document calls the request invalid, the Engine served it: " + reqErr.Error()
	}
	if rec.hijacked {
		return ""
	}
	if status < 400 && op.Responses.Status(status) == nil {
		return fmt.Sprintf("status %d is not declared", status)
	}
	if status >= 400 {
		if msg := checkError(op, status, rec); msg != "" {
			return msg
		}
	}
	ct := rec.Header().Get("Content-Type")
	media, _, _ := mime.ParseMediaType(ct)
	resp := op.Responses.Status(status)
	if resp == nil {
		resp = op.Responses.Default()
	}
	if media != "application/json" {
		if media != "" && resp != nil && resp.Value != nil && len(resp.Value.Content) > 0 && resp.Value.Content.Get(ct) == nil {
			return fmt.Sprintf("content type %q is not declared", ct)
		}
		return ""
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: status, Header: rec.Header(),
		Options: &openapi3filter.Options{IncludeResponseStatus: true}}
	out.SetBodyBytes(rec.body.Bytes())
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		return "the answer does not match the document: " + strings.ReplaceAll(err.Error(), "\n", " ") + "; body: " + truncate(rec.body.String(), 600)
	}
	return ""
}

// checkError holds an error answer to the route's declared errors: its
// code is in the operation's x-cairn-errors, its status is the one
// the code's declaration (engine/capability_*.go) gives it, and the status is declared
// (a 500 falls to default).
func checkError(op *openapi3.Operation, status int, rec *recordingWriter) string {
	if status != http.StatusInternalServerError && op.Responses.Status(status) == nil {
		return fmt.Sprintf("error status %d is not declared; body: %s", status, truncate(rec.body.String(), 300))
	}
	if !rec.isJSON() {
		return ""
	}
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(rec.body.Bytes(), &e) != nil || e.Error == "" {
		// Not the shared error body: the schema check says how.
		return ""
	}
	declared, _ := op.Extensions["x-cairn-errors"].([]any)
	if !slices.Contains(declared, any(e.Error)) {
		return fmt.Sprintf("error code %q is not declared (x-cairn-errors: %v)", e.Error, declared)
	}
	book, err := cairnengine.Codes()
	if err != nil {
		return err.Error()
	}
	if decl, known := book.Lookup(e.Error); !known || decl.Status != status {
		return fmt.Sprintf("error code %q answered with status %d; its declaration gives %d", e.Error, status, decl.Status)
	}
	return ""
}

func streamedBody(r *http.Request) bool {
	media, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return media == "multipart/form-data" || media == "application/octet-stream"
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// recordingWriter passes the answer on and keeps its status and, for JSON,
// its body; it keeps the writer's flushing and hijacking (event streams,
// sockets).
type recordingWriter struct {
	http.ResponseWriter
	code     int
	body     bytes.Buffer
	hijacked bool
}

func (w *recordingWriter) status() int {
	if w.code == 0 {
		return http.StatusOK
	}
	return w.code
}

func (w *recordingWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recordingWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	if w.isJSON() {
		w.body.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

func (w *recordingWriter) isJSON() bool {
	return strings.HasPrefix(w.Header().Get("Content-Type"), "application/json")
}

func (w *recordingWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *recordingWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, fmt.Errorf("the server cannot hijack")
	}
	w.hijacked = true
	return hj.Hijack()
}

func (w *recordingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
