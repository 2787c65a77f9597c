package watchdogs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/smtptest"
	"github.com/cairn-rmm/cairn/internal/watchdogs"
)

// refusedDelivery delivers the incident's step 0 on a webhook to url
// with the allow-list given and requires the guard's final refusal
// naming addr, with nothing received by h.
func refusedDelivery(t *testing.T, f *fixture, inc int64, name, url string, allow []string, addr string, h *hook) {
	t.Helper()
	c := f.webhook(t, name, url, func(in *watchdogs.ChannelInput) { in.Webhook.AllowPrivateCIDRs = allow })
	status, err := f.svc.Deliver(context.Background(), watchdogs.Delivery{IncidentID: inc, Step: 0, ChannelID: c.ID})
	require.Equal(t, watchdogs.DeliveryFailed, status)
	require.True(t, cairn.IsCode(err, watchdogs.ECodeDeliveryRefused), "%s: %v", name, err)
	require.Contains(t, err.Error(), addr, name)
	require.Contains(t, err.Error(), "allow_private_cidrs", "%s: the message says how to allow it", name)
	require.NotContains(t, err.Error(), "s3cret", name)
	row, err := f.store.NotificationDeliveryGet(context.Background(), db.NotificationDeliveryGetParams{IncidentID: inc, Step: 0, ChannelID: c.ID})
	require.NoError(t, err)
	require.Equal(t, watchdogs.DeliveryFailed, row.Status)
	require.Contains(t, row.Error, addr)
	if h != nil {
		require.Zero(t, h.count(), "%s: nothing reached the receiver", name)
	}
}

func TestWebhookToPrivateAddressIsRefused(t *testing.T) {
	t.Parallel()
	f, inc := notifySetup(t)
	h := newHook(t)
	_, port, err := net.SplitHostPort(h.srv.Listener.Addr().String())
	require.NoError(t, err)
	// The receiver is up on 127.0.0.1, but the channel does not allow it.
	refusedDelivery(t, f, inc, "loopback", h.srv.URL, nil, "127.0.0.1", h)
	// Allowing another network does not allow it either.
	refusedDelivery(t, f, inc, "other network", h.srv.URL, []string{"10.0.0.0/8"}, "127.0.0.1", h)
	// Refused before any packet leaves: none of these is dialled.
	for _, tc := range []struct{ name, url, addr string }{
		{"metadata", "http://169.254.169.254/latest/meta-data/", "169.254.169.254"},
		{"private", "http://10.1.2.3:" + port + "/", "10.1.2.3"},
		{"cgnat", "http://100.64.1.1/", "100.64.1.1"},
		{"unspecified", "http://0.0.0.0:" + port + "/", "0.0.0.0"},
		{"ipv6 loopback", "http://[::1]:" + port + "/", "::1"},
		{"mapped loopback", "http://[::ffff:127.0.0.1]:" + port + "/", "127.0.0.1"},
		{"multicast", "http://224.0.0.1/", "224.0.0.1"},
	} {
		refusedDelivery(t, f, inc, tc.name, tc.url, nil, tc.addr, h)
	}
}

func TestWebhookToPrivateAddressIsSentWhenAllowed(t *testing.T) {
	t.Parallel()
	f, inc := notifySetup(t)
	h := newHook(t)
	c := f.webhook(t, "lab", h.srv.URL, func(in *watchdogs.ChannelInput) { in.Webhook.AllowPrivateCIDRs = []string{"127.0.0.0/8"} })
	require.Equal(t, []string{"127.0.0.0/8"}, c.Webhook.AllowPrivateCIDRs)
	status, err := f.svc.Deliver(context.Background(), watchdogs.Delivery{IncidentID: inc, Step: 0, ChannelID: c.ID})
	require.NoError(t, err)
	require.Equal(t, watchdogs.DeliverySent, status)
	require.Equal(t, 1, h.count())

	for i, bad := range [][]string{{"127.0.0.1"}, {"10.0.0.0/33"}, {"lab"}} {
		_, err := f.svc.CreateChannel(context.Background(), "admin", watchdogs.ChannelInput{Name: fmt.Sprint("bad ", i),
			Kind: watchdogs.ChannelWebhook, Webhook: &watchdogs.WebhookConfig{URL: h.srv.URL, AllowPrivateCIDRs: bad}, Secret: secret("k")})
		var ce *cairn.Error
		require.ErrorAs(t, err, &ce, bad)
		require.Contains(t, ce.Fields, "webhook.allow_private_cidrs[0]", bad)
	}
}

// TestWebhookNameResolvingToLoopbackIsRefusedAtDial: the URL names no
// address; the one the name resolves to is checked when the socket
// connects (DNS rebinding cannot slip past a check made at save).
func TestWebhookNameResolvingToLoopbackIsRefusedAtDial(t *testing.T) {
	t.Parallel()
	f, inc := notifySetup(t)
	h := newHook(t)
	_, port, err := net.SplitHostPort(h.srv.Listener.Addr().String())
	require.NoError(t, err)
	c := f.webhook(t, "by name", "http://localhost:"+port+"/hook", func(in *watchdogs.ChannelInput) { in.Webhook.AllowPrivateCIDRs = nil })
	_, err = f.svc.Deliver(context.Background(), watchdogs.Delivery{IncidentID: inc, Step: 0, ChannelID: c.ID})
	require.True(t, cairn.IsCode(err, watchdogs.ECodeDeliveryRefused), "%v", err)
	require.True(t, strings.Contains(err.Error(), "127.0.0.1") || strings.Contains(err.Error(), "::1"), "%v", err)
	require.Zero(t, h.count())
}

