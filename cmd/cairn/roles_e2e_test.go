package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// Issue 27 item 4 through the real processes: an operator stops the
// remote_shell role of a real cairn-agent, a shell is then refused with
// role_stopped (also after the agent restarts: agent.json keeps it), and
// started again the role serves a shell.
func TestRoleStopStartEndToEnd(t *testing.T) {
	t.Parallel()
	tmp, agentBin := agentWorkspace(t, "cairn-roles-e2e-")
	eng := startServe(t, filepath.Join(tmp, "data"))
	token := eng.signIn(t)
	site := eng.post(t, "/api/sites", token, map[string]any{"name": "Roles E2E", "site_worker_slug": "roles-e2e"})
	code := eng.post(t, "/api/admin/enrollment-codes", token, map[string]any{"site_id": site["site_id"]})["code"].(string)
	caFile := filepath.Join(tmp, "ca.pem")
	require.NoError(t, os.WriteFile(caFile, eng.checkHTTPS(t), 0o644))

	a := eng.enrollAgent(t, token, agentBin, tmp, "e2e-roles", code, caFile)
	a.env = []string{"CAIRN_AGENT_SHELL=/bin/sh"}
	a.run(t, agentBin)
	eng.waitStatus(t, token, a, "Connected", 90*time.Second)

	path := "/api/device/roles/" + a.hostname + "/desired-state"
	setRole := func(role, desired string) rawResponse {
		return eng.rawCall(t, "POST", path, token, map[string]any{"role": role, "desired": desired})
	}
	// Refusals, before anything reaches the agent.
	for _, tc := range []struct {
		role, desired string
		status        int
		want          string
	}{
		{"no_such_role", "stopped", http.StatusBadRequest, `"role"`},
		{"remote_shell", "paused", http.StatusBadRequest, `"desired"`},
		{"system_context", "stopped", http.StatusConflict, proto.CodeRoleNotStoppable},
		{"api_websocket", "stopped", http.StatusConflict, proto.CodeRoleNotStoppable},
	} {
		res := setRole(tc.role, tc.desired)
		require.Equal(t, tc.status, res.status, "%s %s: %s", tc.role, tc.desired, res.body)
		require.Contains(t, res.body, tc.want)
	}

	// openShell opens a shell: the refusal's code, or "" once it ran a command.
	openShell := func() string {
		t.Helper()
		est := eng.post(t, "/api/shell/establish", token, map[string]any{"hostname": a.hostname})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		ws, _, err := websocket.Dial(ctx, "wss"+strings.TrimPrefix(eng.httpsBase, "https")+est["ws_url"].(string),
			&websocket.DialOptions{HTTPClient: eng.httpsClient(t), HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
		require.NoError(t, err)
		defer ws.CloseNow()
		typ, b, err := ws.Read(ctx)
		require.NoError(t, err, "agent:\n%s", a.output())
		if typ == websocket.MessageText {
			var frame struct{ Type, Error, Message string }
			require.NoError(t, json.Unmarshal(b, &frame), string(b))
			if frame.Type == "error" {
				return frame.Error
			}
		}
		require.NoError(t, ws.Write(ctx, websocket.MessageBinary, []byte("echo cairn-$((6*7))\n")))
		screen := string(b)
		for !strings.Contains(screen, "cairn-42") {
			_, b, err := ws.Read(ctx)
			require.NoError(t, err, "screen so far: %q; agent:\n%s", screen, a.output())
			screen += string(b)
		}
		return ""
	}
	require.Empty(t, openShell(), "a running role serves")

	res := setRole("remote_shell", "stopped")
	require.Equal(t, http.StatusOK, res.status, res.body)
	require.JSONEq(t, `{"role":"remote_shell","desired":"stopped","observed":"Stopped"}`, res.body)
	require.Equal(t, proto.CodeRoleStopped, openShell())
	require.Equal(t, []string{"remote_shell"}, loadAgentConfigFresh(t, a.dir).RolesStopped)

	// A restarted agent keeps the role stopped.
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGTERM))
	_ = a.cmd.Wait()
	eng.waitStatus(t, token, a, "Disconnected", 90*time.Second)
	a.run(t, agentBin)
	eng.waitStatus(t, token, a, "Connected", 90*time.Second)
	require.Equal(t, proto.CodeRoleStopped, openShell())
	// Its health row says so.
	require.True(t, assertEventually(3*time.Minute, func() bool {
		d := eng.call(t, "GET", "/api/device/details/"+a.hostname, token, nil)
		raw, _ := json.Marshal(d)
		// encoding/json sorts a map's keys: desired comes just before key.
		return strings.Contains(string(raw), `"desired":"stopped","key":"system:remote_shell"`)
	}), "no stopped remote_shell row; agent:\n%s", a.output())

	res = setRole("remote_shell", "running")
	require.Equal(t, http.StatusOK, res.status, res.body)
	require.Contains(t, res.body, `"desired":"running"`)
	require.Empty(t, openShell(), "started again, the role serves")
	require.Empty(t, loadAgentConfigFresh(t, a.dir).RolesStopped)
}
