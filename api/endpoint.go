package api

import (
	"net/http"
	"reflect"
)

// Endpoint is a route's handler together with what the API document
// (api/openapi.go, docs/openapi.json) says of it. jsonAction and getAction
// fill in the request and response types from their type parameters; a
// handler written by hand is wrapped with raw and declares them with In,
// Out and Stream. Query parameters a handler reads are declared with Query:
// the API tests fail on a request carrying one the document does not name.
type Endpoint struct {
	serve http.HandlerFunc
	doc   endpointDoc
	// csrfExempt: a POST that changes nothing (the codec server), which a
	// cookie session may send without the CSRF header.
	csrfExempt bool
	// deviceContent: the route answers device content (s.deviceContent).
	deviceContent bool
}

// noCSRF marks a POST that changes nothing and answers only to origins
// CORS allows: a session cookie needs no CSRF header on it.
func (e Endpoint) noCSRF() Endpoint { e.csrfExempt = true; return e }

type endpointDoc struct {
	// summary is the operation's description (Endpoint.Summary).
	summary string
	// request is the JSON body's type (nil: no body); requestOptional: a
	// missing body is read as {}.
	request         reflect.Type
	requestOptional bool
	// status is the success status; response the JSON body's type (nil:
	// no body, or contentType says what is sent).
	status      int
	response    reflect.Type
	contentType string
	// also are further success answers (a redirect, a 202).
	also   []altResponse
	query  []QueryParam
	errors []string
}

type altResponse struct {
	status      int
	response    reflect.Type
	contentType string
}

// QueryParam is one query parameter a handler reads.
type QueryParam struct {
	Name        string
	Type        string // string, integer or boolean
	Description string
	Required    bool
}

func queryString(name, description string) QueryParam {
	return QueryParam{Name: name, Type: "string", Description: description}
}

func queryInteger(name, description string) QueryParam {
	return QueryParam{Name: name, Type: "integer", Description: description}
}

// raw wraps a handler that writes its own answer; without In/Out/Stream
// the document says only that it answers status with no body.
func raw(h http.HandlerFunc) Endpoint {
	return Endpoint{serve: h, doc: endpointDoc{status: http.StatusOK}}
}

// ServeHTTP serves the route.
func (e Endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) { e.serve(w, r) }

// Summary is a note on the operation beyond its Route's Summary (what the
// body or headers carry): the document gives it as the description.
func (e Endpoint) Summary(s string) Endpoint { e.doc.summary = s; return e }

// In declares the JSON request body's type by a value of it.
func (e Endpoint) In(v any, optional bool) Endpoint {
	e.doc.request, e.doc.requestOptional = reflect.TypeOf(v), optional
	return e
}

// Out declares the success status and the JSON body's type by a value of
// it (nil: no body).
func (e Endpoint) Out(status int, v any) Endpoint {
	e.doc.status, e.doc.response, e.doc.contentType = status, nil, ""
	if v != nil {
		e.doc.response = reflect.TypeOf(v)
	}
	return e
}

// Stream declares a success answer that is not JSON: a file, an event
// stream, a socket upgrade (the API tests skip body validation for these).
func (e Endpoint) Stream(status int, contentType string) Endpoint {
	e.doc.status, e.doc.response, e.doc.contentType = status, nil, contentType
	return e
}

// Also declares a further success answer (v nil: no body).
func (e Endpoint) Also(status int, v any) Endpoint {
	a := altResponse{status: status}
	if v != nil {
		a.response = reflect.TypeOf(v)
	}
	e.doc.also = append(e.doc.also, a)
	return e
}

// AlsoStream declares a further success answer that is not JSON.
func (e Endpoint) AlsoStream(status int, contentType string) Endpoint {
	e.doc.also = append(e.doc.also, altResponse{status: status, contentType: contentType})
	return e
}

// Query declares the query parameters the handler reads.
func (e Endpoint) Query(params ...QueryParam) Endpoint {
	e.doc.query = append(e.doc.query, params...)
	return e
}

// Errors declares the domain error codes the route answers beyond those
// every route of its auth class may answer; their statuses come from
// the codes' declarations (engine/capability_*.go).
func (e Endpoint) Errors(codes ...string) Endpoint {
	e.doc.errors = append(e.doc.errors, codes...)
	return e
}

func typeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }
