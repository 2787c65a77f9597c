package api_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/internal/devicetrust"
)

// A bridged shell lives no longer than what authenticated its sockets
// (docs/architecture.md "Socket lifetimes"): the operator's session, and
// the device's access token while the device does not refresh it.
func TestShellEndsWithWhatAuthenticatedItsSockets(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	site := f.createSite(t, admin, "shelllife")

	t.Run("the operator's session ends", func(t *testing.T) {
		a := f.enrolled(t, admin, site, "life-01")
		sa := a.shellAgent(t)
		op := f.operator(t, "life-operator")
		r := f.do(t, "POST", "/api/user_site_assignments/assign", admin,
			map[string]any{"usernames": []string{"life-operator"}, "site_ids": []int64{site}})
		require.Equal(t, 200, r.Status, r.Raw)
		id, browser, agentSide := f.openShell(t, sa, op, "life-01")
		writeFrame(t, browser, websocket.MessageBinary, "ls\r")
		readFrame(t, agentSide)

		require.Equal(t, 204, f.do(t, "POST", "/api/auth/logout", op, nil).Status)
		readClose(t, browser)
		readClose(t, agentSide)
		s := f.waitClosed(t, admin, "life-01", id)
		require.Equal(t, "the operator's session ended", s["close_reason"])
	})

	// Losing the device's site ends the shell on the stream re-check; a
	// role change ends the operator's sessions outright (auth.SetRole), and
	// the shell with them.
	for i, change := range []struct {
		name   string
		path   string
		body   func(other int64) map[string]any
		reason string
	}{
		{"the operator loses the device's site", "/api/user_site_assignments/assign", func(other int64) map[string]any {
			return map[string]any{"usernames": []string{"life-scope-0"}, "site_ids": []int64{other}}
		}, "the operator's role or sites changed"},
		{"the operator's role changes", "/api/users/life-scope-1/role", func(int64) map[string]any {
			return map[string]any{"role": "admin"}
		}, "the operator's session ended"},
	} {
		t.Run(change.name, func(t *testing.T) {
			host := fmt.Sprintf("life-scope-%02d", i+3)
			a := f.enrolled(t, admin, site, host)
			sa := a.shellAgent(t)
			username := fmt.Sprintf("life-scope-%d", i)
			op := f.operator(t, username)
			r := f.do(t, "POST", "/api/user_site_assignments/assign", admin,
				map[string]any{"usernames": []string{username}, "site_ids": []int64{site}})
			require.Equal(t, 200, r.Status, r.Raw)
			id, browser, agentSide := f.openShell(t, sa, op, host)
			writeFrame(t, browser, websocket.MessageBinary, "ls\r")
			readFrame(t, agentSide)

			other := f.createSite(t, admin, host+"-other")
			r = f.do(t, "POST", change.path, admin, change.body(other))
			require.Equal(t, 200, r.Status, r.Raw)
			readClose(t, browser)
			readClose(t, agentSide)
			s := f.waitClosed(t, admin, host, id)
			require.Equal(t, change.reason, s["close_reason"])
		})
	}

	t.Run("the agent's access token lapses unrefreshed", func(t *testing.T) {
		a := f.enrolled(t, admin, site, "life-02")
		sa := a.shellAgent(t)
		id, browser, agentSide := f.openShell(t, sa, admin, "life-02")
		writeFrame(t, browser, websocket.MessageBinary, "ls\r")
		readFrame(t, agentSide)

		// The operator's session is still within its idle timeout.
		f.clk.Advance(devicetrust.AccessTokenTTL + time.Minute)
		readClose(t, browser)
		readClose(t, agentSide)
		s := f.waitClosed(t, admin, "life-02", id)
		require.Equal(t, "the device's access token expired and was not refreshed", s["close_reason"])
	})
}
