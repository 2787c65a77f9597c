package inventory

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSettledMemory(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	for _, tc := range []struct {
		name    string
		answers []uint64 // totals of successive reads; the last repeats
		err     error    // every read fails with this
		want    uint64
		wantErr error
		calls   int
	}{
		{"a real total at once", []uint64{8 << 30}, nil, 8 << 30, nil, 1},
		{"Wine's empty cache, then the total", []uint64{0, 0, 8 << 30}, nil, 8 << 30, nil, 3},
		{"never a total", []uint64{0}, nil, 0, errNoMemory, memoryAttempts},
		{"a failure is not retried", nil, boom, 0, boom, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			calls := 0
			got, err := settledMemory(t.Context(), func() (uint64, uint64, error) {
				calls++
				if tc.err != nil {
					return 0, 0, tc.err
				}
				v := tc.answers[min(calls, len(tc.answers))-1]
				return v, v, nil
			})
			require.ErrorIs(t, err, tc.wantErr)
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.calls, calls)
		})
	}
}

func TestSettledMemoryStopsWithItsContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	calls := 0
	_, err := settledMemory(ctx, func() (uint64, uint64, error) {
		calls++
		cancel()
		return 0, 0, nil
	})
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, 1, calls)
}
