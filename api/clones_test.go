package api_test

// Issue 28 "Cloned machines": machines made from one image enroll as
// separate devices, and a copied installed agent is told apart from its
// original and enrolls as a device of its own (docs/architecture.md
// "Device identity and clones").

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/authtest"
	"github.com/cairn-rmm/cairn/internal/enrollment"
	"github.com/cairn-rmm/cairn/internal/pgtest"
)

// A VDI pool: 20 machines from one image share every hardware value (so
// one fingerprint) and each makes its own key; all enroll. One agent
// (one key) asking again and again is still stopped.
func TestEnrollmentFromOneImage(t *testing.T) {
	t.Parallel()
	f := &fixture{store: pgtest.NewDB(t), clk: authtest.NewClock(), github: newFakeGitHub(t),
		trustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}
	f.engine = f.newEngine(t)
	f.url = f.engine.http.URL
	admin := f.admin(t)
	code := f.enrollmentCode(t, admin, f.createSite(t, admin, "vdi"))

	for i := range 20 {
		a := f.newAgent(t, fmt.Sprintf("vdi-%02d", i))
		a.fingerprint, a.addr = "one-image", "198.51.100.7"
		r := a.request(t, code)
		require.Equal(t, 202, r.Status, "machine %d of the pool: %s", i, r.Raw)
	}

	hammer := f.newAgent(t, "hammer")
	hammer.fingerprint, hammer.addr = "one-image", "198.51.100.8"
	for i := range enrollment.RequestsPerFingerprint.Limit {
		r := hammer.request(t, code)
		require.Equal(t, 202, r.Status, "request %d: %s", i, r.Raw)
	}
	r := hammer.request(t, code)
	require.Equal(t, 429, r.Status, r.Raw)
	require.Equal(t, "rate_limited", r.Body["error"])
	require.NotEmpty(t, r.Header.Get("Retry-After"))
}

// auditActions are the audit trail's actions with their targets.
func auditActions(t *testing.T, f *fixture, admin string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, e := range f.auditEntries(t, admin) {
		a, _ := e["action"].(string)
		target, _ := e["target"].(string)
		out[a] = append(out[a], target)
	}
	return out
}

// enrollClone enrolls a copy with its ticket under a new key and returns
// it; nobody approves anything.
func enrollClone(t *testing.T, f *fixture, original *testAgent, ticket string) *testAgent {
	t.Helper()
	c := f.newAgent(t, original.hostname)
	c.fingerprint, c.cloneTicket = original.fingerprint, ticket
	r := c.request(t, "")
	require.Equal(t, 202, r.Status, r.Raw)
	require.Equal(t, proto.ApprovalApproved, r.Body["status"], "a clone ticket approves at once")
	p := c.poll(t)
	require.Equal(t, proto.ApprovalEnrolled, p.Body["status"], p.Raw)
	require.NotEqual(t, original.guid, c.guid)
	return c
}