// TestWebhookRedirectToLoopbackIsRefused: a receiver allowed on
// 127.0.0.2 redirects to 127.0.0.1, which the channel does not allow:
// the redirect's connection is refused like a first one.
func TestWebhookRedirectToLoopbackIsRefused(t *testing.T) {
	t.Parallel()
	f, inc := notifySetup(t)
	target := newHook(t) // on 127.0.0.1
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	require.NoError(t, err, "Linux routes all of 127.0.0.0/8 to lo")
	hops := newHook(t)
	redirector := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hops.srv.Config.Handler.ServeHTTP(httptest.NewRecorder(), r)
		http.Redirect(w, r, target.srv.URL+"/stolen", http.StatusTemporaryRedirect)
	}))
	redirector.Listener.Close()
	redirector.Listener = ln
	redirector.Start()
	t.Cleanup(redirector.Close)

	refusedDelivery(t, f, inc, "redirected", redirector.URL, []string{"127.0.0.2/32"}, "127.0.0.1", target)
	require.Equal(t, 1, hops.count(), "the first hop was allowed and reached")
}

func TestTestNotification(t *testing.T) {
	t.Parallel()
	f := cipherSetup(t)
	ctx := context.Background()
	h := newHook(t)
	c := f.webhook(t, "ops", h.srv.URL, func(in *watchdogs.ChannelInput) { in.Enabled = false })

	res, err := f.svc.TestChannel(ctx, "alice", c.ID)
	require.NoError(t, err)
	require.Equal(t, watchdogs.TestDelivered, res.Outcome, res.Error)
	require.Equal(t, 1, h.count(), "a disabled channel can be tested")
	r, body := h.got[0], h.bodies[0]
	require.Equal(t, watchdogs.EventTest, r.Header.Get(watchdogs.HeaderEvent))
	require.Equal(t, res.Delivery, r.Header.Get(watchdogs.HeaderDelivery))
	require.Equal(t, watchdogs.Sign("s3cret-hmac-key", r.Header.Get(watchdogs.HeaderTimestamp), body), r.Header.Get(watchdogs.HeaderSignature))
	var p watchdogs.Payload
	require.NoError(t, json.Unmarshal(body, &p))
	require.True(t, p.Test)
	require.Equal(t, watchdogs.EventTest, p.Type)
	require.Zero(t, p.Incident.ID)
	require.Contains(t, p.Incident.Title, "alice")

	// The guard's refusal is the answer, not an error of the call.
	refused := f.webhook(t, "no opt-in", h.srv.URL, func(in *watchdogs.ChannelInput) { in.Webhook.AllowPrivateCIDRs = nil })
	res, err = f.svc.TestChannel(ctx, "alice", refused.ID)
	require.NoError(t, err)
	require.Equal(t, watchdogs.TestRefused, res.Outcome)
	require.Equal(t, watchdogs.ECodeDeliveryRefused, res.Code)
	require.Contains(t, res.Error, "127.0.0.1")
	require.Equal(t, 1, h.count())

	// A receiver's 503 is a failure worth retrying.
	down := newHook(t, http.StatusServiceUnavailable)
	res, err = f.svc.TestChannel(ctx, "alice", f.webhook(t, "down", down.srv.URL, nil).ID)
	require.NoError(t, err)
	require.Equal(t, watchdogs.TestFailed, res.Outcome)
	require.Contains(t, res.Error, "503")

	mail := smtptest.Start(t, smtptest.Options{})
	mc, err := f.svc.CreateChannel(ctx, "admin", watchdogs.ChannelInput{Name: "mail", Kind: watchdogs.ChannelEmail, Enabled: true,
		Email: &watchdogs.EmailConfig{Host: mail.Host, Port: mail.Port, Username: "relay", From: "cairn@example.test",
			To: []string{"ops@example.test"}, CAPEM: mail.CAPEM}, Secret: secret("smtp-pass")})
	require.NoError(t, err)
	res, err = f.svc.TestChannel(ctx, "alice", mc.ID)
	require.NoError(t, err)
	require.Equal(t, watchdogs.TestDelivered, res.Outcome, res.Error)
	msgs := mail.Messages()
	require.Len(t, msgs, 1)
	require.True(t, msgs[0].TLS)
	require.Contains(t, msgs[0].Data, "Subject: [Cairn, test] INFO: Test notification from Cairn")

	var n int
	require.NoError(t, f.store.Pool.QueryRow(ctx, `SELECT count(*) FROM notification_deliveries`).Scan(&n))
	require.Zero(t, n, "a test is no incident's delivery")

	_, err = f.svc.TestChannel(ctx, "alice", 987654)
	require.True(t, cairn.IsCode(err, cairn.ECodeNotFound), "%v", err)
}
