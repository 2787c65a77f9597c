// Package logs builds the Engine's slog handlers: JSON (the default of
// `cairn serve` and `cairn worker`, for log shippers) or text, behind a
// redacting handler that keeps secrets out of every line whatever a
// caller passes it.
//
// Redaction is the last line of defence, not the policy: code never logs
// a password, token, code or header on purpose (the API logs route
// patterns, never raw paths, queries, headers or bodies). The API tests
// scan their logs for the secrets they used (api/logscan_test.go).
package logs

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
)

// Formats of CAIRN_LOG_FORMAT.
const (
	FormatJSON = "json"
	FormatText = "text"
)

// New returns a logger writing format (FormatJSON or FormatText) to w at
// level, redacting secrets.
func New(w io.Writer, format string, level slog.Level) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewJSONHandler(w, opts)
	if format == FormatText {
		h = slog.NewTextHandler(w, opts)
	}
	return slog.New(Redact(h))
}

// Redacted replaces a secret's value.
const Redacted = "[redacted]"

// APITokenPrefix starts every personal API token's text (issue 12), so a
// token is recognised wherever it ends up: in a message, an error, a value.
const APITokenPrefix = "cairn_pat_"

// Redact wraps h so that no line carries a secret: the value of any
// attribute whose key names a secret (password, token, secret, cookie,
// authorization, DPoP proof, setup, recovery or enrollment code), and any
// string, error or message holding an API token or an Authorization
// header's value. Wrapping twice is harmless.
func Redact(h slog.Handler) slog.Handler {
	if _, ok := h.(redactor); ok {
		return h
	}
	return redactor{h}
}

type redactor struct{ next slog.Handler }

func (r redactor) Enabled(ctx context.Context, l slog.Level) bool { return r.next.Enabled(ctx, l) }

func (r redactor) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, scrub(rec.Message), rec.PC)
	if sc := scopeOf(ctx); sc != nil {
		for _, a := range sc.snapshot() {
			out.AddAttrs(redactAttr(a))
		}
	}
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(redactAttr(a))
		return true
	})
	return r.next.Handle(ctx, out)
}

// Scope is the attributes of one request (request_id, method, route, the
// operator or device), which middleware extends as it learns them. Every
// line logged with a context carrying it (the *Context methods, or a
// logger from Bind) carries them, whichever package logs it.
type Scope struct {
	mu    sync.Mutex
	attrs []slog.Attr
}

type scopeKey struct{}

// NewScope returns ctx carrying a new scope of args (slog key-value pairs).
func NewScope(ctx context.Context, args ...any) (context.Context, *Scope) {
	sc := &Scope{}
	sc.Add(args...)
	return context.WithValue(ctx, scopeKey{}, sc), sc
}

// ScopeFrom returns the scope ctx carries, or nil.
func ScopeFrom(ctx context.Context) *Scope { return scopeOf(ctx) }

func scopeOf(ctx context.Context) *Scope {
	if ctx == nil {
		return nil
	}
	sc, _ := ctx.Value(scopeKey{}).(*Scope)
	return sc
}

// Add adds attributes to every line logged from now on.
func (s *Scope) Add(args ...any) {
	r := slog.NewRecord(time.Time{}, 0, "", 0)
	r.Add(args...)
	s.mu.Lock()
	defer s.mu.Unlock()
	r.Attrs(func(a slog.Attr) bool {
		s.attrs = append(s.attrs, a)
		return true
	})
}

func (s *Scope) snapshot() []slog.Attr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.attrs)
}

// Bind returns l logging every line as if with ctx (so the plain Info,
// Warn... methods carry ctx's scope).
func Bind(l *slog.Logger, ctx context.Context) *slog.Logger {
	return slog.New(bound{next: l.Handler(), ctx: ctx})
}

type bound struct {
	next slog.Handler
	ctx  context.Context
}

func (b bound) Enabled(_ context.Context, l slog.Level) bool { return b.next.Enabled(b.ctx, l) }

func (b bound) Handle(_ context.Context, r slog.Record) error { return b.next.Handle(b.ctx, r) }

func (b bound) WithAttrs(as []slog.Attr) slog.Handler {
	return bound{next: b.next.WithAttrs(as), ctx: b.ctx}
}

func (b bound) WithGroup(name string) slog.Handler {
	return bound{next: b.next.WithGroup(name), ctx: b.ctx}
}

func (r redactor) WithAttrs(as []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(as))
	for i, a := range as {
		clean[i] = redactAttr(a)
	}
	return redactor{r.next.WithAttrs(clean)}
}

func (r redactor) WithGroup(name string) slog.Handler { return redactor{r.next.WithGroup(name)} }

func redactAttr(a slog.Attr) slog.Attr {
	if SecretKey(a.Key) {
		return slog.String(a.Key, Redacted)
	}
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, scrub(v.String()))
	case slog.KindGroup:
		g := v.Group()
		clean := make([]any, len(g))
		for i, ga := range g {
			clean[i] = redactAttr(ga)
		}
		return slog.Group(a.Key, clean...)
	case slog.KindAny:
		// Errors and Stringers are printed as text: redact that text.
		switch x := v.Any().(type) {
		case error:
			if s := x.Error(); s != scrub(s) {
				return slog.String(a.Key, scrub(s))
			}
		case fmt.Stringer:
			if s := x.String(); s != scrub(s) {
				return slog.String(a.Key, scrub(s))
			}
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

// secretKeys are the words of attribute keys whose values are secrets.
var secretKeys = []string{"password", "passphrase", "secret", "token", "cookie", "authorization", "dpop", "proof",
	"setup_code", "recovery_code", "enrollment_code", "totp", "credential"}

// SecretKey reports whether an attribute key names a secret. Keys ending
// in _id name a record (api_token_id), not its secret.
func SecretKey(key string) bool {
	k := strings.ToLower(key)
	if strings.HasSuffix(k, "_id") || k == "id" {
		return false
	}
	for _, w := range secretKeys {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// minCredential is the shortest run after an Authorization scheme taken
// for a credential (session tokens, JWTs and PATs are far longer).
const minCredential = 16

// credentialSchemes start an Authorization header's value.
var credentialSchemes = []string{"Bearer ", "DPoP ", "Basic "}

// scrub cuts API tokens and Authorization credentials out of s.
func scrub(s string) string {
	if !strings.Contains(s, APITokenPrefix) && !containsScheme(s) {
		return s
	}
	for _, marker := range append([]string{APITokenPrefix}, credentialSchemes...) {
		var b strings.Builder
		rest := s
		for {
			i := strings.Index(rest, marker)
			if i < 0 {
				b.WriteString(rest)
				break
			}
			b.WriteString(rest[:i])
			rest = rest[i+len(marker):]
			// The credential runs to the next space, quote or delimiter.
			end := strings.IndexAny(rest, " \t\r\n\"',;)<>")
			if end < 0 {
				end = len(rest)
			}
			// Prose ("a DPoP proof", "Bearer <token>") is no credential:
			// tokens are long.
			if marker != APITokenPrefix && end < minCredential {
				b.WriteString(marker)
				continue
			}
			b.WriteString(Redacted)
			rest = rest[end:]
		}
		s = b.String()
	}
	return s
}

func containsScheme(s string) bool {
	for _, c := range credentialSchemes {
		if strings.Contains(s, c) {
			return true
		}
	}
	return false
}
