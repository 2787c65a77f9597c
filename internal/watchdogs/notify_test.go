package watchdogs_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/aegis"
	"github.com/cairn-rmm/cairn/internal/authtest"
	"github.com/cairn-rmm/cairn/internal/devicefilters"
	"github.com/cairn-rmm/cairn/internal/smtptest"
	"github.com/cairn-rmm/cairn/internal/watchdogs"
)

// hook is a test webhook receiver that answers with the statuses given,
// then 200.
type hook struct {
	mu       sync.Mutex
	statuses []int
	got      []*http.Request
	bodies   [][]byte
	srv      *httptest.Server
}

func newHook(t *testing.T, statuses ...int) *hook {
	h := &hook{statuses: statuses}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.got, h.bodies = append(h.got, r), append(h.bodies, b)
		status := http.StatusOK
		if len(h.statuses) > 0 {
			status, h.statuses = h.statuses[0], h.statuses[1:]
		}
		h.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hook) count() int { h.mu.Lock(); defer h.mu.Unlock(); return len(h.got) }

// notifySetup is setup with a cipher, a hot device on alpha and its open
// CPU incident.
func notifySetup(t *testing.T) (*fixture, int64) {
	t.Helper()
	f := cipherSetup(t)
	f.device(t, "hot", "alpha", 99, `[]`)
	w, err := f.svc.Create(context.Background(), admin, cpuPolicy("CPU"))
	require.NoError(t, err)
	res, err := f.svc.Evaluate(context.Background(), w.ID)
	require.NoError(t, err)
	require.Len(t, res.Opened, 1)
	return f, res.Opened[0]
}

// cipherSetup is setup whose service seals channel secrets.
func cipherSetup(t *testing.T) *fixture {
	t.Helper()
	f := setup(t)
	cipher := aegis.New(aegis.PGStore{Q: f.store.Queries}, authtest.CheapKDF)
	require.NoError(t, cipher.Setup(context.Background(), "correct horse battery staple"))
	filters := devicefilters.New(f.store, devicefilters.Config{OnlineWindow: 90 * time.Second})
	f.svc = watchdogs.New(f.store, filters, f.bus, watchdogs.Config{OnlineWindow: 90 * time.Second, Now: f.clk.Now, Cipher: cipher})
	return f
}

func secret(s string) *string { return &s }

// loopback opts a webhook into the test receivers on 127.0.0.1: a
// webhook may reach no loopback or private address unless its channel
// allows it.
var loopback = []string{"127.0.0.1/32"}

func (f *fixture) webhook(t *testing.T, name, url string, mod func(*watchdogs.ChannelInput)) watchdogs.Channel {
	t.Helper()
	in := watchdogs.ChannelInput{Name: name, Kind: watchdogs.ChannelWebhook, Enabled: true,
		Webhook: &watchdogs.WebhookConfig{URL: url, AllowPrivateCIDRs: loopback}, Secret: secret("s3cret-hmac-key")}
	if mod != nil {
		mod(&in)
	}
	c, err := f.svc.CreateChannel(context.Background(), "admin", in)
	require.NoError(t, err)
	return c
}

func TestWebhookIsSignedAndSentOncePerStep(t *testing.T) {
	t.Parallel()
	f, inc := notifySetup(t)
	ctx := context.Background()
	h := newHook(t)
	c := f.webhook(t, "ops hook", h.srv.URL, nil)
	raw, err := json.Marshal(c)
	require.NoError(t, err)
	require.NotContains(t, string(raw), "s3cret", "the secret is never part of the channel")
	var sealed []byte
	require.NoError(t, f.store.Pool.QueryRow(ctx, `SELECT secret_sealed FROM notification_channels WHERE id = $1`, c.ID).Scan(&sealed))
	require.NotContains(t, string(sealed), "s3cret", "the secret is sealed at rest")

	p, err := f.svc.PlanNotifications(ctx, inc, 0)
	require.NoError(t, err)
	require.True(t, p.Active)
	require.Equal(t, []int64{c.ID}, p.Channels)
	require.Zero(t, p.Next, "the channel does not repeat")

	d := watchdogs.Delivery{IncidentID: inc, Step: 0, ChannelID: c.ID}
	status, err := f.svc.Deliver(ctx, d)
	require.NoError(t, err)
	require.Equal(t, watchdogs.DeliverySent, status)
	// A retried or replayed step finds the delivery sent.
	status, err = f.svc.Deliver(ctx, d)
	require.NoError(t, err)
	require.Equal(t, watchdogs.DeliverySent, status)
	require.Equal(t, 1, h.count(), "one POST for the (incident, step, channel)")

	r, body := h.got[0], h.bodies[0]
	require.Equal(t, watchdogs.Sign("s3cret-hmac-key", r.Header.Get(watchdogs.HeaderTimestamp), body), r.Header.Get(watchdogs.HeaderSignature))
	require.Equal(t, d.ID(), r.Header.Get(watchdogs.HeaderDelivery))
	var payload watchdogs.Payload
	require.NoError(t, json.Unmarshal(body, &payload))
	require.Equal(t, watchdogs.EventIncident, payload.Type)
	require.Equal(t, inc, payload.Incident.ID)
	require.Equal(t, "host-hot", payload.Incident.Hostname)
	require.Equal(t, "CPU", payload.Incident.WatchdogName)

	// The channel was notified: the next step has nothing to send.
	p, err = f.svc.PlanNotifications(ctx, inc, 1)
	require.NoError(t, err)
	require.Empty(t, p.Channels)
}

