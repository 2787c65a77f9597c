package cairn_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
)

// An error keeps its cause for errors.Is/As and the logs, while Error()
// (which messages are built from) shows only the code and message.
func TestErrorCause(t *testing.T) {
	t.Parallel()
	cause := fmt.Errorf("query devices: %w", context.DeadlineExceeded)
	err := fmt.Errorf("route: %w", cairn.Wrap(cause, cairn.ECodeUnavailable, "try again"))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, cairn.ECodeUnavailable, cairn.ErrorCode(err))
	var e *cairn.Error
	require.True(t, errors.As(err, &e))
	require.Equal(t, cause, e.Cause)
	require.Equal(t, cause, errors.Unwrap(e))
	require.Equal(t, "unavailable: try again", e.Error())
	require.Nil(t, errors.Unwrap(cairn.Errorf(cairn.ECodeNotFound, "x")))
}
