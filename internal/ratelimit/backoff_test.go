package ratelimit_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/internal/ratelimit"
)

func TestBackoffDelaysDoubleUpToTheCap(t *testing.T) {
	t.Parallel()
	b := ratelimit.Backoff{Free: 3, Base: time.Second, Max: 10 * time.Second}
	var got []time.Duration
	for n := 1; n <= 8; n++ {
		got = append(got, b.Delay(n))
	}
	s := time.Second
	require.Equal(t, []time.Duration{0, 0, s, 2 * s, 4 * s, 8 * s, 10 * s, 10 * s}, got)
	require.Equal(t, 10*s, b.Delay(1<<20), "no overflow far past the cap")
}
