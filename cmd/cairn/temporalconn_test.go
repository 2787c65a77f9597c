package main

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	"github.com/cairn-rmm/cairn/internal/testpki"
)

var quietLog = slog.New(slog.DiscardHandler)

// Not parallel: t.Setenv.
func TestTemporalConnectionSettings(t *testing.T) {
	for _, k := range []string{"TEMPORAL_ADDRESS", "TEMPORAL_TLS", "TEMPORAL_TLS_CERT", "TEMPORAL_TLS_KEY", "TEMPORAL_TLS_CA",
		"TEMPORAL_TLS_SERVER_NAME", "TEMPORAL_API_KEY", "TEMPORAL_API_KEY_FILE", "TEMPORAL_API_KEY_PLAINTEXT", "CAIRN_TEMPORAL_UI_CODEC_ENDPOINT"} {
		t.Setenv(k, "")
	}
	c, err := loadTestConfig(t)
	require.NoError(t, err)
	require.Equal(t, temporalConn{}, c.Temporal)
	require.False(t, c.Temporal.tlsOn())
	require.Empty(t, c.TemporalUICodecEndpoint)

	t.Setenv("TEMPORAL_ADDRESS", "temporal.internal:7233")
	t.Setenv("TEMPORAL_TLS_CERT", "/etc/cairn/temporal.pem")
	t.Setenv("TEMPORAL_TLS_KEY", "/etc/cairn/temporal-key.pem")
	t.Setenv("TEMPORAL_TLS_CA", "/etc/cairn/temporal-ca.pem")
	t.Setenv("TEMPORAL_TLS_SERVER_NAME", "temporal.internal")
	c, err = loadTestConfig(t)
	require.NoError(t, err)
	require.Equal(t, temporalConn{CertFile: "/etc/cairn/temporal.pem", KeyFile: "/etc/cairn/temporal-key.pem",
		CAFile: "/etc/cairn/temporal-ca.pem", ServerName: "temporal.internal"}, c.Temporal)
	require.True(t, c.Temporal.tlsOn())

	c, err = loadTestConfig(t, "-temporal-tls-cert", "/run/a.pem", "-temporal-tls-key", "/run/a-key.pem", "-temporal-tls-server-name", "t2")
	require.NoError(t, err)
	require.Equal(t, "/run/a.pem", c.Temporal.CertFile, "a flag overrides the environment")
	require.Equal(t, "t2", c.Temporal.ServerName)

	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"cert without key": {[]string{"-temporal-tls-key", ""}, "TEMPORAL_TLS_CERT, TEMPORAL_TLS_KEY"},
		"key without cert": {[]string{"-temporal-tls-cert", ""}, "TEMPORAL_TLS_CERT, TEMPORAL_TLS_KEY"},
		"embedded server":  {[]string{"-temporal-address", ""}, "TEMPORAL_ADDRESS, which is empty"},
		"codec not a URL":  {[]string{"-temporal-ui-codec-endpoint", "codec.local"}, "CAIRN_TEMPORAL_UI_CODEC_ENDPOINT"},
	} {
		_, err := loadTestConfig(t, tc.args...)
		require.ErrorContains(t, err, tc.want, name)
	}

	for _, k := range []string{"TEMPORAL_TLS_CERT", "TEMPORAL_TLS_KEY", "TEMPORAL_TLS_CA", "TEMPORAL_TLS_SERVER_NAME"} {
		t.Setenv(k, "")
	}
	// An API key implies TLS, unless plain text is allowed in so many words.
	t.Setenv("TEMPORAL_API_KEY", "k-123")
	c, err = loadTestConfig(t)
	require.NoError(t, err)
	require.Equal(t, "k-123", c.Temporal.APIKey)
	require.True(t, c.Temporal.tlsOn(), "an API key implies TLS")
	c, err = loadTestConfig(t, "-temporal-api-key-plaintext")
	require.NoError(t, err)
	require.False(t, c.Temporal.tlsOn())
	t.Setenv("TEMPORAL_API_KEY_PLAINTEXT", "1")
	c, err = loadTestConfig(t)
	require.NoError(t, err)
	require.False(t, c.Temporal.tlsOn())
	c, err = loadTestConfig(t, "-temporal-tls")
	require.NoError(t, err)
	require.True(t, c.Temporal.tlsOn(), "TLS asked for stays on")
	_, err = loadTestConfig(t, "-temporal-api-key-file", "/run/key")
	require.ErrorContains(t, err, "not both")
	require.NotContains(t, err.Error(), "k-123")

	t.Setenv("TEMPORAL_API_KEY", "")
	t.Setenv("TEMPORAL_API_KEY_PLAINTEXT", "")
	t.Setenv("TEMPORAL_TLS", "1")
	t.Setenv("CAIRN_TEMPORAL_UI_CODEC_ENDPOINT", "https://codec.example.test/codec")
	c, err = loadTestConfig(t)
	require.NoError(t, err)
	require.True(t, c.Temporal.tlsOn())
	require.Equal(t, "https://codec.example.test/codec", c.TemporalUICodecEndpoint)
}

