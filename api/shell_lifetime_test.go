package api_test

import (
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
	admin := f.admin(t)
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
