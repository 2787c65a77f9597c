package api_test

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/authtest"
	"github.com/cairn-rmm/cairn/internal/pgtest"
)

// Issue 21 item 6: a trust action or a site move ends the device's live
// shells at once, through the agent_status_changed event it emits. The
// guard's tick is an hour here, so only the event can end them in time.
func TestShellEndsAtOnceWithTrustActionsAndSiteMoves(t *testing.T) {
	t.Parallel()
	f := &fixture{store: pgtest.NewDB(t), clk: authtest.NewClock(), github: newFakeGitHub(t), eventKeepAlive: time.Hour}
	f.engine = f.newEngine(t)
	f.url = f.engine.http.URL
	admin := f.sudo(t, f.admin(t))
	site := f.createSite(t, admin, "shelltrust")
	other := f.createSite(t, admin, "shelltrust-other")
	op := f.operator(t, "trust-operator")
	r := f.do(t, "POST", "/api/user_site_assignments/assign", admin,
		map[string]any{"usernames": []string{"trust-operator"}, "site_ids": []int64{site, other}})
	require.Equal(t, 200, r.Status, r.Raw)

	for i, tc := range []struct {
		name   string
		act    func(t *testing.T, guid string)
		reason string
	}{
		{"quarantine", func(t *testing.T, guid string) {
			r := f.do(t, "POST", "/api/devices/"+guid+"/quarantine", admin, nil)
			require.Equal(t, 200, r.Status, r.Raw)
		}, "the device was quarantined"},
		{"revoke", func(t *testing.T, guid string) {
			r := f.do(t, "POST", "/api/devices/"+guid+"/revoke", admin, nil)
			require.Equal(t, 200, r.Status, r.Raw)
		}, "the device's trust was revoked"},
		{"purge", func(t *testing.T, guid string) {
			r := f.do(t, "POST", "/api/devices/"+guid+"/purge", admin, nil)
			require.Equal(t, 200, r.Status, r.Raw)
		}, "the device was purged"},
		// Both sites are the operator's: the move itself ends the shell.
		{"site move", func(t *testing.T, guid string) {
			r := f.do(t, "POST", "/api/sites/assign", admin, map[string]any{"guids": []string{guid}, "site_id": other})
			require.Equal(t, 200, r.Status, r.Raw)
		}, "the device moved to another site"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host := fmt.Sprintf("trust-%02d", i)
			a := f.enrolled(t, admin, site, host)
			sa := a.shellAgent(t)
			id, browser, agentSide := f.openShell(t, sa, op, host)
			writeFrame(t, browser, websocket.MessageBinary, "ls\r")
			readFrame(t, agentSide)
			bf, af := watch(browser), watch(agentSide)

			tc.act(t, a.guid)
			bf.wait(t)
			af.wait(t)
			s := f.closedSession(t, id)
			require.Equal(t, tc.reason, s.CloseReason)
		})
	}
}

// closedSession waits until session id is recorded closed (its device
// may be gone, so not through the hostname's listing).
func (f *fixture) closedSession(t *testing.T, id string) db.ShellSessionGetRow {
	t.Helper()
	var s db.ShellSessionGetRow
	require.Eventually(t, func() bool {
		var err error
		s, err = f.store.ShellSessionGet(context.Background(), db.ShellSessionGetParams{ID: id, AllSites: true})
		require.NoError(t, err)
		return s.State == "closed"
	}, 15*time.Second, 50*time.Millisecond)
	return s
}