// The files are read before anything starts; a bad one is refused with the
// setting and the file named, and never its content.
func TestTemporalConnectionFiles(t *testing.T) {
	t.Parallel()
	ca := testpki.NewCA(t, "temporal")
	pair := ca.Client(t, "engine", "cairn-engine")
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.pem")
	require.NoError(t, os.WriteFile(garbage, []byte("not a pem file at all"), 0o600))
	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(empty, []byte(" \n"), 0o600))
	keyPEM, err := os.ReadFile(pair.KeyFile)
	require.NoError(t, err)
	missing := filepath.Join(dir, "missing.pem")
	other := testpki.NewCA(t, "other").Client(t, "other", "x")

	for name, tc := range map[string]struct {
		conn temporalConn
		want string
	}{
		"cert unreadable":      {temporalConn{CertFile: missing, KeyFile: pair.KeyFile}, "TEMPORAL_TLS_CERT"},
		"key unreadable":       {temporalConn{CertFile: pair.CertFile, KeyFile: missing}, "TEMPORAL_TLS_KEY"},
		"cert and key swapped": {temporalConn{CertFile: pair.KeyFile, KeyFile: pair.CertFile}, "does not start with a PEM certificate"},
		"key not PEM":          {temporalConn{CertFile: pair.CertFile, KeyFile: garbage}, "does not start with a PEM private key"},
		"key of another cert":  {temporalConn{CertFile: pair.CertFile, KeyFile: other.KeyFile}, "does not match"},
		"CA unreadable":        {temporalConn{CAFile: missing}, "TEMPORAL_TLS_CA"},
		"CA not PEM":           {temporalConn{CAFile: garbage}, "holds no PEM certificate"},
		"API key file missing": {temporalConn{APIKeyFile: missing}, "TEMPORAL_API_KEY_FILE"},
		"API key file empty":   {temporalConn{APIKeyFile: empty}, "is empty"},
	} {
		_, _, err := tc.conn.connection(quietLog)
		require.ErrorContains(t, err, tc.want, name)
		require.NotContains(t, err.Error(), string(keyPEM[30:60]), name)
	}

	opts, creds, err := temporalConn{CertFile: pair.CertFile, KeyFile: pair.KeyFile, CAFile: ca.CertFile, ServerName: "temporal.test"}.connection(quietLog)
	require.NoError(t, err)
	require.Nil(t, creds)
	require.NotNil(t, opts.TLS)
	require.Equal(t, "temporal.test", opts.TLS.ServerName)
	require.NotNil(t, opts.TLS.RootCAs)
	require.Equal(t, uint16(tls.VersionTLS12), opts.TLS.MinVersion)
	cert, err := opts.TLS.GetClientCertificate(&tls.CertificateRequestInfo{})
	require.NoError(t, err)
	require.Equal(t, pair.Cert.SerialNumber, cert.Leaf.SerialNumber)

	// An API key alone: TLS with the system roots, and the key sent.
	opts, creds, err = temporalConn{APIKey: "k"}.connection(quietLog)
	require.NoError(t, err)
	require.NotNil(t, opts.TLS)
	require.NotNil(t, creds)
	// Allowed in plain text: no TLS.
	opts, creds, err = temporalConn{APIKey: "k", APIKeyPlaintext: true}.connection(quietLog)
	require.NoError(t, err)
	require.Nil(t, opts.TLS)
	require.NotNil(t, creds)
}

