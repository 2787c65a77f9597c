package transport

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent"
	"github.com/cairn-rmm/cairn/internal/tlsca"
)

// engineName never resolves (RFC 6761 reserves .invalid), so dialling it
// always takes the fallback path.
const engineName = "engine.invalid"

// testEnv is an Engine CA (the Engine's own internal/tlsca, so the test
// proves interop with what agents really pin) and a device key.
type testEnv struct {
	caPEM string
	cert  tls.Certificate
	key   ed25519.PrivateKey
}

func setup(t *testing.T) *testEnv {
	t.Helper()
	m, err := tlsca.Load(tlsca.Options{Dir: t.TempDir(), Hostnames: []string{engineName}})
	require.NoError(t, err)
	cert, err := m.GetCertificate(nil)
	require.NoError(t, err)
	return &testEnv{caPEM: string(m.CAPEM()), cert: *cert, key: newKey(t)}
}

func newKey(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	return key
}

// otherCAPEM is a CA that did not issue the server certificate.
func otherCAPEM(t *testing.T) string {
	t.Helper()
	m, err := tlsca.Load(tlsca.Options{Dir: t.TempDir()})
	require.NoError(t, err)
	return string(m.CAPEM())
}

// serve starts h on addr ("127.0.0.1:0" style): TLS with the env's
// certificate unless plain, at most TLS maxVersion when not zero. It
// returns the port.
func (e *testEnv) serve(t *testing.T, addr string, h http.Handler, plain bool, maxVersion uint16) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	l, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	require.NoError(t, srv.Listener.Close())
	srv.Listener = l
	if plain {
		srv.Start()
	} else {
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{e.cert}, MaxVersion: maxVersion}
		if maxVersion != 0 && maxVersion < tls.VersionTLS12 {
			srv.TLS.MinVersion = tls.VersionTLS10
		}
		srv.StartTLS()
	}
	t.Cleanup(srv.Close)
	_, port, err := net.SplitHostPort(l.Addr().String())
	require.NoError(t, err)
	return port
}

// client builds a Client the way the agent does: from agent.json values.
func (e *testEnv) client(t *testing.T, serverURL, fallback, caPEM string) *Client {
	t.Helper()
	c := agent.Default()
	c.ServerURL, c.ServerIPFallback, c.InternalCAPEM = serverURL, fallback, caPEM
	c.Ed25519PrivateKey = base64.StdEncoding.EncodeToString(e.key)
	cl, err := FromAgentConfig(c, "1.2.3", nil)
	require.NoError(t, err)
	t.Cleanup(cl.CloseIdleConnections)
	return cl
}

// seen records the last request a handler got.
type seen struct {
	mu   sync.Mutex
	host string
	sni  string
	n    int
}

func (s *seen) handler(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.host, s.n = r.Host, s.n+1
		if r.TLS != nil {
			s.sni = r.TLS.ServerName
		}
		s.mu.Unlock()
		next(w, r)
	}
}

func (s *seen) get() (host, sni string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.host, s.sni, s.n
}