// Issue 21 item 6: each guard tick re-checks the device's trust state,
// token version and site, so a change that emitted no event (or whose
// event was lost) still ends the shell.
func TestShellGuardRechecksTheDeviceOnEachTick(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	site := f.createSite(t, admin, "shelltick")
	other := f.createSite(t, admin, "shelltick-other")
	ctx := context.Background()

	for i, tc := range []struct {
		name   string
		change func(t *testing.T, d db.DeviceGetByGUIDRow)
		reason string
	}{
		{"trust changed", func(t *testing.T, d db.DeviceGetByGUIDRow) {
			_, err := f.store.DeviceTrustSet(ctx, db.DeviceTrustSetParams{Guid: d.Guid, TrustState: "quarantined",
				Now: time.Now(), FromState: d.TrustState, FromVersion: d.TokenVersion})
			require.NoError(t, err)
		}, "the device was quarantined"},
		{"site changed", func(t *testing.T, d db.DeviceGetByGUIDRow) {
			_, err := f.store.DeviceSiteAssign(ctx, db.DeviceSiteAssignParams{SiteID: cairn.SiteID(other), Guids: []string{string(d.Guid)}})
			require.NoError(t, err)
		}, "the device moved to another site"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host := fmt.Sprintf("tick-%02d", i)
			a := f.enrolled(t, admin, site, host)
			sa := a.shellAgent(t)
			id, browser, agentSide := f.openShell(t, sa, admin, host)
			writeFrame(t, browser, websocket.MessageBinary, "ls\r")
			readFrame(t, agentSide)
			bf, af := watch(browser), watch(agentSide)

			d, err := f.store.DeviceGetByGUID(ctx, cairn.DeviceGUID(a.guid))
			require.NoError(t, err)
			tc.change(t, d)
			bf.wait(t)
			af.wait(t)
			require.Equal(t, tc.reason, f.closedSession(t, id).CloseReason)
		})
	}
}

// Issue 21 item 6: quarantine, revoke and a site move end the device's
// live file transfers (the real agent transfer code sees the cancel);
// a purge cancels their workflows, whose records went with the device.
func TestTrustActionsAndSiteMovesEndLiveTransfers(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	site := f.createSite(t, admin, "xfertrust")
	other := f.createSite(t, admin, "xfertrust-other")

	for i, tc := range []struct {
		name    string
		act     func(t *testing.T, guid string)
		message string
	}{
		{"quarantine", func(t *testing.T, guid string) {
			r := f.do(t, "POST", "/api/devices/"+guid+"/quarantine", admin, nil)
			require.Equal(t, 200, r.Status, r.Raw)
		}, "the device was quarantined"},
		{"revoke", func(t *testing.T, guid string) {
			r := f.do(t, "POST", "/api/devices/"+guid+"/revoke", admin, nil)
			require.Equal(t, 200, r.Status, r.Raw)
		}, "the device's trust was revoked"},
		{"site move", func(t *testing.T, guid string) {
			r := f.do(t, "POST", "/api/sites/assign", admin, map[string]any{"guids": []string{guid}, "site_id": other})
			require.Equal(t, 200, r.Status, r.Raw)
		}, "the device moved to another site"},
		{"purge", func(t *testing.T, guid string) {
			r := f.do(t, "POST", "/api/devices/"+guid+"/purge", admin, nil)
			require.Equal(t, 200, r.Status, r.Raw)
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host := fmt.Sprintf("xfertrust-%02d", i)
			a, c := f.transferAgent(t, admin, site, host)
			g := newGate(1 << 20)
			c.openHook = func(body io.ReadCloser) io.ReadCloser { return readCloser{g.wrap(body), body} }
			t.Cleanup(func() {
				select {
				case <-g.release:
				default:
					close(g.release)
				}
			})
			id := transferID(t, f.upload(t, admin, host, [][2]string{{"destination", t.TempDir()}},
				uploadFile{"part.bin", detReader(byte(i), 8<<20)}))
			<-g.reached

			tc.act(t, a.guid)
			if tc.message == "" {
				_, err := f.store.FileTransferGet(context.Background(), cairn.TransferID(id))
				require.True(t, db.IsNoRows(err), "the record went with the device: %v", err)
				var last enumspb.WorkflowExecutionStatus
				require.Eventually(t, func() bool {
					d, err := temporalClient.DescribeWorkflowExecution(context.Background(), "file-transfer:"+id, "")
					require.NoError(t, err)
					// Ended: cancelled, or failed when the cancellation found it
					// waiting on the agent (its record is gone either way).
					last = d.WorkflowExecutionInfo.Status
					return last != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
				}, 3*time.Minute, 50*time.Millisecond, "the transfer's workflow is still %v", &last)
				t.Logf("the purged transfer's workflow ended %v", last)
				return
			}
			tr, err := f.store.FileTransferGet(context.Background(), cairn.TransferID(id))
			require.NoError(t, err)
			require.Equal(t, "cancelled", tr.State)
			require.Equal(t, tc.message, tr.ErrorMessage)
			require.True(t, tr.CancelRequested)
			if tc.name == "site move" {
				// The agent, still trusted, is told on its callbacks.
				st := a.device(t, "GET", proto.PathFileTransfers+id+"/status", nil)
				require.Equal(t, 200, st.Status, st.Raw)
				require.Equal(t, true, st.Body["cancel_requested"])
			}
			// The workflow, signalled, closes the activity row as cancelled.
			waitFor(t, "the transfer's activity row closed", func() bool {
				act := f.do(t, "GET", "/api/device/activity/"+host, admin, nil)
				require.Equal(t, 200, act.Status, act.Raw)
				for _, row := range act.Body["activity"].([]any) {
					m := row.(map[string]any)
					if meta, _ := m["metadata"].(map[string]any); meta["transfer_id"] == id {
						return m["status"] == "cancelled"
					}
				}
				return false
			})
		})
	}
}

