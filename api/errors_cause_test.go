package api_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/api"
)

// A domain error's cause is logged with the request, never answered: the
// client sees the code and message only.
func TestErrorCauseLoggedNotSent(t *testing.T) {
	t.Parallel()
	cause := errors.New("dial tcp 10.0.0.7:5432: secret-detail")
	err := cairn.Wrap(cause, cairn.ECodeAgentTooOld, "the agent of %s is too old", "host-1")
	require.ErrorIs(t, err, cause)

	var logs bytes.Buffer
	w := httptest.NewRecorder()
	api.WriteError(w, httptest.NewRequest("GET", "/api/devices", nil), slog.New(slog.NewTextHandler(&logs, nil)), err)

	require.Equal(t, 409, w.Code)
	var body map[string]any
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body))
	require.Equal(t, map[string]any{"error": "agent_too_old", "message": "the agent of host-1 is too old"}, body)
	require.NotContains(t, w.Body.String(), "secret-detail")
	require.Contains(t, logs.String(), "secret-detail", "the cause is in the log")
	require.Contains(t, logs.String(), "agent_too_old")
}