// TestClaimedDeliveryIsNotSentAgain: an attempt that died between its
// claim and its answer (kill -9 of the worker) leaves the row 'sending';
// the retry does not send again.
func TestClaimedDeliveryIsNotSentAgain(t *testing.T) {
	t.Parallel()
	f, inc := notifySetup(t)
	ctx := context.Background()
	h := newHook(t)
	c := f.webhook(t, "ops hook", h.srv.URL, nil)
	_, err := f.store.NotificationDeliveryClaim(ctx, db.NotificationDeliveryClaimParams{IncidentID: inc, Step: 0, ChannelID: c.ID})
	require.NoError(t, err)

	status, err := f.svc.Deliver(ctx, watchdogs.Delivery{IncidentID: inc, Step: 0, ChannelID: c.ID})
	require.NoError(t, err)
	require.Equal(t, watchdogs.DeliveryAbandoned, status)
	require.Zero(t, h.count(), "nothing sent twice")
}

func TestFailedDeliveryIsRetriedAndRefusalIsFinal(t *testing.T) {
	t.Parallel()
	f, inc := notifySetup(t)
	ctx := context.Background()
	h := newHook(t, http.StatusBadGateway)
	c := f.webhook(t, "flaky", h.srv.URL, nil)
	d := watchdogs.Delivery{IncidentID: inc, Step: 0, ChannelID: c.ID}
	status, err := f.svc.Deliver(ctx, d)
	require.Error(t, err)
	require.False(t, cairn.IsCode(err, watchdogs.ECodeDeliveryRefused), "a 502 is worth retrying")
	require.Equal(t, watchdogs.DeliveryFailed, status)
	status, err = f.svc.Deliver(ctx, d)
	require.NoError(t, err)
	require.Equal(t, watchdogs.DeliverySent, status)
	row, err := f.store.NotificationDeliveryGet(ctx, db.NotificationDeliveryGetParams{IncidentID: inc, Step: 0, ChannelID: c.ID})
	require.NoError(t, err)
	require.EqualValues(t, 2, row.Attempts)
	require.Equal(t, 2, h.count())

	gone := newHook(t, http.StatusGone)
	c2 := f.webhook(t, "gone", gone.srv.URL, nil)
	_, err = f.svc.Deliver(ctx, watchdogs.Delivery{IncidentID: inc, Step: 0, ChannelID: c2.ID})
	require.True(t, cairn.IsCode(err, watchdogs.ECodeDeliveryRefused), "%v", err)
	require.NotContains(t, err.Error(), "s3cret")
}

func TestNotificationsAreRoutedBySeverityAndSite(t *testing.T) {
	t.Parallel()
	f, inc := notifySetup(t) // a warning incident on alpha
	ctx := context.Background()
	h := newHook(t)
	all := f.webhook(t, "all", h.srv.URL, nil)
	f.webhook(t, "critical only", h.srv.URL, func(in *watchdogs.ChannelInput) { in.MinSeverity = watchdogs.SeverityCritical })
	f.webhook(t, "beta only", h.srv.URL, func(in *watchdogs.ChannelInput) { in.SiteIDs = []int64{f.sites["beta"]} })
	alpha := f.webhook(t, "alpha warnings", h.srv.URL, func(in *watchdogs.ChannelInput) {
		in.SiteIDs, in.MinSeverity = []int64{f.sites["alpha"]}, watchdogs.SeverityWarning
	})
	f.webhook(t, "off", h.srv.URL, func(in *watchdogs.ChannelInput) { in.Enabled = false })
	p, err := f.svc.PlanNotifications(ctx, inc, 0)
	require.NoError(t, err)
	require.Equal(t, []int64{all.ID, alpha.ID}, p.Channels)
}