// Issue 21 item 10: a shell session is scoped by its own device, or once
// that device is purged by its own site, never by whichever device holds
// its hostname now.
func TestShellSessionsStayWithTheirOwnDevice(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	siteA := f.createSite(t, admin, "reuse-a")
	siteB := f.createSite(t, admin, "reuse-b")
	opA, opB := f.operator(t, "reuse-op-a"), f.operator(t, "reuse-op-b")
	for user, s := range map[string]int64{"reuse-op-a": siteA, "reuse-op-b": siteB} {
		r := f.do(t, "POST", "/api/user_site_assignments/assign", admin, map[string]any{"usernames": []string{user}, "site_ids": []int64{s}})
		require.Equal(t, 200, r.Status, r.Raw)
	}

	old := f.enrolled(t, admin, siteA, "reuse-01")
	sa := old.shellAgent(t)
	id, browser, agentSide := f.openShell(t, sa, opA, "reuse-01")
	writeFrame(t, agentSide, websocket.MessageBinary, "secret-of-site-a\r\n")
	readFrame(t, browser)
	writeFrame(t, agentSide, websocket.MessageText, `{"type":"exit","code":0}`)
	require.NoError(t, agentSide.Close(websocket.StatusNormalClosure, "shell exited"))
	readClose(t, browser)
	f.waitClosed(t, opA, "reuse-01", id)

	r := f.do(t, "POST", "/api/devices/"+old.guid+"/purge", admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	f.enrolled(t, admin, siteB, "reuse-01")

	listed := func(token, query string) bool {
		r := f.do(t, "GET", "/api/shell/sessions"+query, token, nil)
		require.Equal(t, 200, r.Status, r.Raw)
		for _, s := range r.Body["sessions"].([]any) {
			if s.(map[string]any)["session_id"] == id {
				return true
			}
		}
		return false
	}
	for _, q := range []string{"", "?hostname=reuse-01"} {
		require.True(t, listed(opA, q), "the session stays with its own site %q", q)
		require.False(t, listed(opB, q), "the hostname's new device does not expose it %q", q)
		require.True(t, listed(admin, q))
	}
	r = f.do(t, "POST", "/api/shell/disconnect", opB, map[string]any{"session_id": id})
	require.Equal(t, 404, r.Status, r.Raw)
	r = f.do(t, "POST", "/api/shell/disconnect", opA, map[string]any{"session_id": id})
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, "closed", r.Body["state"])
}
