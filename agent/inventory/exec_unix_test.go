//go:build unix

package inventory

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCommand(t *testing.T) {
	t.Parallel()
	out, code, err := command(t.Context(), nil, "sh", "-c", `printf "$LC_ALL"`)
	require.NoError(t, err)
	require.Zero(t, code)
	require.Equal(t, "C", out, "tools run in the C locale")

	out, code, err = command(t.Context(), []int{100}, "sh", "-c", "echo updates; exit 100")
	require.NoError(t, err, "an exit code listed as ok is a success")
	require.Equal(t, 100, code)
	require.Equal(t, "updates\n", out)

	_, code, err = command(t.Context(), []int{100}, "sh", "-c", "echo 'W: stale lists' >&2; echo 'E: dpkg was interrupted' >&2; exit 1")
	require.Equal(t, 1, code)
	require.EqualError(t, err, "sh: exit status 1: E: dpkg was interrupted")

	_, _, err = command(t.Context(), nil, "/nonexistent/tool")
	require.Error(t, err)

	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	// The command would run for days: returning at all means it was
	// killed at the deadline (the test's own timeout guards a hang).
	_, _, err = command(ctx, nil, "sleep", "1000000")
	require.ErrorIs(t, err, context.DeadlineExceeded)
}