func TestNotificationsRepeatWhileOpen(t *testing.T) {
	t.Parallel()
	f, inc := notifySetup(t)
	ctx := context.Background()
	h := newHook(t)
	c := f.webhook(t, "pager", h.srv.URL, func(in *watchdogs.ChannelInput) { in.RepeatMinutes = 5 })
	p, err := f.svc.PlanNotifications(ctx, inc, 0)
	require.NoError(t, err)
	require.Equal(t, []int64{c.ID}, p.Channels)
	require.Equal(t, 5*time.Minute, p.Next)
	_, err = f.svc.Deliver(ctx, watchdogs.Delivery{IncidentID: inc, Step: 0, ChannelID: c.ID})
	require.NoError(t, err)

	// Too early: nothing yet. The deliveries' claimed_at is the
	// database's clock; the plan's is the fixture's, set to it.
	var claimed time.Time
	require.NoError(t, f.store.Pool.QueryRow(ctx, `SELECT claimed_at FROM notification_deliveries`).Scan(&claimed))
	f.clk.mu.Lock()
	f.clk.t = claimed.Add(time.Minute)
	f.clk.mu.Unlock()
	p, err = f.svc.PlanNotifications(ctx, inc, 1)
	require.NoError(t, err)
	require.Empty(t, p.Channels)
	require.Equal(t, 4*time.Minute, p.Next)

	f.clk.Add(4 * time.Minute)
	p, err = f.svc.PlanNotifications(ctx, inc, 1)
	require.NoError(t, err)
	require.Equal(t, []int64{c.ID}, p.Channels, "repeated after its interval")

	// Acknowledged: no more repetitions.
	_, err = f.svc.Acknowledge(ctx, cairn.AllSites, "alice", inc)
	require.NoError(t, err)
	p, err = f.svc.PlanNotifications(ctx, inc, 2)
	require.NoError(t, err)
	require.True(t, p.Active)
	require.Empty(t, p.Channels)
	require.Zero(t, p.Next)
}

func TestMaintenanceWindowMutesNotificationsButNotEvaluation(t *testing.T) {
	t.Parallel()
	f := cipherSetup(t)
	ctx := context.Background()
	h := newHook(t)
	c := f.webhook(t, "ops", h.srv.URL, nil)
	now := f.clk.Now()
	start := now.Add(-10 * time.Minute)
	site := f.sites["alpha"]
	win, err := f.svc.SaveWindow(ctx, "admin", 0, watchdogs.WindowInput{Name: "patch night", SiteID: &site,
		Weekdays: []int{int(start.Weekday())}, StartMinute: start.Hour()*60 + start.Minute(), DurationMinutes: 60})
	require.NoError(t, err)
	until, active := win.ActiveUntil(now)
	require.True(t, active)

	f.device(t, "hot", "alpha", 99, `[]`)
	w, err := f.svc.Create(ctx, admin, cpuPolicy("CPU"))
	require.NoError(t, err)
	res, err := f.svc.Evaluate(ctx, w.ID)
	require.NoError(t, err)
	require.Len(t, res.Opened, 1, "evaluation goes on during the window")

	p, err := f.svc.PlanNotifications(ctx, res.Opened[0], 0)
	require.NoError(t, err)
	require.Empty(t, p.Channels, "muted")
	require.Equal(t, until, p.MutedUntil)
	require.Equal(t, until.Sub(now)+time.Second, p.Next, "looked at again when the window ends")

	f.clk.Add(until.Sub(now) + time.Second)
	p, err = f.svc.PlanNotifications(ctx, res.Opened[0], 1)
	require.NoError(t, err)
	require.Equal(t, []int64{c.ID}, p.Channels, "sent once the window is over")
}

