package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"
)

// Issue 21 items 6 and 7 through the real processes: a shell of a real
// cairn-agent on a real Engine records the operator's input, streams its
// transcript, and ends at once, telling the operator why, when the
// device moves site.
func TestShellEndToEnd(t *testing.T) {
	t.Parallel()
	tmp, agentBin := agentWorkspace(t, "cairn-shell-e2e-")
	eng := startServe(t, filepath.Join(tmp, "data"))
	token := eng.signIn(t)
	site := eng.post(t, "/api/sites", token, map[string]any{"name": "Shell E2E", "site_worker_slug": "shell-e2e"})
	other := eng.post(t, "/api/sites", token, map[string]any{"name": "Shell E2E other", "site_worker_slug": "shell-e2e-other"})
	code := eng.post(t, "/api/admin/enrollment-codes", token, map[string]any{"site_id": site["site_id"]})["code"].(string)
	caFile := filepath.Join(tmp, "ca.pem")
	require.NoError(t, os.WriteFile(caFile, eng.checkHTTPS(t), 0o644))

	a := eng.enrollAgent(t, token, agentBin, tmp, "e2e-shell", code, caFile)
	a.env = []string{"CAIRN_AGENT_SHELL=/bin/sh"}
	a.run(t, agentBin)
	eng.waitStatus(t, token, a, "Connected", 90*time.Second)

	est := eng.post(t, "/api/shell/establish", token, map[string]any{"hostname": a.hostname})
	sessionID := est["session_id"].(string)
	client := eng.httpsClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "wss"+strings.TrimPrefix(eng.httpsBase, "https")+est["ws_url"].(string),
		&websocket.DialOptions{HTTPClient: client, HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
	require.NoError(t, err)
	defer ws.CloseNow()

	// The real shell answers; what the operator types is recorded.
	require.NoError(t, ws.Write(ctx, websocket.MessageBinary, []byte("echo cairn-$((6*7))\n")))
	var screen strings.Builder
	for !strings.Contains(screen.String(), "cairn-42") {
		_, b, err := ws.Read(ctx)
		require.NoError(t, err, "screen so far: %q; agent:\n%s", screen.String(), a.output())
		screen.Write(b)
	}
	// Stored while open.
	session := func() map[string]any {
		for _, s := range eng.call(t, "GET", "/api/shell/sessions?hostname="+a.hostname, token, nil)["sessions"].([]any) {
			if m := s.(map[string]any); m["session_id"] == sessionID {
				return m
			}
		}
		t.Fatalf("no session %s", sessionID)
		return nil
	}
	require.Eventually(t, func() bool { return session()["transcript_bytes"].(float64) > 0 }, 3*time.Minute, 250*time.Millisecond)
	require.Equal(t, "open", session()["state"])

	// The move ends the shell at once; the terminal says why.
	eng.post(t, "/api/sites/assign", token, map[string]any{"guids": []string{a.cfg.Agent.GUID}, "site_id": other["site_id"]})
	var last string
	for {
		_, b, err := ws.Read(ctx)
		if err != nil {
			require.Equal(t, websocket.StatusNormalClosure, websocket.CloseStatus(err), "%v", err)
			break
		}
		last = string(b)
	}
	require.Contains(t, last, "[Cairn] The session was closed: the device moved to another site.")
	require.Eventually(t, func() bool { return session()["state"] == "closed" }, 3*time.Minute, 250*time.Millisecond)
	require.Equal(t, "the device moved to another site", session()["close_reason"])

	tr := eng.rawCall(t, "GET", "/api/shell/sessions/"+sessionID+"/transcript", token, nil)
	require.Equal(t, 200, tr.status, tr.body)
	var input, output strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(tr.body), "\n")[1:] {
		var ev []any
		require.NoError(t, json.Unmarshal([]byte(line), &ev), line)
		switch ev[1] {
		case "i":
			input.WriteString(ev[2].(string))
		case "o":
			output.WriteString(ev[2].(string))
		}
	}
	require.Equal(t, "echo cairn-$((6*7))\n", input.String())
	require.Contains(t, output.String(), "cairn-42")
}
