package devtemporal_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/cairn-rmm/cairn/internal/devtemporal"
	"github.com/cairn-rmm/cairn/internal/testpki"
	"github.com/cairn-rmm/cairn/internal/testport"
)

var quiet = slog.New(slog.DiscardHandler)

func greet(_ workflow.Context, name string) (string, error) { return "hello " + name, nil }

// runGreeting runs greet on a worker of c and returns its result and
// workflow ID.
func runGreeting(t *testing.T, c client.Client) (string, string) {
	t.Helper()
	queue := "devtemporal-" + uuid.NewString()
	w := worker.New(c, queue, worker.Options{})
	w.RegisterWorkflow(greet)
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: queue, TaskQueue: queue}, greet, "cairn")
	require.NoError(t, err)
	var out string
	require.NoError(t, run.Get(ctx, &out))
	return out, queue
}

// dial connects to addr with tlsConf (nil: plain gRPC); Dial checks the
// server answers.
func dial(addr string, tlsConf *tls.Config) (client.Client, error) {
	return client.Dial(client.Options{HostPort: addr, Logger: nopLogger{},
		ConnectionOptions: client.ConnectionOptions{TLS: tlsConf}})
}

// clientTLS trusts ca and presents pair (none when pair is nil), whatever
// CAs the server says it accepts.
func clientTLS(t *testing.T, caFile string, pair *testpki.Pair) *tls.Config {
	t.Helper()
	pem, err := os.ReadFile(caFile)
	require.NoError(t, err)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(pem))
	c := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	if pair != nil {
		cert, err := tls.LoadX509KeyPair(pair.CertFile, pair.KeyFile)
		require.NoError(t, err)
		// Certificates would be sent only when the server names their CA.
		c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
	}
	return c
}

// requireRefused asserts the frontend turned the connection away with
// reason (the TLS alert, or gRPC's complaint at a TLS answer).
func requireRefused(t *testing.T, err error, reason, what string) {
	t.Helper()
	require.Error(t, err, what)
	// Under TLS 1.3 the client finishes its side of the handshake before
	// the server judges its certificate, so on a loaded machine its first
	// write can meet the closed connection before the alert is read.
	if msg := err.Error(); strings.Contains(msg, "broken pipe") || strings.Contains(msg, "connection reset by peer") {
		return
	}
	require.Contains(t, err.Error(), "connection error", what)
	require.Contains(t, err.Error(), reason, what)
}

// The frontend can require client certificates: a client without one, or
// with one from another CA, is refused; the right certificate runs
// workflows, and the server's own system worker and UI reach the frontend
// with theirs.
func TestFrontendRequiresClientCertificates(t *testing.T) {
	t.Parallel()
	serverCA := testpki.NewCA(t, "server")
	clientCA := testpki.NewCA(t, "clients")
	otherCA := testpki.NewCA(t, "other")
	frontend := serverCA.Server(t, "frontend", "127.0.0.1", "temporal.test")
	system := clientCA.Client(t, "system", "temporal-system")
	engine := clientCA.Client(t, "engine", "cairn-engine")
	stranger := otherCA.Client(t, "stranger", "cairn-engine")

	uiPort := testport.Free(t)
	srv, err := devtemporal.Start(devtemporal.Options{Logger: quiet, LogLevel: slog.LevelError, UIPort: uiPort,
		TLS: &devtemporal.TLS{CertFile: frontend.CertFile, KeyFile: frontend.KeyFile, ClientCAFile: clientCA.CertFile,
			RootCAFile: serverCA.CertFile, ClientCertFile: system.CertFile, ClientKeyFile: system.KeyFile}})
	require.NoError(t, err)
	t.Cleanup(srv.Stop)

	_, err = dial(srv.Address, nil)
	requireRefused(t, err, "server preface", "plain gRPC to a TLS frontend")
	_, err = dial(srv.Address, clientTLS(t, serverCA.CertFile, nil))
	requireRefused(t, err, "tls: certificate required", "TLS without a client certificate")
	_, err = dial(srv.Address, clientTLS(t, serverCA.CertFile, &stranger))
	requireRefused(t, err, "tls: unknown certificate authority", "a client certificate from another CA")

	c, err := dial(srv.Address, clientTLS(t, serverCA.CertFile, &engine))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	_, err = c.CheckHealth(context.Background(), &client.CheckHealthRequest{})
	require.NoError(t, err)
	out, _ := runGreeting(t, c)
	require.Equal(t, "hello cairn", out)

	// The UI answers from the frontend, over mTLS with the system certificate.
	require.Eventually(t, func() bool {
		res, err := http.Get(srv.UIAddress + "/api/v1/namespaces/default")
		if err != nil {
			return false
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode == http.StatusOK && len(body) > 0
	}, 2*time.Minute, 200*time.Millisecond, "the UI reaches the mTLS frontend")
}

// Without TLS the server is the plain development server it always was:
// its SQLite file keeps workflows across a restart.
func TestPlainServerKeepsItsDatabase(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "temporal.sqlite")
	opts := devtemporal.Options{DatabaseFile: file, Port: testport.Free(t), Namespace: "cairn-test",
		SearchAttributes: []string{"DeviceGUID"}, Logger: quiet, LogLevel: slog.LevelError}
	srv, err := devtemporal.Start(opts)
	require.NoError(t, err)
	c, err := client.Dial(client.Options{HostPort: srv.Address, Namespace: "cairn-test", Logger: nopLogger{}})
	require.NoError(t, err)
	out, id := runGreeting(t, c)
	require.Equal(t, "hello cairn", out)
	c.Close()
	srv.Stop()

	srv, err = devtemporal.Start(opts)
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	c, err = client.Dial(client.Options{HostPort: srv.Address, Namespace: "cairn-test", Logger: nopLogger{}})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	desc, err := c.DescribeWorkflowExecution(context.Background(), id, "")
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, desc.WorkflowExecutionInfo.Status)
}

// A TLS setting the server cannot serve is refused before anything starts.
func TestTLSOptionsChecked(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]devtemporal.TLS{
		"no key":        {CertFile: "c.pem", RootCAFile: "ca.pem"},
		"no root CA":    {CertFile: "c.pem", KeyFile: "k.pem"},
		"half a pair":   {CertFile: "c.pem", KeyFile: "k.pem", RootCAFile: "ca.pem", ClientCertFile: "cc.pem"},
		"mTLS, no pair": {CertFile: "c.pem", KeyFile: "k.pem", RootCAFile: "ca.pem", ClientCAFile: "cca.pem"},
	} {
		_, err := devtemporal.Start(devtemporal.Options{Logger: quiet, TLS: &tc})
		require.ErrorContains(t, err, "embedded Temporal TLS", name)
	}
}

type nopLogger struct{}

func (nopLogger) Debug(string, ...any) {}
func (nopLogger) Info(string, ...any)  {}
func (nopLogger) Warn(string, ...any)  {}
func (nopLogger) Error(string, ...any) {}