func TestWindowActiveUntil(t *testing.T) {
	t.Parallel()
	// Sunday 2026-11-29.
	sun := func(h, m int) time.Time { return time.Date(2026, 11, 29, h, m, 0, 0, time.UTC) }
	for _, tc := range []struct {
		name   string
		w      watchdogs.Window
		now    time.Time
		active bool
		until  time.Time
	}{
		{"inside", watchdogs.Window{Weekdays: []int{0}, StartMinute: 60, DurationMinutes: 120, TimeZone: "UTC"}, sun(2, 0), true, sun(3, 0)},
		{"before", watchdogs.Window{Weekdays: []int{0}, StartMinute: 60, DurationMinutes: 120, TimeZone: "UTC"}, sun(0, 59), false, time.Time{}},
		{"at its end", watchdogs.Window{Weekdays: []int{0}, StartMinute: 60, DurationMinutes: 120, TimeZone: "UTC"}, sun(3, 0), false, time.Time{}},
		{"another day", watchdogs.Window{Weekdays: []int{1}, StartMinute: 60, DurationMinutes: 120, TimeZone: "UTC"}, sun(2, 0), false, time.Time{}},
		{"from Saturday night", watchdogs.Window{Weekdays: []int{6}, StartMinute: 22 * 60, DurationMinutes: 240, TimeZone: "UTC"}, sun(1, 0), true, sun(2, 0)},
		{"in a time zone", watchdogs.Window{Weekdays: []int{0}, StartMinute: 9 * 60, DurationMinutes: 60, TimeZone: "Europe/Paris"}, sun(8, 30), true, sun(9, 0)},
	} {
		until, active := tc.w.ActiveUntil(tc.now)
		require.Equal(t, tc.active, active, tc.name)
		require.True(t, tc.until.Equal(until), "%s: %v", tc.name, until)
	}
}

func TestChannelValidation(t *testing.T) {
	t.Parallel()
	f, _ := notifySetup(t)
	ctx := context.Background()
	hook := func(mod func(*watchdogs.ChannelInput)) watchdogs.ChannelInput {
		in := watchdogs.ChannelInput{Name: "x", Kind: watchdogs.ChannelWebhook, Webhook: &watchdogs.WebhookConfig{URL: "https://example.test/h"},
			Secret: secret("k")}
		mod(&in)
		return in
	}
	mail := func(mod func(*watchdogs.EmailConfig)) watchdogs.ChannelInput {
		e := &watchdogs.EmailConfig{Host: "smtp.example.test", From: "cairn@example.test", To: []string{"ops@example.test"}}
		mod(e)
		return watchdogs.ChannelInput{Name: "m", Kind: watchdogs.ChannelEmail, Email: e}
	}
	for _, tc := range []struct {
		field string
		in    watchdogs.ChannelInput
	}{
		{"name", hook(func(in *watchdogs.ChannelInput) { in.Name = " " })},
		{"kind", hook(func(in *watchdogs.ChannelInput) { in.Kind = "sms" })},
		{"min_severity", hook(func(in *watchdogs.ChannelInput) { in.MinSeverity = "loud" })},
		{"repeat_minutes", hook(func(in *watchdogs.ChannelInput) { in.RepeatMinutes = 1441 })},
		{"site_ids", hook(func(in *watchdogs.ChannelInput) { in.SiteIDs = []int64{999999} })},
		{"webhook.url", hook(func(in *watchdogs.ChannelInput) { in.Webhook.URL = "ftp://example.test" })},
		{"webhook.url", hook(func(in *watchdogs.ChannelInput) { in.Webhook.URL = "https://u:p@example.test/" })},
		{"secret", hook(func(in *watchdogs.ChannelInput) { in.Secret = nil })},
		{"email.host", mail(func(e *watchdogs.EmailConfig) { e.Host = "" })},
		{"email.port", mail(func(e *watchdogs.EmailConfig) { e.Port = 70000 })},
		{"email.from", mail(func(e *watchdogs.EmailConfig) { e.From = "not an address" })},
		{"email.to", mail(func(e *watchdogs.EmailConfig) { e.To = nil })},
		{"email.to[0]", mail(func(e *watchdogs.EmailConfig) { e.To = []string{"nope"} })},
		{"email.ca_pem", mail(func(e *watchdogs.EmailConfig) { e.CAPEM = "not pem" })},
		{"secret", mail(func(e *watchdogs.EmailConfig) { e.Username = "relay" })},
	} {
		_, err := f.svc.CreateChannel(ctx, "admin", tc.in)
		var ce *cairn.Error
		require.ErrorAs(t, err, &ce, tc.field)
		require.Equal(t, cairn.ECodeValidation, ce.Code, tc.field)
		require.Contains(t, ce.Fields, tc.field, "%s: %v", tc.field, ce.Fields)
	}
	list, err := f.svc.ListChannels(ctx)
	require.NoError(t, err)
	require.Empty(t, list, "nothing half-saved")
}

