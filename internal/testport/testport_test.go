package testport

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFreeIsBelowTheEphemeralRangeAndBindable(t *testing.T) {
	t.Parallel()
	low := ephemeralLow()
	seen := map[int]bool{}
	for range 50 {
		p := Free(t)
		require.Less(t, p, low, "the kernel may hand %d to an outgoing connection", p)
		require.False(t, seen[p], "port %d handed out twice", p)
		seen[p] = true
	}
	p := Free(t)
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	require.NoError(t, err)
	require.NoError(t, l.Close())
}
