package transport

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// maxErrorSnippet is how much of a body that is not an Engine error the
// Error keeps: enough to recognise a proxy's error page in a log.
const maxErrorSnippet = 256

// Error is a non-2xx answer. When the body was the Engine's error JSON,
// API holds it and errors.As(err, &*proto.Error) finds it; otherwise
// API.Code is empty and Body holds the start of what came back (a proxy
// or load balancer page, for example). Callers must not treat an answer
// without a code as the Engine refusing them: it says nothing about the
// token or the device.
type Error struct {
	Method string
	// URL is the request URL without its query.
	URL    string
	Status int
	API    proto.Error
	// Body is the start of a body that was not an Engine error.
	Body string
	// RetryAfter is the Retry-After header in seconds (429, 503), or 0.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	head := fmt.Sprintf("%s %s: HTTP %d", e.Method, e.URL, e.Status)
	if e.API.Code != "" {
		return head + " " + e.API.Error()
	}
	text := http.StatusText(e.Status)
	if text != "" {
		head += " " + text
	}
	if e.Body == "" {
		return head
	}
	return head + ": " + e.Body
}

// Unwrap exposes the Engine's error body, when there was one.
func (e *Error) Unwrap() error {
	if e.API.Code == "" {
		return nil
	}
	return &e.API
}

// Code returns the Engine error code carried by err, or "" when err is not
// an Engine answer with a code (a network failure, a proxy's page).
func Code(err error) string {
	var pe *proto.Error
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// CheckResponse returns nil for a 2xx answer and an *Error otherwise,
// reading at most MaxResponseBytes of the body.
func CheckResponse(resp *http.Response) error {
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	e := &Error{Status: resp.StatusCode}
	if req := resp.Request; req != nil {
		e.Method = req.Method
		u := *req.URL
		u.RawQuery, u.ForceQuery, u.Fragment = "", false, ""
		e.URL = u.String()
	}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	data, err := readBounded(resp.Body)
	if err != nil {
		e.Body = "(" + err.Error() + ")"
		return e
	}
	var api proto.Error
	if json.Unmarshal(data, &api) == nil && api.Code != "" {
		e.API = api
		return e
	}
	e.Body = snippet(data)
	if loc := resp.Header.Get("Location"); loc != "" && resp.StatusCode >= 300 && resp.StatusCode < 400 {
		e.Body = strings.TrimSpace("redirect to " + loc + " not followed " + e.Body)
	}
	return e
}

// snippet makes a one-line, bounded, valid UTF-8 excerpt of a body.
func snippet(data []byte) string {
	s := strings.Join(strings.Fields(strings.ToValidUTF8(string(data), "?")), " ")
	if len(s) <= maxErrorSnippet {
		return s
	}
	s = s[:maxErrorSnippet]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "..."
}

// drain lets the connection be reused after an answer that was not read.
func drain(r io.Reader) { _, _ = io.Copy(io.Discard, io.LimitReader(r, MaxResponseBytes)) }
