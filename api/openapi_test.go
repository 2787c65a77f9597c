package api_test

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-chi/chi/v5"
	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/api"
	cairnengine "github.com/cairn-rmm/cairn/engine"
	"github.com/cairn-rmm/cairn/internal/auth"
)

// The committed docs/openapi.json is the document the route table
// generates: a route or type changed without `make generate` fails here
// (and in `make check-generated`).
func TestOpenAPIDocumentIsCommitted(t *testing.T) {
	t.Parallel()
	want, err := cairnengine.DocumentJSON()
	require.NoError(t, err)
	got, err := os.ReadFile("../docs/openapi.json")
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, got), "docs/openapi.json is stale: run `make generate` and commit it")
}

// Every route of the table is in the document with its auth class, and the
// Engine serves the document without authentication.
func TestOpenAPIDocumentServedAndComplete(t *testing.T) {
	t.Parallel()
	f := setup(t)
	res := f.do(t, "GET", "/api/openapi.json", "", nil)
	require.Equal(t, 200, res.Status, res.Raw)
	want, err := cairnengine.DocumentJSON()
	require.NoError(t, err)
	require.JSONEq(t, string(want), res.Raw)

	// The reference page, from the console build, under the console's CSP.
	page := f.do(t, "GET", "/api/docs", "", nil)
	require.Equal(t, 200, page.Status, page.Raw)
	require.Contains(t, page.Raw, "Cairn API reference")
	require.Contains(t, page.Header.Get("Content-Security-Policy"), "script-src 'self'")

	doc, err := apiDocument()
	require.NoError(t, err)
	require.Equal(t, "3.1.0", doc.OpenAPI)
	for _, rt := range f.engine.srv.Routes() {
		item := doc.Paths.Find(rt.Pattern)
		require.NotNil(t, item, "%s is not in the document", rt.Pattern)
		op := item.GetOperation(rt.Method)
		require.NotNil(t, op, "%s %s is not in the document", rt.Method, rt.Pattern)
		require.Equal(t, string(rt.Auth), op.Extensions["x-cairn-auth"], "%s %s", rt.Method, rt.Pattern)
		require.NotNil(t, op.Responses.Default(), "%s %s has no error answer", rt.Method, rt.Pattern)
		switch rt.Auth {
		case api.AuthToken, api.AuthAdmin:
			require.Len(t, *op.Security, 2, "%s %s: bearer or cookie", rt.Method, rt.Pattern)
		case api.AuthNone, api.AuthBootstrap, api.AuthMFAPending:
			require.Empty(t, *op.Security, "%s %s", rt.Method, rt.Pattern)
		default:
			require.NotEmpty(t, *op.Security, "%s %s", rt.Method, rt.Pattern)
		}
	}
	// The shared error body, as docs/api.md "Errors" gives it.
	e := doc.Components.Schemas["Error"].Value
	require.ElementsMatch(t, []string{"error", "message"}, e.Required)
	require.Contains(t, e.Properties, "fields")
	// The bootstrap phases, exactly as SPEC "Bootstrap" names them.
	phase := doc.Components.Schemas["PhaseResponse"].Value.Properties["phase"].Value
	require.ElementsMatch(t, []any{auth.PhaseAegisSetup, auth.PhaseAegisUnlock, auth.PhaseAdminSetup,
		auth.PhaseAdminRecovery, auth.PhaseLogin}, phase.Enum)
}

// recordingTB is a testing.TB whose failures are kept, to watch the
// document check fail.
type recordingTB struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recordingTB) failures() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errors...)
}

// The check the API tests run on every exchange catches drift: an answer
// without a declared field, a status the route does not declare, a request
// the document refuses but the Engine serves, and a query parameter the
// handler reads but the route does not declare.
func TestOpenAPIValidationCatchesDrift(t *testing.T) {
	t.Parallel()
	r := chi.NewRouter()
	answer := func(status int, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = w.Write([]byte(body))
		}
	}
	r.Get("/api/sites", answer(200, `{"sites": [{"site_id": 1, "nickname": "x"}]}`))
	r.Get("/api/auth/me", answer(201, `{}`))
	r.Post("/api/sites/delete", answer(200, `{"deleted": [1]}`))
	r.Get("/api/devices/search", answer(400, `{"error": "validation_failed", "message": "request is invalid", "fields": {"page": "must be a number"}}`))
	r.Get("/api/server/audit", answer(200, `{"entries": [], "next_before_id": null}`))
	r.Get("/api/server/workers", answer(500, `{"error": "internal"}`))
	r.Post("/api/sites/rename", answer(409, `{"error": "site_not_empty", "message": "m"}`))
	r.Post("/api/sites", answer(400, `{"error": "conflict", "message": "m"}`))
	r.Get("/api/sites/device_map", answer(404, `{"error": "not_found", "message": "m"}`))
	r.Post("/api/sites/assign", answer(404, `{"error": "not_found", "message": "no such site"}`))
	tb := &recordingTB{TB: t}
	srv := httptest.NewServer(validated(tb, r))
	defer srv.Close()
	send := func(method, path, body string) {
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
	}
	send("GET", "/api/sites", "")
	send("GET", "/api/auth/me", "")
	send("POST", "/api/sites/delete", `{"site_ids": "all"}`)
	send("GET", "/api/devices/search?page=2", "")
	send("GET", "/api/server/workers", "")
	// Error answers: a code the route does not declare, a code with
	// another status than its declaration gives it, a status the route
	// does not declare.
	send("POST", "/api/sites/rename", `{"site_id": 1, "name": "x"}`)
	send("POST", "/api/sites", `{"name": "x"}`)
	send("GET", "/api/sites/device_map", "")
	got := tb.failures()
	require.Len(t, got, 8, "%s", strings.Join(got, "\n"))
	require.Contains(t, got[0], "nickname")
	require.Contains(t, got[1], "status 201 is not declared")
	require.Contains(t, got[2], "calls the request invalid")
	require.Contains(t, got[3], `query parameter "page" is read but not declared`)
	require.Contains(t, got[4], "message")
	require.Contains(t, got[5], `error code "site_not_empty" is not declared`)
	require.Contains(t, got[6], `error code "conflict" answered with status 400; its declaration gives 409`)
	require.Contains(t, got[7], "error status 404 is not declared")

	// Declared exchanges pass, errors included.
	send("GET", "/api/server/audit?limit=5", "")
	send("POST", "/api/sites/assign", `{"guids": ["g"], "site_id": 2}`)
	require.Len(t, tb.failures(), 8)
}

