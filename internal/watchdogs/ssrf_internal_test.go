package watchdogs

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAddrGuard(t *testing.T) {
	t.Parallel()
	none, err := newAddrGuard(nil)
	require.NoError(t, err)
	lab, err := newAddrGuard([]string{"10.20.0.0/16", "127.0.0.1/32"})
	require.NoError(t, err)
	for _, tc := range []struct {
		addr         string
		refused, lab bool // refused by default, refused with the lab's allow-list
	}{
		{"127.0.0.1", true, false},
		{"127.0.0.2", true, true},
		{"::1", true, true},
		{"::ffff:127.0.0.1", true, false},
		{"169.254.169.254", true, true},
		{"fe80::1", true, true},
		{"10.0.0.1", true, true},
		{"10.20.3.4", true, false},
		{"172.16.5.5", true, true},
		{"192.168.1.1", true, true},
		{"100.64.0.1", true, true},
		{"fd00::1", true, true},
		{"224.0.0.1", true, true},
		{"ff02::1", true, true},
		{"0.0.0.0", true, true},
		{"::", true, true},
		{"255.255.255.255", true, true},
		{"93.184.215.14", false, false},
		{"2606:2800:21f:cb07:6820:80da:af6b:8b2c", false, false},
		{"8.8.8.8", false, false},
	} {
		a := netip.MustParseAddr(tc.addr)
		require.Equal(t, tc.refused, none.check(a) != nil, "%s by default", tc.addr)
		require.Equal(t, tc.lab, lab.check(a) != nil, "%s with the allow-list", tc.addr)
	}
	_, err = newAddrGuard([]string{"not a cidr"})
	require.Error(t, err)
}
