//go:build linux

package shells

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLookupAccount(t *testing.T) {
	t.Parallel()
	const passwd = `root:x:0:0:root:/root:/bin/sh
svc:x:998:998::/var/lib/svc:/usr/sbin/nologin
gone:x:997:997::/home/gone:/no/such/shell
broken line
`
	for _, tc := range []struct {
		name string
		uid  int
		want account
	}{
		{"login shell", 0, account{name: "root", home: "/root", shell: "/bin/sh"}},
		{"nologin falls back", 998, account{name: "svc", home: "/var/lib/svc", shell: fallbackShell}},
		{"missing shell falls back", 997, account{name: "gone", home: "/home/gone", shell: fallbackShell}},
		{"unknown uid", 1234, account{name: "1234", home: "/", shell: fallbackShell}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, lookupAccount(strings.NewReader(passwd), tc.uid))
		})
	}
}

func TestShellOverride(t *testing.T) {
	t.Parallel()
	a := account{name: "root", home: "/root", shell: "/bin/bash"}
	for _, tc := range []struct{ override, want string }{
		{"", "/bin/bash"},
		{"/bin/sh", "/bin/sh"},
		{"/no/such/shell", "/bin/bash"},
		{"/usr/sbin/nologin", "/bin/bash"},
	} {
		require.Equal(t, tc.want, withShellOverride(a, tc.override).shell, tc.override)
	}
}