// Every route lists the error codes it may answer (x-cairn-errors,
// sorted), each has its status in the error map and that status is a
// declared answer of the route (internal's 500 is default's).
func TestOpenAPIDeclaresErrorCodes(t *testing.T) {
	t.Parallel()
	doc, err := apiDocument()
	require.NoError(t, err)
	book, err := cairnengine.Codes()
	require.NoError(t, err)
	ops := 0
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			ops++
			raw, ok := op.Extensions["x-cairn-errors"].([]any)
			require.True(t, ok, "%s %s has no x-cairn-errors", method, path)
			codes := make([]string, 0, len(raw))
			for _, c := range raw {
				codes = append(codes, c.(string))
			}
			require.True(t, slices.IsSorted(codes), "%s %s: %v", method, path, codes)
			require.Contains(t, codes, "internal", "%s %s", method, path)
			for _, c := range codes {
				decl, known := book.Lookup(c)
				require.True(t, known, "%s %s: %q is declared by no capability", method, path, c)
				st := decl.Status
				if st == http.StatusInternalServerError {
					continue
				}
				resp := op.Responses.Status(st)
				require.NotNil(t, resp, "%s %s: %q answers %d, which is not declared", method, path, c, st)
				require.Contains(t, *resp.Value.Description, c, "%s %s: the %d answer does not name %q", method, path, st, c)
			}
		}
	}
	require.Equal(t, len(api.New(api.Deps{}, cairnengine.AreasForTest()...).Routes()), ops)
}

// A device's last status post is typed in the document, not "any JSON":
// the API tests then hold what the Engine sends to it.
func TestOpenAPIDeviceDetailsLastStatusIsTyped(t *testing.T) {
	t.Parallel()
	doc, err := apiDocument()
	require.NoError(t, err)
	ls := doc.Components.Schemas["DeviceDetails"].Value.Properties["last_status"].Value
	require.Len(t, ls.AnyOf, 2)
	require.Equal(t, "#/components/schemas/StatusRecord", ls.AnyOf[0].Ref)
	require.Contains(t, ls.AnyOf[0].Value.Required, "milestones")
}

// Values the handlers decode themselves are documented with what they can
// be (`openapi:"types=..."`, `openapi:"ref=..."`), not as any JSON.
func TestOpenAPIRawValuesAreTyped(t *testing.T) {
	t.Parallel()
	doc, err := apiDocument()
	require.NoError(t, err)
	prop := func(schema, name string) *openapi3.SchemaRef {
		s := doc.Components.Schemas[schema]
		require.NotNil(t, s, schema)
		p := s.Value.Properties[name]
		require.NotNil(t, p, schema+"."+name)
		return p
	}
	for _, tc := range []struct{ schema, prop, want string }{
		{"Activity", "metadata", "object"},
		{"Role", "context", "object"},
		{"Ceremony", "options", "object"},
		{"PasskeyLoginRequest", "credential", "object"},
		{"TokenRequest", "token", "string|null"},
		{"Parameter", "default", "string|number|boolean|null"},
	} {
		require.Equal(t, tc.want, strings.Join(prop(tc.schema, tc.prop).Value.Type.Slice(), "|"), tc.schema+"."+tc.prop)
	}
	values := prop("QuickRunRequest", "parameters").Value.AdditionalProperties.Schema.Value
	require.Equal(t, []string{"string", "number", "boolean"}, values.Type.Slice())
	require.Equal(t, "#/components/schemas/Node", prop("FilterRequest", "filter").Ref)
	require.Equal(t, "#/components/schemas/Signed", prop("Manifest", "signature").Ref)
	require.True(t, *prop("Activity", "metadata").Value.AdditionalProperties.Has, "any members")
}

// Every route declares a summary and falls in an area (a tag) the document
// describes, and the document names its server: what an API consumer's
// linter asks of it (Redocly's recommended rules, `make test-openapi-lint`).
func TestOpenAPIEveryRouteHasASummaryAndArea(t *testing.T) {
	t.Parallel()
	srv := api.New(api.Deps{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	for _, rt := range srv.Routes() {
		require.NotEmpty(t, strings.TrimSpace(rt.Summary), "%s %s has no Summary", rt.Method, rt.Pattern)
		require.LessOrEqual(t, len(rt.Summary), 60, "%s %s: a summary is one short line", rt.Method, rt.Pattern)
	}
	doc, err := apiDocument()
	require.NoError(t, err)
	require.NotEmpty(t, doc.Servers, "the document names no server")
	described := map[string]bool{}
	for _, tag := range doc.Tags {
		require.NotEmpty(t, tag.Description, "tag %s", tag.Name)
		described[tag.Name] = true
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			require.NotEmpty(t, op.Summary, "%s %s", method, path)
			require.Len(t, op.Tags, 1, "%s %s", method, path)
			require.True(t, described[op.Tags[0]], "%s %s: tag %q is not in the document's tags", method, path, op.Tags[0])
		}
	}
}
