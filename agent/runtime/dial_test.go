package runtime

import (
	"net/http"
	"testing"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/transport"
)

func TestDialWebSocketWithHeader(t *testing.T) {
	t.Parallel()
	e := setup(t)
	res := e.enroll(t)
	tokens := e.tokens(t)
	ctx := t.Context()

	// Device auth (checked by the fake as on every agent route) plus the
	// session's token header.
	url, token := e.engine.ShellSession("s1")
	conn, err := tokens.DialWebSocket(ctx, url, http.Header{proto.HeaderShellToken: {token}})
	require.NoError(t, err)
	defer conn.CloseNow()
	sc := <-e.engine.ShellConns()
	defer sc.WS.CloseNow()
	require.Equal(t, "s1", sc.SessionID)
	require.Equal(t, res.Device.GUID, sc.GUID)
	require.NoError(t, conn.Write(ctx, websocket.MessageBinary, []byte("hi")))
	_, got, err := sc.WS.Read(ctx)
	require.NoError(t, err)
	require.Equal(t, "hi", string(got))

	// A wrong token is the Engine's refusal, with its code.
	url, _ = e.engine.ShellSession("s2")
	_, err = tokens.DialWebSocket(ctx, url, http.Header{proto.HeaderShellToken: {"wrong"}})
	require.Error(t, err)
	require.Equal(t, "shell_token_invalid", transport.Code(err))

	// A stale access token is refreshed once and the dial repeated.
	e.engine.ExpireAccessTokens()
	url, token = e.engine.ShellSession("s3")
	conn3, err := tokens.DialWebSocket(ctx, url, http.Header{proto.HeaderShellToken: {token}})
	require.NoError(t, err)
	defer conn3.CloseNow()
	sc3 := <-e.engine.ShellConns()
	defer sc3.WS.CloseNow()
	require.Equal(t, 1, e.engine.Refreshes())
}