// A refresh token used by the original and presented again from another
// boot is a copy: the copy gets device_cloned with a ticket, the original
// keeps its token family, and the ticket enrolls the copy (once) as a new
// device recording cloned_from, without an administrator.
func TestRefreshFromACopyIsAClone(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "clones")
	orig := f.enrolled(t, admin, site, "golden")
	orig.bootID = "boot-original"
	copied := *orig
	copied.bootID = "boot-copy"

	require.Equal(t, 200, orig.doRefresh(t).Status)
	r := copied.doRefresh(t)
	require.Equal(t, 409, r.Status, r.Raw)
	require.Equal(t, proto.CodeDeviceCloned, r.Body["error"])
	ticket := r.field(proto.FieldCloneTicket)
	require.NotEmpty(t, ticket)
	require.Equal(t, 200, orig.doRefresh(t).Status, "the original's family is not revoked")

	clone := enrollClone(t, f, orig, ticket)
	dev := f.do(t, "GET", "/api/devices/"+clone.guid, admin, nil)
	require.Equal(t, 200, dev.Status, dev.Raw)
	require.Equal(t, orig.guid, dev.Body["cloned_from"])
	require.True(t, strings.HasPrefix(dev.Body["hostname"].(string), "golden-clone-"), dev.Body["hostname"])
	require.Equal(t, float64(site), dev.Body["site_id"])
	require.Nil(t, f.do(t, "GET", "/api/devices/"+orig.guid, admin, nil).Body["cloned_from"])

	again := f.newAgent(t, "golden-2")
	again.cloneTicket = ticket
	r = again.request(t, "")
	require.Equal(t, 400, r.Status, r.Raw)
	require.Contains(t, r.field("clone_ticket"), "used")

	actions := auditActions(t, f, admin)
	require.Len(t, actions["device_clone_detected"], 1)
	require.Contains(t, actions["device_clone_detected"][0], "reason=refresh_token_fork")
	require.Len(t, actions["device_clone_enrolled"], 1)
	require.Contains(t, actions["device_clone_enrolled"][0], "cloned_from="+orig.guid)
	require.NotContains(t, f.logs.String(), ticket, "the ticket is a secret")

	// The same boot presenting a used token long after is still theft:
	// the family goes (as before clones were told apart).
	stale := *orig
	require.Equal(t, 200, orig.doRefresh(t).Status)
	f.clk.Advance(10 * time.Minute)
	require.Equal(t, "token_revoked", stale.doRefresh(t).Body["error"])
}

// drain reads a socket until it ends, answering the Engine's pings, and
// hands over every message.
func drain(c *websocket.Conn) <-chan proto.Envelope {
	out := make(chan proto.Envelope, 16)
	go func() {
		defer close(out)
		for {
			_, b, err := c.Read(context.Background())
			if err != nil {
				return
			}
			var env proto.Envelope
			if json.Unmarshal(b, &env) == nil {
				select {
				case out <- env:
				default:
				}
			}
		}
	}()
	return out
}

// Two live sockets of one device from different boots: the newcomer is
// the copy when both match the enrolled fingerprint; the older socket is
// when only the newcomer matches; an older socket that does not answer a
// ping (a machine that rebooted) is replaced, not taken for a clone.
func TestSecondLiveSocketIsAClone(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "sockets")

	orig := f.enrolled(t, admin, site, "image-a")
	orig.bootID = "boot-1"
	c1 := orig.connect(t)
	defer c1.CloseNow()
	drain(c1)
	copied := *orig
	copied.bootID = "boot-2"
	c2, ack := copied.connectAck(t)
	defer c2.CloseNow()
	require.False(t, ack.Accepted)
	require.Equal(t, proto.CodeDeviceCloned, ack.Code)
	require.NotEmpty(t, ack.CloneTicket)
	same := *orig
	c3 := same.connect(t) // the same boot reconnecting is the device itself
	defer c3.CloseNow()
	enrollClone(t, f, orig, ack.CloneTicket)

	// The older socket does not match the enrolled fingerprint: it is the copy.
	b := f.enrolled(t, admin, site, "image-b")
	wrong := *b
	wrong.fingerprint, wrong.bootID = "fp-other-hardware", "boot-x"
	cw := wrong.connect(t)
	defer cw.CloseNow()
	msgs := drain(cw)
	b.bootID = "boot-y"
	cb := b.connect(t)
	defer cb.CloseNow()
	var told proto.DeviceCloned
	for env := range msgs {
		if env.Type == proto.MsgDeviceCloned {
			require.NoError(t, json.Unmarshal(env.Payload, &told))
			break
		}
	}
	require.NotEmpty(t, told.CloneTicket, "the older copy was told")

	// A half-open socket (nobody reads it, so no pong) is not a clone.
	h := f.enrolled(t, admin, site, "rebooted")
	h.bootID = "boot-before"
	stale := h.connect(t)
	defer stale.CloseNow()
	h.bootID = "boot-after"
	fresh := h.connect(t)
	defer fresh.CloseNow()

	actions := auditActions(t, f, admin)
	require.Len(t, actions["device_clone_detected"], 2)
	for _, target := range actions["device_clone_detected"] {
		require.Contains(t, target, "reason=two_live_sockets")
		require.NotContains(t, target, h.guid)
	}
}
