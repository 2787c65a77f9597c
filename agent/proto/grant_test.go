package proto

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A payload keeps its digest through PostgreSQL's jsonb, which reorders
// keys and respaces (the agent sees what jsonb gives back); another
// payload does not.
func TestGrantDigestSurvivesJSONB(t *testing.T) {
	t.Parallel()
	sent := []byte(`{"path": "/etc/motd", "action":"write_text", "n": 1.0, "s": "a<b"}`)
	stored := []byte(`{"n": 1.0, "s": "a<b", "path": "/etc/motd", "action": "write_text"}`)
	require.Equal(t, GrantDigest(sent), GrantDigest(stored))
	require.NotEqual(t, GrantDigest(sent), GrantDigest([]byte(`{"path": "/etc/cron.d/x", "action":"write_text", "n": 1.0, "s": "a<b"}`)))
	require.Equal(t, GrantDigest(nil), GrantDigest([]byte(`{}`)))
}