// touch gives path a modification time apart from the last write's: a
// real rotation comes seconds or days after the previous one, while two
// writes in one test can share a coarse kernel timestamp.
func touch(t *testing.T, path string, at time.Time) {
	t.Helper()
	require.NoError(t, os.Chtimes(path, at, at))
}

// A rotated client certificate is used at the next handshake, without a
// restart; a rotation that does not load keeps the previous certificate.
func TestTemporalClientCertificateReloads(t *testing.T) {
	t.Parallel()
	ca := testpki.NewCA(t, "temporal")
	first := ca.Client(t, "engine", "cairn-engine")
	opts, _, err := temporalConn{CertFile: first.CertFile, KeyFile: first.KeyFile}.connection(quietLog)
	require.NoError(t, err)
	get := func() *tls.Certificate {
		cert, err := opts.TLS.GetClientCertificate(&tls.CertificateRequestInfo{})
		require.NoError(t, err)
		return cert
	}
	require.Equal(t, first.Cert.SerialNumber, get().Leaf.SerialNumber)
	require.Same(t, get(), get(), "an unchanged pair is not read again")

	second := ca.Client(t, "engine", "cairn-engine")
	require.Equal(t, first.CertFile, second.CertFile)
	at := time.Now().Add(time.Minute)
	touch(t, second.CertFile, at)
	touch(t, second.KeyFile, at)
	require.Equal(t, second.Cert.SerialNumber, get().Leaf.SerialNumber, "the rotated certificate is sent")

	// Half a rotation: a new certificate whose key is not there yet.
	keep, err := os.ReadFile(second.KeyFile)
	require.NoError(t, err)
	third := ca.Client(t, "engine", "cairn-engine")
	require.NoError(t, os.WriteFile(third.KeyFile, keep, 0o600))
	touch(t, third.CertFile, at.Add(time.Minute))
	require.Equal(t, second.Cert.SerialNumber, get().Leaf.SerialNumber, "a pair that does not match keeps the previous one")
	require.NoError(t, os.Remove(third.KeyFile))
	require.Equal(t, second.Cert.SerialNumber, get().Leaf.SerialNumber, "a missing key keeps the previous one")

	fourth := ca.Client(t, "engine", "cairn-engine")
	touch(t, fourth.CertFile, at.Add(2*time.Minute))
	touch(t, fourth.KeyFile, at.Add(2*time.Minute))
	require.Equal(t, fourth.Cert.SerialNumber, get().Leaf.SerialNumber, "the completed rotation is sent")
}

// TEMPORAL_API_KEY_FILE is read again when it changes.
func TestTemporalAPIKeyFileReloads(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "api-key")
	require.NoError(t, os.WriteFile(file, []byte("first-key\n"), 0o600))
	r := &apiKeyReloader{file: file, log: quietLog}
	require.NoError(t, r.load())
	require.Equal(t, "first-key", r.key())

	require.NoError(t, os.WriteFile(file, []byte("second-key\n"), 0o600))
	touch(t, file, time.Now().Add(time.Minute))
	require.Equal(t, "second-key", r.key())

	require.NoError(t, os.WriteFile(file, nil, 0o600))
	touch(t, file, time.Now().Add(2*time.Minute))
	require.Equal(t, "second-key", r.key(), "an emptied file keeps the previous key")

	// The credentials the client gets read through the same reloader.
	_, creds, err := temporalConn{APIKeyFile: file, APIKeyPlaintext: true}.connection(quietLog)
	require.Error(t, err, "an empty key file is refused at start")
	require.Nil(t, creds)
	require.NoError(t, os.WriteFile(file, []byte("third-key"), 0o600))
	_, creds, err = temporalConn{APIKeyFile: file, APIKeyPlaintext: true}.connection(quietLog)
	require.NoError(t, err)
	require.NotNil(t, creds)
}

