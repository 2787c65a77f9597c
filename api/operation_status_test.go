package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/runtime"
)

// heldAgent is a test agent whose software refresh answers only once the
// test releases it, and whose service actions always fail as not found:
// operations that outlive the request that started them.
type heldAgent struct {
	*testAgent
	release chan struct{}
}

func (f *fixture) heldAgent(t *testing.T, admin string, site int64, hostname string) *heldAgent {
	t.Helper()
	a := f.enrolled(t, admin, site, hostname)
	h := &heldAgent{testAgent: a, release: make(chan struct{})}
	handlers := runtime.NewHandlers()
	require.NoError(t, handlers.Register(proto.EventSoftwareRefresh, func(ctx context.Context, _ runtime.Caller, _ json.RawMessage) (any, error) {
		select {
		case <-h.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return proto.SoftwareRefreshResult{CollectedAt: time.Now().UTC(),
			Software: []proto.Software{{Name: "held-package", Version: "1.0", Source: "dpkg"}}}, nil
	}))
	require.NoError(t, handlers.Register(proto.EventServiceControl, func(context.Context, runtime.Caller, json.RawMessage) (any, error) {
		<-h.release
		return nil, &proto.Error{Code: proto.CodeOpNotFound, Message: "no such service"}
	}))
	conn := a.connect(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); conn.CloseNow(); <-done })
	go func() {
		defer close(done)
		serveSocketSeeing(ctx, conn, handlers, nil, nil)
	}()
	return h
}

// doPrefer is f.do with a Prefer header.
func (f *fixture) doPrefer(t *testing.T, method, path, token, prefer string, body any) response {
	t.Helper()
	return f.untilNotBusy(t, func() response {
		var b []byte
		if body != nil {
			var err error
			b, err = json.Marshal(body)
			require.NoError(t, err)
		}
		req, err := http.NewRequest(method, f.url+path, bytes.NewReader(b))
		require.NoError(t, err)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Prefer", prefer)
		return do(t, req)
	})
}

func TestOperationOutlivesItsRequest(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	site := f.createSite(t, admin, "opstat")
	other := f.createSite(t, admin, "opstatother")
	h := f.heldAgent(t, admin, site, "opstat-01")

	r := f.doPrefer(t, "POST", "/api/device/software/opstat-01/refresh", admin, "respond-async, wait=0", nil)
	require.Equal(t, http.StatusAccepted, r.Status, r.Raw)
	require.Equal(t, "wait=0", r.Header.Get("Preference-Applied"))
	id := r.Body["operation_id"].(string)
	url := "/api/operations/" + id
	require.Equal(t, url, r.Header.Get("Location"))
	require.Equal(t, url, r.Body["url"])
	require.Equal(t, "running", r.Body["status"])

	// While it runs, the workflow itself answers where it is.
	require.Eventually(t, func() bool {
		s := f.do(t, "GET", url, admin, nil)
		return s.Status == 200 && s.Body["status"] == "running" && s.Body["phase"] == "waiting_for_agent"
	}, time.Minute, 50*time.Millisecond)

	t.Run("out of scope answers as missing", func(t *testing.T) {
		op := f.scopedOperatorOf(t, admin, "opstat-outsider", other)
		r := f.do(t, "GET", url, op, nil)
		require.Equal(t, 404, r.Status, r.Raw)
		require.Equal(t, f.do(t, "GET", "/api/operations/"+uuid.NewString(), op, nil).Body, r.Body)
	})
	t.Run("not an operation ID", func(t *testing.T) {
		r := f.do(t, "GET", "/api/operations/not-an-id", admin, nil)
		require.Equal(t, 400, r.Status, r.Raw)
		require.Equal(t, "validation_failed", r.Body["error"])
		require.NotEmpty(t, r.field("operation_id"))
	})

	failed := f.doPrefer(t, "POST", "/api/device/services/opstat-01/action", admin, "wait=0", map[string]any{"name": "cron", "action": "start"})
	require.Equal(t, http.StatusAccepted, failed.Status, failed.Raw)

	close(h.release)
	var done response
	require.Eventually(t, func() bool {
		done = f.do(t, "GET", url, admin, nil)
		return done.Body["status"] != "running"
	}, time.Minute, 50*time.Millisecond)
	require.Equal(t, "completed", done.Body["status"], done.Raw)
	require.NotEmpty(t, done.Body["finished_at"])
	require.NotContains(t, done.Body, "phase", "an ended operation is read from PostgreSQL")
	require.Equal(t, "software_refresh", done.Body["kind"])
	require.Equal(t, "opstat-01", done.Body["hostname"])
	require.Equal(t, h.guid, done.Body["device_guid"])

	require.Eventually(t, func() bool {
		done = f.do(t, "GET", failed.Body["url"].(string), admin, nil)
		return done.Body["status"] != "running"
	}, time.Minute, 50*time.Millisecond)
	require.Equal(t, "failed", done.Body["status"], done.Raw)
	require.Equal(t, proto.CodeOpNotFound, done.Body["error"])

	t.Run("an operation that ends within the wait answers it", func(t *testing.T) {
		r := f.doPrefer(t, "POST", "/api/device/software/opstat-01/refresh", admin, "wait=50", nil)
		require.Equal(t, 200, r.Status, r.Raw)
		require.Equal(t, "wait=50", r.Header.Get("Preference-Applied"))
		require.Equal(t, 1.0, r.Body["software_count"])
		// A wait beyond the cap is applied as the cap; no Prefer, none applied.
		r = f.doPrefer(t, "POST", "/api/device/software/opstat-01/refresh", admin, "wait=3600", nil)
		require.Equal(t, 200, r.Status, r.Raw)
		require.Equal(t, "wait=55", r.Header.Get("Preference-Applied"))
		r = f.do(t, "POST", "/api/device/software/opstat-01/refresh", admin, nil)
		require.Equal(t, 200, r.Status, r.Raw)
		require.Empty(t, r.Header.Get("Preference-Applied"))
	})
}
