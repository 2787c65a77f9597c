package patches

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The OS commands that schedule a patch reboot a minute from now.
func TestRebootCommand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		goos string
		name string
		args []string
	}{
		{"linux", "shutdown", []string{"-r", "+1", "msg"}},
		{"windows", "shutdown", []string{"/r", "/t", "60", "/c", "msg"}},
		{"plan9", "", nil},
	} {
		name, args := rebootCommand(tc.goos, "msg")
		require.Equal(t, tc.name, name, tc.goos)
		require.Equal(t, tc.args, args, tc.goos)
	}
}