func TestEmailIsSentOverSTARTTLS(t *testing.T) {
	t.Parallel()
	f, inc := notifySetup(t)
	ctx := context.Background()
	srv := smtptest.Start(t, smtptest.Options{})
	c, err := f.svc.CreateChannel(ctx, "admin", watchdogs.ChannelInput{Name: "mail", Kind: watchdogs.ChannelEmail, Enabled: true,
		Email: &watchdogs.EmailConfig{Host: srv.Host, Port: srv.Port, Username: "relay", From: "Cairn <cairn@example.test>",
			To: []string{"ops@example.test", "oncall@example.test"}, CAPEM: srv.CAPEM}, Secret: secret("smtp-pass")})
	require.NoError(t, err)
	status, err := f.svc.Deliver(ctx, watchdogs.Delivery{IncidentID: inc, Step: 0, ChannelID: c.ID})
	require.NoError(t, err)
	require.Equal(t, watchdogs.DeliverySent, status)
	msgs := srv.Messages()
	require.Len(t, msgs, 1)
	m := msgs[0]
	require.True(t, m.TLS, "sent after STARTTLS")
	require.Equal(t, "relay", m.User)
	require.Equal(t, "smtp-pass", m.Password)
	require.Equal(t, "cairn@example.test", m.From)
	require.Equal(t, []string{"ops@example.test", "oncall@example.test"}, m.To)
	require.Contains(t, m.Data, "Subject: [Cairn] WARNING: CPU on host-hot")
	require.Contains(t, m.Data, "Device: host-hot (hot)")

	// A server without STARTTLS is refused, nothing sent in the clear.
	plain := smtptest.Start(t, smtptest.Options{NoSTARTTLS: true})
	c2, err := f.svc.CreateChannel(ctx, "admin", watchdogs.ChannelInput{Name: "plain", Kind: watchdogs.ChannelEmail, Enabled: true,
		Email: &watchdogs.EmailConfig{Host: plain.Host, Port: plain.Port, Username: "relay", From: "cairn@example.test",
			To: []string{"ops@example.test"}}, Secret: secret("smtp-pass")})
	require.NoError(t, err)
	_, err = f.svc.Deliver(ctx, watchdogs.Delivery{IncidentID: inc, Step: 0, ChannelID: c2.ID})
	require.True(t, cairn.IsCode(err, watchdogs.ECodeDeliveryRefused), "%v", err)
	require.False(t, strings.Contains(err.Error(), "smtp-pass"))
	require.Empty(t, plain.Messages())
}

// TestIncidentsToNotifyAreRestarted: the maintenance sweep restarts the
// workflow of an incident a channel is routed to and that notified no
// one (its workflow may never have started), even without actions.
func TestIncidentsToNotifyAreRestarted(t *testing.T) {
	t.Parallel()
	f, inc := notifySetup(t) // a warning incident on alpha, no actions
	ctx := context.Background()
	f.clk.Add(2 * time.Minute)
	pending, err := f.svc.IncidentsWithoutOutcomes(ctx, time.Minute)
	require.NoError(t, err)
	require.Empty(t, pending, "no channel: nothing to notify")

	f.webhook(t, "beta only", "https://example.test/h", func(in *watchdogs.ChannelInput) { in.SiteIDs = []int64{f.sites["beta"]} })
	pending, err = f.svc.IncidentsWithoutOutcomes(ctx, time.Minute)
	require.NoError(t, err)
	require.Empty(t, pending, "no channel routed to it")

	c := f.webhook(t, "all", "https://example.test/h", nil)
	pending, err = f.svc.IncidentsWithoutOutcomes(ctx, time.Minute)
	require.NoError(t, err)
	require.Equal(t, []int64{inc}, pending)

	_, err = f.store.NotificationDeliveryClaim(ctx, db.NotificationDeliveryClaimParams{IncidentID: inc, Step: 0, ChannelID: c.ID})
	require.NoError(t, err)
	pending, err = f.svc.IncidentsWithoutOutcomes(ctx, time.Minute)
	require.NoError(t, err)
	require.Empty(t, pending, "its workflow notified")
}
