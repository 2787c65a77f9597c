package api_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/files"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/runtime"
)

// capsAgent enrolls hostname and connects it reporting caps (nil: every
// capability) or, with protocol below 4, none; it serves files and
// counts every request it gets.
func (f *fixture) capsAgent(t *testing.T, admin string, site int64, hostname string, protocol int, caps []proto.Capability) *opAgent {
	t.Helper()
	a := f.enrolled(t, admin, site, hostname)
	a.protocol, a.caps = protocol, caps
	o := &opAgent{testAgent: a, seen: map[string]int{}}
	handlers := runtime.NewHandlers()
	require.NoError(t, files.Register(handlers, files.Options{}))
	o.conn = a.connect(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); o.conn.CloseNow(); <-done })
	go func() {
		defer close(done)
		o.serve(ctx, handlers)
	}()
	return o
}

func (o *opAgent) total() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, c := range o.seen {
		n += c
	}
	return n
}

func capabilityNames(caps []proto.Capability) []any {
	out := make([]any, len(caps))
	for i, c := range caps {
		out[i] = string(c)
	}
	return out
}

// An agent that reports a set without a capability is refused every
// route needing it with 409 agent_too_old naming the capability and the
// protocol that has it, before anything starts: the agent gets nothing
// and the device's activity has no row. Reconnecting with more replaces
// the stored set.
func TestAgentCapabilitiesRefuseBeforeStarting(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	site := f.createSite(t, admin, "caps")
	reduced := []proto.Capability{proto.CapProcesses, proto.CapServices, proto.CapInventoryRefresh}
	o := f.capsAgent(t, admin, site, "caps-old", 0, reduced)

	d := f.do(t, "GET", "/api/devices/"+o.guid, admin, nil)
	require.Equal(t, 200, d.Status, d.Raw)
	require.Equal(t, capabilityNames(reduced), d.Body["capabilities"], "the reported set is stored and shown")

	for _, c := range []struct {
		name, method, path string
		body               any
		capability         proto.Capability
	}{
		{"file manager", "GET", "/api/device/files/caps-old/roots", nil, proto.CapFiles},
		{"file text", "POST", "/api/device/files/caps-old/text", map[string]any{"path": "/tmp/x", "content": "x"}, proto.CapFiles},
		{"download", "POST", "/api/device/files/caps-old/download", map[string]any{"paths": []string{"/etc/hostname"}}, proto.CapTransfers},
		{"shell", "POST", "/api/shell/establish", map[string]any{"hostname": "caps-old"}, proto.CapShell},
		{"remote ops token", "POST", "/api/remote-ops/session", map[string]any{"hostname": "caps-old", "capability": "shell"}, proto.CapShell},
		{"agent update", "POST", "/api/device/update-agent/caps-old", nil, proto.CapAgentUpdate},
		{"agent maintenance", "POST", "/api/devices/agent-maintenance", map[string]any{"action": "update_now", "guids": []string{o.guid}}, proto.CapAgentUpdate},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := f.do(t, c.method, c.path, admin, c.body)
			require.Equal(t, 409, r.Status, r.Raw)
			require.Equal(t, "agent_too_old", r.Body["error"])
			require.Contains(t, r.Body["message"], `"`+string(c.capability)+`"`)
			require.Contains(t, r.Body["message"], fmt.Sprintf("protocol %d", proto.CapabilityVersion[c.capability]))
		})
	}
	// The registry editor is a platform's: an agent that reported its
	// set without it is on another platform, whatever its OS string.
	r := f.do(t, "GET", "/api/device/registry/caps-old/roots", admin, nil)
	require.Equal(t, 422, r.Status, r.Raw)
	require.Equal(t, proto.CodeUnsupportedPlatform, r.Body["error"])

	// A quick run records the device as failed with the code and signs
	// and sends it nothing.
	id := f.quickRun(t, admin, map[string]any{"device_guids": []string{o.guid}, "language": "sh", "body": "true"})
	res := onlyResult(t, f.finishedRun(t, admin, id))
	require.Equal(t, "failed", res["status"])
	require.Equal(t, "agent_too_old", res["error_code"])
	require.Contains(t, res["error_message"], `"scripts"`)

	require.Zero(t, o.total(), "the agent was asked nothing")
	act := f.do(t, "GET", "/api/device/activity/caps-old", admin, nil)
	require.Equal(t, 200, act.Status, act.Raw)
	for _, a := range act.Body["activity"].([]any) {
		require.Equal(t, "device_enrolled", a.(map[string]any)["kind"], "no operation was started")
	}

	// The set is replaced on each connect.
	o.conn.CloseNow()
	o.caps = nil
	conn := o.connect(t)
	t.Cleanup(func() { conn.CloseNow() })
	require.Eventually(t, func() bool {
		d := f.do(t, "GET", "/api/devices/"+o.guid, admin, nil)
		return d.Status == 200 && len(d.Body["capabilities"].([]any)) == len(proto.AllCapabilities)
	}, 30*time.Second, 50*time.Millisecond)
	d = f.do(t, "GET", "/api/device/details/caps-old", admin, nil)
	require.Equal(t, 200, d.Status, d.Raw)
	require.Equal(t, capabilityNames(proto.AllCapabilities), d.Body["device"].(map[string]any)["capabilities"])
}

// An agent of a protocol before capabilities, and a device whose agent
// never connected since, get the legacy set: the operations of protocol
// 2 and agent updates work, anything later is agent_too_old.
func TestAgentCapabilitiesLegacy(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	site := f.createSite(t, admin, "legacy")
	legacy := capabilityNames(proto.LegacyCapabilities())

	never := f.enrolled(t, admin, site, "legacy-never")
	d := f.do(t, "GET", "/api/devices/"+never.guid, admin, nil)
	require.Equal(t, 200, d.Status, d.Raw)
	require.Equal(t, legacy, d.Body["capabilities"])

	o := f.capsAgent(t, admin, site, "legacy-3", 3, nil)
	d = f.do(t, "GET", "/api/devices/"+o.guid, admin, nil)
	require.Equal(t, 200, d.Status, d.Raw)
	require.Equal(t, legacy, d.Body["capabilities"])

	r := f.do(t, "GET", "/api/device/files/legacy-3/roots", admin, nil)
	require.Equal(t, 409, r.Status, r.Raw)
	require.Equal(t, "agent_too_old", r.Body["error"])
	require.Contains(t, r.Body["message"], "reported no capabilities")
	// Not knowing the platform, the registry editor is agent_too_old too.
	r = f.do(t, "GET", "/api/device/registry/legacy-3/roots", admin, nil)
	require.Equal(t, 409, r.Status, r.Raw)
	require.Equal(t, "agent_too_old", r.Body["error"])
	require.Zero(t, o.total())

	// A legacy capability is asked for: the agent gets the request (this
	// one serves files only, so it answers unsupported).
	r = f.do(t, "POST", "/api/device/software/legacy-3/refresh", admin, nil)
	require.NotEqual(t, "agent_too_old", r.Body["error"], r.Raw)
	require.Equal(t, 1, o.count(proto.EventSoftwareRefresh))
}
