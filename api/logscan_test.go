package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
)

// The log secret scan (issue 12): every Engine a test starts logs at debug
// level into its fixture's buffer, every request the tests send through do
// leaves the secrets it carried or received (passwords, session, pending,
// refresh and access tokens, DPoP proofs, setup and enrollment codes,
// TOTP secrets, cookies) in secretsByHost, and when the fixture ends its
// logs must hold none of the secrets sent to or received from its
// replicas. Every API test is a scan.

// syncBuffer is a log sink several goroutines write.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var (
	secretsMu     sync.Mutex
	secretsByHost = map[string]map[string]bool{}
)

// minSecret is the shortest value taken for a secret: TOTP codes (six
// digits) are spent once used and would match timestamps.
const minSecret = 8

// noteSecret records s as a secret seen at host.
func noteSecret(host, s string) {
	if len(s) < minSecret {
		return
	}
	secretsMu.Lock()
	defer secretsMu.Unlock()
	if secretsByHost[host] == nil {
		secretsByHost[host] = map[string]bool{}
	}
	secretsByHost[host][s] = true
}

// secretKey reports whether a JSON key holds a secret.
func secretKey(k string) bool {
	k = strings.ToLower(k)
	if strings.HasSuffix(k, "_id") || strings.HasSuffix(k, "_url") || strings.HasSuffix(k, "_at") || strings.HasSuffix(k, "_version") {
		return false
	}
	for _, w := range []string{"password", "passphrase", "secret", "token", "code", "proof", "recovery", "signature"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// harvestJSON notes the string values under secret keys of a JSON body.
func harvestJSON(host string, raw []byte) {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return
	}
	var walk func(key string, v any)
	walk = func(key string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				walk(k, c)
			}
		case []any:
			for _, c := range x {
				walk(key, c)
			}
		case string:
			// A "code" with spaces is a script's source, not a code.
			if secretKey(key) && !(strings.Contains(strings.ToLower(key), "code") && strings.ContainsAny(x, " \n")) {
				noteSecret(host, x)
			}
		}
	}
	walk("", v)
}

// harvest notes the secrets of one exchange with host.
func harvest(req *http.Request, reqBody []byte, res *http.Response, resBody []byte) {
	host := req.URL.Host
	if _, cred, ok := strings.Cut(req.Header.Get("Authorization"), " "); ok {
		noteSecret(host, strings.TrimSpace(cred))
	}
	for _, h := range []string{"DPoP", "X-CSRF-Token"} {
		noteSecret(host, req.Header.Get(h))
	}
	for _, c := range req.Cookies() {
		noteSecret(host, c.Value)
	}
	for _, c := range res.Cookies() {
		noteSecret(host, c.Value)
	}
	// Signed links carry their signature (and install tokens) in the URL.
	for k, vs := range req.URL.Query() {
		if secretKey(k) || strings.Contains(strings.ToLower(k), "signature") {
			for _, v := range vs {
				noteSecret(host, v)
			}
		}
	}
	harvestJSON(host, reqBody)
	harvestJSON(host, resBody)
}

// requestBody is a copy of req's body (nil when it cannot be re-read).
func requestBody(req *http.Request) []byte {
	if req.GetBody == nil {
		return nil
	}
	rc, err := req.GetBody()
	if err != nil {
		return nil
	}
	defer rc.Close()
	b, _ := io.ReadAll(rc)
	return b
}

// watchLogs gives the fixture its log buffer and the scan at its end; the
// scan is registered before any replica's stop, so it runs after them all.
func (f *fixture) watchLogs(t *testing.T) {
	t.Helper()
	if f.logs != nil {
		return
	}
	f.logs = &syncBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			f.logProblems(t)
		}
		if leaked := f.leakedSecrets(); len(leaked) > 0 {
			t.Errorf("%d secret(s) the test used reached the Engine's log, e.g. %q in:\n%s", len(leaked), leaked[0].secret, leaked[0].line)
		}
	})
}

// logProblems shows a failed test the replicas' warnings and errors (the
// Engine's log is otherwise kept only for the secret scan): a 503 or a
// stuck workflow says why there.
func (f *fixture) logProblems(t *testing.T) {
	t.Helper()
	const most = 40
	var lines []string
	for _, line := range strings.Split(f.logs.String(), "\n") {
		if strings.Contains(line, `"level":"WARN"`) || strings.Contains(line, `"level":"ERROR"`) {
			lines = append(lines, line)
		}
	}
	if len(lines) > most {
		lines = lines[len(lines)-most:]
	}
	if len(lines) > 0 {
		t.Logf("the Engine's last %d warnings and errors:\n%s", len(lines), strings.Join(lines, "\n"))
	}
}

// noteHost adds a replica's address to the hosts the scan covers.
func (f *fixture) noteHost(rawURL string) {
	if u, err := url.Parse(rawURL); err == nil {
		f.hostsMu.Lock()
		f.hosts = append(f.hosts, u.Host)
		f.hostsMu.Unlock()
	}
}

type leak struct{ secret, line string }

// leakedSecrets are the secrets exchanged with the fixture's replicas that
// appear in its log.
func (f *fixture) leakedSecrets() []leak {
	logText := f.logs.String()
	f.hostsMu.Lock()
	hosts := append([]string(nil), f.hosts...)
	f.hostsMu.Unlock()
	secretsMu.Lock()
	var secrets []string
	for _, h := range hosts {
		for s := range secretsByHost[h] {
			secrets = append(secrets, s)
		}
	}
	secretsMu.Unlock()
	f.extraMu.Lock()
	secrets = append(secrets, f.extraSecrets...)
	f.extraMu.Unlock()
	sort.Strings(secrets)
	var out []leak
	for _, s := range secrets {
		if i := strings.Index(logText, s); i >= 0 {
			start := strings.LastIndexByte(logText[:i], '\n') + 1
			end := strings.IndexByte(logText[i:], '\n')
			if end < 0 {
				end = len(logText) - i
			}
			out = append(out, leak{secret: s, line: logText[start : i+end]})
		}
	}
	return out
}

// noteFixtureSecret adds a secret the test got outside HTTP (the setup code
// read from the server, say).
func (f *fixture) noteFixtureSecret(s string) {
	if len(s) < minSecret {
		return
	}
	f.extraMu.Lock()
	f.extraSecrets = append(f.extraSecrets, s)
	f.extraMu.Unlock()
}

// teeHandler sends each record to both handlers (the scan's buffer and,
// under -v, the terminal at warn).
type teeHandler struct{ a, b slog.Handler }

func (h teeHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.a.Enabled(ctx, l) || h.b.Enabled(ctx, l)
}

func (h teeHandler) Handle(ctx context.Context, r slog.Record) error {
	if h.a.Enabled(ctx, r.Level) {
		_ = h.a.Handle(ctx, r.Clone())
	}
	if h.b.Enabled(ctx, r.Level) {
		return h.b.Handle(ctx, r)
	}
	return nil
}

func (h teeHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return teeHandler{h.a.WithAttrs(as), h.b.WithAttrs(as)}
}

func (h teeHandler) WithGroup(name string) slog.Handler {
	return teeHandler{h.a.WithGroup(name), h.b.WithGroup(name)}
}