func okJSON(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"ok":true}`))
}

func TestDialPaths(t *testing.T) {
	t.Parallel()
	type want struct{ direct, fallback, failed uint64 }
	for _, tc := range []struct {
		name       string
		listen     string // server address
		host       string // server_url host
		fallback   string
		plain      bool
		pin        string // "good", "other" or "" (system roots only)
		maxVersion uint16
		want       want
		wantErr    func(t *testing.T, err error)
	}{
		{name: "FQDN answers, fallback unused", listen: "127.0.0.1:0", host: "localhost", fallback: "127.0.0.1", pin: "good", want: want{direct: 1}},
		{name: "FQDN does not resolve", listen: "127.0.0.1:0", host: engineName, fallback: "127.0.0.1", pin: "good", want: want{fallback: 1}},
		{name: "FQDN refuses", listen: "127.0.0.2:0", host: "localhost", fallback: "127.0.0.2", pin: "good", want: want{fallback: 1}},
		{name: "plain http through the fallback", listen: "127.0.0.1:0", host: engineName, fallback: "127.0.0.1", plain: true, want: want{fallback: 1}},
		{name: "wrong CA through the fallback", listen: "127.0.0.1:0", host: engineName, fallback: "127.0.0.1", pin: "other", want: want{fallback: 1},
			wantErr: func(t *testing.T, err error) {
				var cve *tls.CertificateVerificationError
				require.ErrorAs(t, err, &cve)
			}},
		{name: "system roots only do not trust the local CA", listen: "127.0.0.1:0", host: engineName, fallback: "127.0.0.1", want: want{fallback: 1},
			wantErr: func(t *testing.T, err error) {
				var cve *tls.CertificateVerificationError
				require.ErrorAs(t, err, &cve)
			}},
		{name: "no fallback configured", listen: "127.0.0.1:0", host: engineName, pin: "good", want: want{failed: 1},
			wantErr: func(t *testing.T, err error) {
				var dnsErr *net.DNSError
				require.ErrorAs(t, err, &dnsErr)
				require.NotContains(t, err.Error(), "server_ip_fallback")
			}},
		{name: "fallback refuses too", listen: "127.0.0.2:0", host: engineName, fallback: "127.0.0.3", pin: "good", want: want{failed: 1},
			wantErr: func(t *testing.T, err error) {
				var dnsErr *net.DNSError
				require.ErrorAs(t, err, &dnsErr)
				require.ErrorContains(t, err, "server_ip_fallback 127.0.0.3:")
				require.ErrorContains(t, err, "connection refused")
			}},
		{name: "server below TLS 1.2", listen: "127.0.0.1:0", host: engineName, fallback: "127.0.0.1", pin: "good", maxVersion: tls.VersionTLS11, want: want{fallback: 1},
			wantErr: func(t *testing.T, err error) {
				require.ErrorContains(t, err, "protocol version")
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := setup(t)
			var s seen
			port := env.serve(t, tc.listen, s.handler(okJSON), tc.plain, tc.maxVersion)
			scheme, pin := "https", ""
			if tc.plain {
				scheme = "http"
			}
			switch tc.pin {
			case "good":
				pin = env.caPEM
			case "other":
				pin = otherCAPEM(t)
			}
			c := env.client(t, scheme+"://"+tc.host+":"+port, tc.fallback, pin)

			var out struct{ OK bool }
			err := c.Do(context.Background(), http.MethodGet, "/api/health", nil, &out, AuthNone)
			stats := c.Dials()
			require.Equal(t, want{stats.Direct, stats.Fallback, stats.Failed}, tc.want)
			if tc.wantErr != nil {
				require.Error(t, err)
				tc.wantErr(t, err)
				return
			}
			require.NoError(t, err)
			require.True(t, out.OK)
			host, sni, n := s.get()
			require.Equal(t, 1, n)
			require.Equal(t, tc.host+":"+port, host, "the FQDN stays the HTTP host")
			if !tc.plain {
				require.Equal(t, tc.host, sni, "the FQDN stays the TLS server name")
			}
			require.Equal(t, tc.want.fallback == 1, stats.Last.Fallback)
			if tc.want.fallback == 1 {
				require.NotEmpty(t, stats.Last.PrimaryErr)
				require.Equal(t, net.JoinHostPort(tc.fallback, port), stats.Last.Remote)
			} else {
				require.Empty(t, stats.Last.PrimaryErr)
			}
		})
	}
}

// A caller that gave up must not be dialled further: the fallback is for
// a broken FQDN, not for a cancelled request.
func TestCancelledDialDoesNotFallBack(t *testing.T) {
	t.Parallel()
	env := setup(t)
	var s seen
	port := env.serve(t, "127.0.0.1:0", s.handler(okJSON), false, 0)
	c := env.client(t, "https://"+engineName+":"+port, "127.0.0.1", env.caPEM)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.dialer.DialContext(ctx, "tcp", net.JoinHostPort(engineName, port))
	require.ErrorIs(t, err, context.Canceled)
	stats := c.Dials()
	require.Equal(t, uint64(1), stats.Failed)
	require.Equal(t, uint64(0), stats.Fallback)
}

// The fallback IP belongs to the Engine's FQDN; another host (a realtime
// route may name one) never reaches it.
func TestFallbackOnlyForTheEngineHost(t *testing.T) {
	t.Parallel()
	env := setup(t)
	var s seen
	port := env.serve(t, "127.0.0.1:0", s.handler(okJSON), false, 0)
	c := env.client(t, "https://"+engineName+":"+port, "127.0.0.1", env.caPEM)
	_, err := c.dialer.DialContext(context.Background(), "tcp", net.JoinHostPort("worker.invalid", port))
	var dnsErr *net.DNSError
	require.True(t, errors.As(err, &dnsErr), "got %v", err)
	require.Equal(t, DialStats{}, c.Dials())
}