// fakeFrontend is a TLS gRPC server answering what the client's health
// check asks (system info, gRPC health), recording each request's
// authorization header.
type fakeFrontend struct {
	workflowservice.UnimplementedWorkflowServiceServer
	mu   sync.Mutex
	auth []string
}

func (*fakeFrontend) GetSystemInfo(context.Context, *workflowservice.GetSystemInfoRequest) (*workflowservice.GetSystemInfoResponse, error) {
	return &workflowservice.GetSystemInfoResponse{}, nil
}

func (f *fakeFrontend) lastAuth() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.auth) == 0 {
		return ""
	}
	return f.auth[len(f.auth)-1]
}

func startFakeFrontend(t *testing.T, ca *testpki.CA) (*fakeFrontend, string) {
	t.Helper()
	pair := ca.Server(t, "fake-frontend", "127.0.0.1")
	cert, err := tls.LoadX509KeyPair(pair.CertFile, pair.KeyFile)
	require.NoError(t, err)
	f := &fakeFrontend{}
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})),
		grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
			md, _ := metadata.FromIncomingContext(ctx)
			f.mu.Lock()
			f.auth = append(f.auth, strings.Join(md.Get("authorization"), ","))
			f.mu.Unlock()
			return next(ctx, req)
		}))
	workflowservice.RegisterWorkflowServiceServer(srv, f)
	hs := health.NewServer()
	hs.SetServingStatus("temporal.api.workflowservice.v1.WorkflowService", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(srv, hs)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return f, ln.Addr().String()
}

// The API key reaches the frontend as a bearer token over TLS, and a
// rotated key file is sent from the next request on.
func TestTemporalAPIKeyReachesTheFrontend(t *testing.T) {
	t.Parallel()
	ca := testpki.NewCA(t, "temporal")
	front, addr := startFakeFrontend(t, ca)
	file := filepath.Join(t.TempDir(), "api-key")
	require.NoError(t, os.WriteFile(file, []byte("first-key\n"), 0o600))

	opts, creds, err := temporalConn{APIKeyFile: file, CAFile: ca.CertFile}.connection(quietLog)
	require.NoError(t, err)
	require.NotNil(t, opts.TLS, "an API key implies TLS")
	c, err := client.NewLazyClient(client.Options{HostPort: addr, ConnectionOptions: opts, Credentials: creds, Logger: nopSDKLogger{}})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	_, err = c.CheckHealth(context.Background(), &client.CheckHealthRequest{})
	require.NoError(t, err)
	require.Equal(t, "Bearer first-key", front.lastAuth())

	require.NoError(t, os.WriteFile(file, []byte("second-key\n"), 0o600))
	touch(t, file, time.Now().Add(time.Minute))
	_, err = c.CheckHealth(context.Background(), &client.CheckHealthRequest{})
	require.NoError(t, err)
	require.Equal(t, "Bearer second-key", front.lastAuth(), "the rotated key is sent without a restart")

	// A frontend whose certificate the CA does not vouch for gets nothing.
	_, otherAddr := startFakeFrontend(t, testpki.NewCA(t, "impostor"))
	c2, err := client.NewLazyClient(client.Options{HostPort: otherAddr, ConnectionOptions: opts, Credentials: creds, Logger: nopSDKLogger{}})
	require.NoError(t, err)
	t.Cleanup(c2.Close)
	_, err = c2.CheckHealth(context.Background(), &client.CheckHealthRequest{})
	require.ErrorContains(t, err, "certificate")
}

type nopSDKLogger struct{}

func (nopSDKLogger) Debug(string, ...any) {}
func (nopSDKLogger) Info(string, ...any)  {}
func (nopSDKLogger) Warn(string, ...any)  {}
func (nopSDKLogger) Error(string, ...any) {}
