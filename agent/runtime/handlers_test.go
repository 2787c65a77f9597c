package runtime_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/runtime"
)

// A guard's refusal replaces the handler's answer; a nil one lets it run.
func TestHandlersGuard(t *testing.T) {
	t.Parallel()
	h := runtime.NewHandlers()
	ran := 0
	require.NoError(t, h.Register("x_request", func(context.Context, runtime.Caller, json.RawMessage) (any, error) {
		ran++
		return "done", nil
	}))
	refused := &proto.Error{Code: proto.CodeRoleStopped, Message: "stopped"}
	h.Guard(func(typ string) error {
		if typ == "x_request" {
			return refused
		}
		return nil
	})
	_, err := h.Lookup("x_request")(context.Background(), nil, nil)
	require.Equal(t, refused, err)
	require.Zero(t, ran)
	require.Nil(t, h.Lookup("y_request"), "no handler is still no handler")

	h.Guard(func(string) error { return nil })
	out, err := h.Lookup("x_request")(context.Background(), nil, nil)
	require.NoError(t, err)
	require.Equal(t, "done", out)
	require.Equal(t, 1, ran)
}
