package api_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/smtptest"
	"github.com/cairn-rmm/cairn/internal/watchdogs"
)

// testHook records the webhook POSTs it receives.
type testHook struct {
	mu     sync.Mutex
	heads  []http.Header
	bodies []string
	srv    *httptest.Server
}

func newTestHook(t *testing.T) *testHook {
	h := &testHook{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.heads, h.bodies = append(h.heads, r.Header.Clone()), append(h.bodies, string(b))
		h.mu.Unlock()
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *testHook) count() int { h.mu.Lock(); defer h.mu.Unlock(); return len(h.bodies) }

// webhookChannel is a webhook channel allowed to reach the test
// receivers on 127.0.0.1 (by default a webhook reaches no loopback or
// private address).
func webhookChannel(name, url string) map[string]any {
	return map[string]any{"name": name, "kind": "webhook", "webhook": map[string]any{"url": url,
		"allow_private_cidrs": []string{"127.0.0.1/32"}}, "secret": "hook-secret-1"}
}

func TestWatchdogNotificationRoutes(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	site := f.createSite(t, admin, "wdn-a")
	op := f.operator(t, "wdn-op")

	// Admins only.
	for _, r := range []response{
		f.do(t, "GET", "/api/watchdogs/channels", op, nil),
		f.do(t, "POST", "/api/watchdogs/channels", op, webhookChannel("x", "https://example.test/h")),
		f.do(t, "GET", "/api/watchdogs/maintenance-windows", op, nil),
	} {
		require.Equal(t, 403, r.Status, r.Raw)
	}

	for _, c := range []struct {
		field string
		body  map[string]any
	}{
		{"kind", with(webhookChannel("x", "https://example.test/h"), map[string]any{"kind": "pager"})},
		{"name", with(webhookChannel("", "https://example.test/h"), nil)},
		{"webhook.url", webhookChannel("x", "file:///etc/passwd")},
		{"secret", with(webhookChannel("x", "https://example.test/h"), map[string]any{"secret": nil})},
		{"min_severity", with(webhookChannel("x", "https://example.test/h"), map[string]any{"min_severity": "panic"})},
		{"repeat_minutes", with(webhookChannel("x", "https://example.test/h"), map[string]any{"repeat_minutes": 100000})},
		{"site_ids", with(webhookChannel("x", "https://example.test/h"), map[string]any{"site_ids": []int64{987654}})},
		{"email.to", map[string]any{"name": "m", "kind": "email", "email": map[string]any{"host": "smtp.example.test", "from": "a@example.test"}}},
	} {
		r := f.do(t, "POST", "/api/watchdogs/channels", admin, c.body)
		require.Equal(t, 400, r.Status, "%s: %s", c.field, r.Raw)
		require.Equal(t, "validation_failed", r.Body["error"], c.field)
		require.NotEmpty(t, r.field(c.field), "%s: %s", c.field, r.Raw)
	}
	require.Empty(t, f.do(t, "GET", "/api/watchdogs/channels", admin, nil).Body["channels"], "nothing half-saved")

	c := f.do(t, "POST", "/api/watchdogs/channels", admin, with(webhookChannel("ops", "https://example.test/h"),
		map[string]any{"site_ids": []int64{site}, "min_severity": "warning", "repeat_minutes": 15}))
	require.Equal(t, 201, c.Status, c.Raw)
	require.NotContains(t, c.Raw, "hook-secret-1", "the secret is never answered")
	require.Equal(t, true, c.Body["has_secret"])
	id := int64(c.Body["id"].(float64))
	one := fmt.Sprintf("/api/watchdogs/channels/%d", id)
	// An update without a secret keeps it; the kind cannot change.
	u := f.do(t, "PUT", one, admin, map[string]any{"name": "ops", "kind": "webhook", "webhook": map[string]any{"url": "https://example.test/2"}})
	require.Equal(t, 200, u.Status, u.Raw)
	require.Equal(t, true, u.Body["has_secret"])
	require.EqualValues(t, 0, u.Body["repeat_minutes"])
	k := f.do(t, "PUT", one, admin, map[string]any{"name": "ops", "kind": "email", "email": map[string]any{"host": "h", "from": "a@b.test", "to": []string{"c@d.test"}}})
	require.Equal(t, 400, k.Status, k.Raw)
	require.NotEmpty(t, k.field("kind"))
	g := f.do(t, "GET", one, admin, nil)
	require.Equal(t, 200, g.Status, g.Raw)
	require.NotContains(t, g.Raw, "hook-secret-1")
	require.Equal(t, "https://example.test/2", g.Body["webhook"].(map[string]any)["url"])
	require.Equal(t, 404, f.do(t, "GET", "/api/watchdogs/channels/999999", admin, nil).Status)

	// Maintenance windows.
	for _, c := range []struct {
		field string
		body  map[string]any
	}{
		{"site_id", map[string]any{"name": "w", "weekdays": []int{1}, "start_minute": 0, "duration_minutes": 60}},
		{"weekdays", map[string]any{"name": "w", "site_id": site, "weekdays": []int{7}, "start_minute": 0, "duration_minutes": 60}},
		{"duration_minutes", map[string]any{"name": "w", "site_id": site, "weekdays": []int{1}, "start_minute": 0, "duration_minutes": 0}},
		{"time_zone", map[string]any{"name": "w", "site_id": site, "weekdays": []int{1}, "duration_minutes": 60, "time_zone": "Mars/Olympus"}},
		{"guid", map[string]any{"name": "w", "guid": "nope", "weekdays": []int{1}, "duration_minutes": 60}},
	} {
		r := f.do(t, "POST", "/api/watchdogs/maintenance-windows", admin, c.body)
		require.Equal(t, 400, r.Status, "%s: %s", c.field, r.Raw)
		require.NotEmpty(t, r.field(c.field), "%s: %s", c.field, r.Raw)
	}
	w := f.do(t, "POST", "/api/watchdogs/maintenance-windows", admin, map[string]any{"name": "patch night", "site_id": site,
		"weekdays": []int{0, 6}, "start_minute": 120, "duration_minutes": 180, "time_zone": "Europe/Paris"})
	require.Equal(t, 201, w.Status, w.Raw)
	wid := int64(w.Body["id"].(float64))
	list := f.do(t, "GET", "/api/watchdogs/maintenance-windows", admin, nil)
	require.Len(t, list.Body["windows"], 1)
	require.Equal(t, 204, f.do(t, "DELETE", fmt.Sprintf("/api/watchdogs/maintenance-windows/%d", wid), admin, nil).Status)
	require.Equal(t, 204, f.do(t, "DELETE", one, admin, nil).Status)
	require.Equal(t, 404, f.do(t, "DELETE", one, admin, nil).Status)
}

// TestWatchdogNotifiesWebhookAndEmail: an incident's workflow sends its
// notification once to a signed webhook and once by email over STARTTLS;
// the deliveries are listed on the incident.
func TestWatchdogNotifiesWebhookAndEmail(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	site := f.createSite(t, admin, "wdn-b")
	a := f.enrolled(t, admin, site, "wdn-01")
	f.reportHeartbeat(t, a, 97)
	hook := newTestHook(t)
	mail := smtptest.Start(t, smtptest.Options{})
	hc := f.do(t, "POST", "/api/watchdogs/channels", admin, webhookChannel("hook", hook.srv.URL))
	require.Equal(t, 201, hc.Status, hc.Raw)
	mc := f.do(t, "POST", "/api/watchdogs/channels", admin, map[string]any{"name": "mail", "kind": "email",
		"email": map[string]any{"host": mail.Host, "port": mail.Port, "username": "relay", "from": "cairn@example.test",
			"to": []string{"ops@example.test"}, "ca_pem": mail.CAPEM}, "secret": "relay-password"})
	require.Equal(t, 201, mc.Status, mc.Raw)
	require.NotContains(t, mc.Raw, "relay-password")
	// A channel for other sites is not notified.
	other := f.createSite(t, admin, "wdn-c")
	oc := f.do(t, "POST", "/api/watchdogs/channels", admin, with(webhookChannel("elsewhere", hook.srv.URL), map[string]any{"site_ids": []int64{other}}))
	require.Equal(t, 201, oc.Status, oc.Raw)

	c := f.do(t, "POST", "/api/watchdogs", admin, cpuWatchdog("CPU hot"))
	require.Equal(t, 201, c.Status, c.Raw)
	require.Eventually(t, func() bool { return hook.count() == 1 && len(mail.Messages()) == 1 }, time.Minute, 100*time.Millisecond)

	inc := incidentsOf(f.queue(t, admin, "?state=Open"))
	require.Len(t, inc, 1)
	incID := int64(inc[0]["id"].(float64))
	hook.mu.Lock()
	head, body := hook.heads[0], hook.bodies[0]
	hook.mu.Unlock()
	require.Equal(t, watchdogs.Sign("hook-secret-1", head.Get(watchdogs.HeaderTimestamp), []byte(body)), head.Get(watchdogs.HeaderSignature))
	require.Equal(t, fmt.Sprintf("%d-0-%d", incID, int64(hc.Body["id"].(float64))), head.Get(watchdogs.HeaderDelivery))
	require.Contains(t, body, `"title":"CPU hot on wdn-01"`)
	m := mail.Messages()[0]
	require.True(t, m.TLS)
	require.Equal(t, "relay-password", m.Password)
	require.Contains(t, m.Data, "CPU hot on wdn-01")

	d := f.do(t, "GET", fmt.Sprintf("/api/watchdogs/incidents/%d/deliveries", incID), admin, nil)
	require.Equal(t, 200, d.Status, d.Raw)
	require.Eventually(t, func() bool {
		d = f.do(t, "GET", fmt.Sprintf("/api/watchdogs/incidents/%d/deliveries", incID), admin, nil)
		ds := d.Body["deliveries"].([]any)
		return len(ds) == 2 && ds[0].(map[string]any)["status"] == "sent" && ds[1].(map[string]any)["status"] == "sent"
	}, time.Minute, 100*time.Millisecond, "%s", d.Raw)
	require.NotContains(t, d.Raw, "relay-password")
	require.Equal(t, 1, hook.count(), "sent once, the other site's channel not at all")
}

// TestWatchdogRunsAnAssemblyToStartAService: a real agent (the script
// runner of agent/automation on the agent's socket) runs the watchdog's
// assembly, which starts a stopped init-script service; the next
// evaluation sees it running and resolves the incident. The script runs
// as the test's user: starting a system service needs root, so the
// service is an init script of the test's own (as in
// TestWatchdogRestartsAStoppedService).
func TestWatchdogRunsAnAssemblyToStartAService(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	site := f.createSite(t, admin, "wdn-asm")
	s := f.scriptAgent(t, admin, site, "wdn-asm-01")
	dir := t.TempDir()
	initScript(t, dir, "cairn-asm")
	script := filepath.Join(dir, "cairn-asm")
	require.NoError(t, exec.Command(script, "stop").Run())
	t.Cleanup(func() { _ = exec.Command(script, "stop").Run() })
	reportServices(t, s.testAgent, "h1", proto.Service{Name: "cairn-asm", State: "stopped"})
	// Its services count only while it reports: rules on a device's
	// current state are unknown while it is offline.
	f.reportHeartbeat(t, s.testAgent, 10)

	asm := f.do(t, "POST", "/api/assemblies", admin, map[string]any{"name": "Start cairn-asm", "kind": "script", "language": "sh",
		"body": fmt.Sprintf("%q start && %q status && echo started", script, script)})
	require.Equal(t, 201, asm.Status, asm.Raw)
	asmID := int64(asm.Body["id"].(float64))
	policy := map[string]any{"name": "cairn-asm down", "severity": "critical", "site_ids": []int64{site},
		"targets": map[string]any{"kind": "devices", "device_guids": []string{s.guid}},
		"rules":   []map[string]any{{"subject": "service", "operator": "not_running", "target": "cairn-asm"}},
		"actions": []map[string]any{{"type": "run_assembly", "assembly_id": asmID}}}
	bad := f.do(t, "POST", "/api/watchdogs", admin, with(policy, map[string]any{"actions": []map[string]any{{"type": "run_assembly", "assembly_id": 987654}}}))
	require.Equal(t, 400, bad.Status, bad.Raw)
	require.NotEmpty(t, bad.field("actions[0].assembly_id"))

	c := f.do(t, "POST", "/api/watchdogs", admin, policy)
	require.Equal(t, 201, c.Status, c.Raw)
	id := int64(c.Body["id"].(float64))
	require.NotEmpty(t, c.Body["actions"].([]any)[0].(map[string]any)["assembly_sha256"], "the body's hash is pinned at save")

	var inc map[string]any
	require.Eventually(t, func() bool {
		list := incidentsOf(f.queue(t, admin, ""))
		if len(list) == 1 && len(list[0]["outcomes"].([]any)) == 1 {
			inc = list[0]
			return true
		}
		return false
	}, time.Minute, 100*time.Millisecond)
	outcome := inc["outcomes"].([]any)[0].(map[string]any)
	require.Equal(t, "succeeded", outcome["status"], "%v", outcome)
	require.NoError(t, exec.Command(script, "status").Run(), "the assembly started the service")
	run := f.do(t, "GET", "/api/scripts/quick_run/"+outcome["run_id"].(string), admin, nil)
	require.Equal(t, 200, run.Status, run.Raw)
	require.Contains(t, run.Raw, "started")

	// The agent's next inventory says it runs: the next evaluation (the
	// save's) resolves the incident, and nothing runs again.
	reportServices(t, s.testAgent, "h2", proto.Service{Name: "cairn-asm", State: "running"})
	f.reportHeartbeat(t, s.testAgent, 10)
	u := f.do(t, "PUT", fmt.Sprintf("/api/watchdogs/%d", id), admin, policy)
	require.Equal(t, 200, u.Status, u.Raw)
	require.Eventually(t, func() bool {
		return len(incidentsOf(f.queue(t, admin, "?state=Resolved"))) == 1
	}, time.Minute, 100*time.Millisecond)
	list := incidentsOf(f.queue(t, admin, "?state=Resolved"))
	require.Len(t, list[0]["outcomes"].([]any), 1, "the assembly ran once")
}

// TestWatchdogChannelTestRoute: an admin's test notification goes out
// the way an incident's does and answers its outcome; a webhook to a
// loopback address without the channel's opt-in is refused.
func TestWatchdogChannelTestRoute(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	op := f.operator(t, "wdt-op")
	hook := newTestHook(t)
	mail := smtptest.Start(t, smtptest.Options{})

	hc := f.do(t, "POST", "/api/watchdogs/channels", admin, webhookChannel("hook", hook.srv.URL))
	require.Equal(t, 201, hc.Status, hc.Raw)
	hid := int64(hc.Body["id"].(float64))
	require.Equal(t, 403, f.do(t, "POST", fmt.Sprintf("/api/watchdogs/channels/%d/test", hid), op, nil).Status, "admins only")
	require.Equal(t, 404, f.do(t, "POST", "/api/watchdogs/channels/987654/test", admin, nil).Status)

	r := f.do(t, "POST", fmt.Sprintf("/api/watchdogs/channels/%d/test", hid), admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, "delivered", r.Body["outcome"], r.Raw)
	require.Equal(t, 1, hook.count())
	hook.mu.Lock()
	head, body := hook.heads[0], hook.bodies[0]
	hook.mu.Unlock()
	require.Equal(t, "watchdog.test", head.Get(watchdogs.HeaderEvent))
	require.Equal(t, r.Body["delivery"], head.Get(watchdogs.HeaderDelivery))
	require.Equal(t, watchdogs.Sign("hook-secret-1", head.Get(watchdogs.HeaderTimestamp), []byte(body)), head.Get(watchdogs.HeaderSignature))
	require.Contains(t, body, `"test":true`)

	// Without the opt-in, loopback is refused: the outcome says so.
	nc := f.do(t, "POST", "/api/watchdogs/channels", admin, map[string]any{"name": "no opt-in", "kind": "webhook",
		"webhook": map[string]any{"url": hook.srv.URL}, "secret": "hook-secret-1"})
	require.Equal(t, 201, nc.Status, nc.Raw)
	r = f.do(t, "POST", fmt.Sprintf("/api/watchdogs/channels/%d/test", int64(nc.Body["id"].(float64))), admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, "refused", r.Body["outcome"], r.Raw)
	require.Equal(t, "notification_refused", r.Body["code"])
	require.Contains(t, r.Body["error"], "127.0.0.1")
	require.NotContains(t, r.Raw, "hook-secret-1")
	require.Equal(t, 1, hook.count())
	bad := f.do(t, "POST", "/api/watchdogs/channels", admin, with(webhookChannel("bad", hook.srv.URL),
		map[string]any{"webhook": map[string]any{"url": hook.srv.URL, "allow_private_cidrs": []string{"localhost"}}}))
	require.Equal(t, 400, bad.Status, bad.Raw)
	require.NotEmpty(t, bad.field("webhook.allow_private_cidrs[0]"), bad.Raw)

	mc := f.do(t, "POST", "/api/watchdogs/channels", admin, map[string]any{"name": "mail", "kind": "email",
		"email": map[string]any{"host": mail.Host, "port": mail.Port, "username": "relay", "from": "cairn@example.test",
			"to": []string{"ops@example.test"}, "ca_pem": mail.CAPEM}, "secret": "relay-password"})
	require.Equal(t, 201, mc.Status, mc.Raw)
	r = f.do(t, "POST", fmt.Sprintf("/api/watchdogs/channels/%d/test", int64(mc.Body["id"].(float64))), admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, "delivered", r.Body["outcome"], r.Raw)
	msgs := mail.Messages()
	require.Len(t, msgs, 1)
	require.True(t, msgs[0].TLS)
	require.Contains(t, msgs[0].Data, "[Cairn, test]")
	require.NotContains(t, r.Raw, "relay-password")
}
