package api_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-chi/chi/v5/middleware"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/devtemporal"
	"github.com/cairn-rmm/cairn/internal/testport"
	"github.com/cairn-rmm/cairn/workers"
	"github.com/cairn-rmm/cairn/workflows"
)

// Item 17: an Engine whose Temporal is away starts, reports itself ready
// but degraded, serves sign-in and agent callbacks, answers routes that
// need Temporal with 503 temporal_unavailable, and starts its workers and
// durable operations once Temporal comes (back).
func TestEngineServesWithoutTemporalAndCatchesUp(t *testing.T) {
	t.Parallel()
	f := setup(t)
	secret := f.bootstrap(t)
	admin := f.login(t, f.url, "admin", adminPassword, secret).Body["token"].(string)
	site := f.createSite(t, admin, "away")
	a := f.enrolled(t, admin, site, "away-01")

	// A second replica on the same database whose Temporal is not running.
	port := testport.Free(t)
	// Counts the gRPC attempts made on behalf of an HTTP request (its
	// context carries the request ID; the Engine's own probes do not).
	var fromRequests atomic.Int64
	count := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if middleware.GetReqID(ctx) != "" {
			fromRequests.Add(1)
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	topts := client.Options{HostPort: fmt.Sprintf("127.0.0.1:%d", port), Namespace: "default",
		Logger: quietTemporalLogger{}, ConnectionOptions: client.ConnectionOptions{
			DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(count)}}}
	b := &fixture{store: f.store, clk: f.clk, github: f.github, engineQueue: "engine-" + uniqueSlug("away"), temporal: &topts}
	b.engine = b.newEngine(t)
	b.url = b.engine.http.URL
	require.NoError(t, b.engine.cipher.Unlock(context.Background(), passphrase))

	r := b.do(t, "GET", "/ready", "", nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, "degraded", r.Body["status"])
	require.Equal(t, map[string]any{"postgres": "ok", "temporal": "unavailable", "cipher": "unlocked"}, r.Body["checks"])

	// Sign-in, heartbeats and token refresh need PostgreSQL only.
	adminB := b.login(t, b.url, "admin", adminPassword, secret).Body["token"].(string)
	a.f = b
	hb := a.device(t, "POST", proto.PathHeartbeat, proto.Heartbeat{SentAt: time.Now().UTC(), AgentVersion: "1.2.3", BootID: "boot-1",
		Metrics: proto.Metrics{LoggedInUsers: []string{}}})
	require.Equal(t, 200, hb.Status, hb.Raw)
	require.Equal(t, 200, a.doRefresh(t).Status)
	require.Equal(t, 200, a.device(t, "POST", proto.PathHeartbeat, proto.Heartbeat{SentAt: time.Now().UTC(), AgentVersion: "1.2.3",
		BootID: "boot-1", Metrics: proto.Metrics{LoggedInUsers: []string{}}}).Status, "the refreshed token works")

	// An enrollment request starts an approval workflow: not now, and
	// at once: the Engine knows Temporal is away (its health probe
	// failed), so the request makes no call to Temporal, whose client
	// would retry for 10 s before answering.
	c := b.newAgent(t, "away-02")
	code := b.enrollmentCode(t, adminB, site)
	before := fromRequests.Load() // /ready asked Temporal's health itself
	r = c.request(t, code)
	require.Equal(t, 503, r.Status, r.Raw)
	require.Equal(t, "temporal_unavailable", r.Body["error"])
	require.NotEmpty(t, r.Header.Get("Retry-After"))
	require.Equal(t, before, fromRequests.Load(), "the request called Temporal while the Engine knew it was away")

	// Temporal comes up on the address the replica was given.
	srv, err := devtemporal.Start(devtemporal.Options{Port: port, DatabaseFile: filepath.Join(t.TempDir(), "temporal.sqlite"),
		SearchAttributes: workflows.SearchAttributes, LogLevel: slog.LevelError, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	require.Eventually(t, func() bool {
		for _, st := range b.engine.mgr.Statuses() {
			if st.TaskQueue == b.engineQueue && st.State == workers.StateRunning {
				return true
			}
		}
		return false
	}, 2*time.Minute, 100*time.Millisecond, "the engine worker starts once Temporal answers")
	require.Eventually(t, func() bool {
		return b.do(t, "GET", "/ready", "", nil).Body["status"] == "ok"
	}, 2*time.Minute, 100*time.Millisecond)

	// Durable operations run again: the approval workflow goes through.
	before = fromRequests.Load()
	r = c.request(t, code)
	require.Equal(t, 202, r.Status, r.Raw)
	require.Greater(t, fromRequests.Load(), before, "the start went to Temporal")
	d := b.do(t, "POST", "/api/admin/device-approvals/"+c.approvalID+"/approve", adminB, nil)
	require.Equal(t, 200, d.Status, d.Raw)
	require.Eventually(t, func() bool {
		p := c.poll(t)
		return p.Status == 200 && p.Body["status"] == proto.ApprovalEnrolled
	}, 2*time.Minute, 200*time.Millisecond)
}

// A Temporal that answers its health check can still fail the Engine's
// set-up calls (a dev server just restarted on a loaded machine times them
// out). The Engine must start anyway, as it does when Temporal is away, and
// set up its durable side once the calls go through.
func TestEngineStartsWhenTemporalSetupFails(t *testing.T) {
	t.Parallel()
	f := setup(t)
	var failing atomic.Bool
	failing.Store(true)
	var refused atomic.Int64
	flaky := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if failing.Load() && strings.HasSuffix(method, "/ListSearchAttributes") {
			refused.Add(1)
			return status.Error(codes.DeadlineExceeded, "the set-up call timed out")
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	topts := client.Options{HostPort: temporalAddress, Namespace: "default",
		Logger: quietTemporalLogger{}, ConnectionOptions: client.ConnectionOptions{
			DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(flaky)}}}
	b := &fixture{store: f.store, clk: f.clk, github: f.github, engineQueue: "engine-" + uniqueSlug("setup"), temporal: &topts}
	b.engine = b.newEngine(t) // requires Start to succeed
	b.url = b.engine.http.URL
	require.Positive(t, refused.Load(), "the set-up was not attempted")
	engineWorker := func() string {
		for _, st := range b.engine.mgr.Statuses() {
			if st.TaskQueue == b.engineQueue {
				return st.State
			}
		}
		return ""
	}
	require.NotEqual(t, workers.StateRunning, engineWorker(), "the engine worker started without its set-up")
	require.Equal(t, 200, b.do(t, "GET", "/ready", "", nil).Status)

	// Workers run only in a process that holds the master cipher.
	require.NoError(t, b.engine.cipher.Setup(context.Background(), passphrase))
	failing.Store(false)
	require.Eventually(t, func() bool { return engineWorker() == workers.StateRunning },
		2*time.Minute, 100*time.Millisecond, "the engine worker starts once the set-up goes through")
}
