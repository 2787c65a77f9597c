package activities_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/activities"
)

// Whether Temporal retries a domain error comes from its code's
// declaration (cairn.Transient), with the error's Retry-After as the next
// delay; faults pass through as plain errors (retried).
func TestApplicationErrorRetryability(t *testing.T) {
	t.Parallel()
	busy := cairn.Errorf(cairn.ECodeUnavailable, "the Engine is too busy")
	busy.RetryAfterSeconds = 5
	for _, tc := range []struct {
		name      string
		err       error
		retryable bool
		delay     time.Duration
	}{
		{"busy", busy, true, 5 * time.Second},
		{"rate limited", cairn.Errorf(cairn.ECodeRateLimited, "slow down"), true, 0},
		{"not found", cairn.Errorf(cairn.ECodeNotFound, "gone"), false, 0},
		{"validation", cairn.Invalid("name", "is required"), false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var app *temporal.ApplicationError
			require.ErrorAs(t, activities.ApplicationError(tc.err), &app)
			require.Equal(t, cairn.ErrorCode(tc.err), app.Type())
			require.Equal(t, !tc.retryable, app.NonRetryable())
			require.Equal(t, tc.delay, app.NextRetryDelay())
		})
	}
	plain := errors.New("connection reset")
	require.Equal(t, plain, activities.ApplicationError(plain))
}
