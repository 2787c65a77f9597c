package transport

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
)

func TestAuthNeedsItsMaterial(t *testing.T) {
	t.Parallel()
	env := setup(t)
	c := env.client(t, "https://"+engineName+":1", "", env.caPEM)
	err := c.Do(context.Background(), http.MethodPost, proto.PathHeartbeat, nil, nil, AuthBearer(""))
	require.ErrorContains(t, err, "without an access token")
	require.Equal(t, DialStats{}, c.Dials(), "nothing was sent")

	keyless, err := New(Config{ServerURL: "https://" + engineName + ":1"})
	require.NoError(t, err)
	err = keyless.Do(context.Background(), http.MethodPost, proto.PathTokenRefresh, nil, nil, AuthProof)
	require.ErrorContains(t, err, "no device key")

	_, err = c.NewRequest(context.Background(), http.MethodGet, "api/x", nil, AuthNone)
	require.ErrorContains(t, err, "must start with /")
}

func TestErrorAnswers(t *testing.T) {
	t.Parallel()
	env := setup(t)
	answers := map[string]http.HandlerFunc{
		"/engine-error": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":"validation_failed","message":"request is invalid","fields":{"hostname":"is required"}}`)
		},
		"/proxy-page": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = io.WriteString(w, "<html>\n<body>  upstream\tdown  </body></html>")
		},
		"/rate-limited": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"error":"rate_limited","message":"slow down"}`)
		},
		"/redirect": func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "https://elsewhere.invalid/", http.StatusFound)
		},
		"/huge": func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(`"`))
			_, _ = w.Write([]byte(strings.Repeat("a", MaxResponseBytes)))
			_, _ = w.Write([]byte(`"`))
		},
		"/not-json": func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "hello") },
		"/no-content": func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusNoContent)
		},
	}
	mux := http.NewServeMux()
	for p, h := range answers {
		mux.HandleFunc(p, h)
	}
	port := env.serve(t, "127.0.0.1:0", mux, false, 0)
	c := env.client(t, "https://"+engineName+":"+port, "127.0.0.1", env.caPEM)

	do := func(path string) error {
		var out any
		return c.Do(context.Background(), http.MethodGet, path+"?secret=1", nil, &out, AuthNone)
	}

	err := do("/engine-error")
	var te *Error
	require.ErrorAs(t, err, &te)
	require.Equal(t, http.StatusBadRequest, te.Status)
	require.Equal(t, "validation_failed", Code(err))
	var pe *proto.Error
	require.ErrorAs(t, err, &pe)
	require.Equal(t, map[string]string{"hostname": "is required"}, pe.Fields)
	require.Equal(t, "GET https://"+engineName+":"+port+"/engine-error: HTTP 400 validation_failed: request is invalid", err.Error())

	err = do("/proxy-page")
	require.ErrorAs(t, err, &te)
	require.Equal(t, http.StatusBadGateway, te.Status)
	require.Empty(t, Code(err))
	require.False(t, errors.As(err, &pe), "no Engine error to find")
	require.Equal(t, "<html> <body> upstream down </body></html>", te.Body)
	require.ErrorContains(t, err, "HTTP 502 Bad Gateway: <html>")
	require.NotContains(t, err.Error(), "secret", "the query stays out of errors")

	err = do("/rate-limited")
	require.ErrorAs(t, err, &te)
	require.Equal(t, "rate_limited", Code(err))
	require.Equal(t, int64(7), int64(te.RetryAfter.Seconds()))

	err = do("/redirect")
	require.ErrorAs(t, err, &te)
	require.Equal(t, http.StatusFound, te.Status)
	require.Contains(t, te.Body, "redirect to https://elsewhere.invalid/ not followed")

	require.ErrorContains(t, do("/huge"), "larger than 8388608 bytes")
	require.ErrorContains(t, do("/not-json"), "decode answer")
	require.NoError(t, do("/no-content"))
}

func TestNewRefusesBadConfig(t *testing.T) {
	t.Parallel()
	env := setup(t)
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{ServerURL: ""}, "absolute http(s) URL"},
		{Config{ServerURL: "ftp://engine.example"}, "absolute http(s) URL"},
		{Config{ServerURL: "https://engine.example?x=1"}, "query"},
		{Config{ServerURL: "https://engine.example", ServerIPFallback: "10.0.0.1:443"}, "bare IP"},
		{Config{ServerURL: "https://engine.example", CAPEM: "not pem"}, "internal_ca_pem: no PEM CERTIFICATE block"},
		{Config{ServerURL: "https://engine.example", Key: env.key[:32]}, "not an Ed25519 private key"},
	} {
		_, err := New(tc.cfg)
		require.ErrorContains(t, err, tc.want, "%+v", tc.cfg)
	}
}

// A Do without a deadline still ends: the agent runs unattended.
func TestDoWithoutDeadlineTimesOut(t *testing.T) {
	t.Parallel()
	env := setup(t)
	port := env.serve(t, "127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}), false, 0)
	c, err := New(Config{ServerURL: "https://localhost:" + port, CAPEM: env.caPEM, RequestTimeout: 200 * time.Millisecond})
	require.NoError(t, err)
	// The handler never answers: returning at all is the timeout's work.
	err = c.Do(context.Background(), http.MethodGet, "/slow", nil, nil, AuthNone)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}
