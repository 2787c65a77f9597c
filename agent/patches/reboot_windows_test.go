package patches

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/windows/registry"
)

// A reboot is required while one of the flag keys exists (a private key
// stands in for Windows Update's, which a test must not set), and the
// real keys are read without error.
func TestRebootRequiredReadsTheFlagKeys(t *testing.T) {
	t.Parallel()
	path := fmt.Sprintf(`SOFTWARE\CairnTest\reboot-%d`, time.Now().UnixNano())
	keys := []string{`SOFTWARE\CairnTest\absent`, path}
	need, err := anyKeyExists(keys)
	require.NoError(t, err)
	require.False(t, need)
	k, _, err := registry.CreateKey(registry.LOCAL_MACHINE, path, registry.ALL_ACCESS)
	require.NoError(t, err)
	require.NoError(t, k.Close())
	t.Cleanup(func() { _ = registry.DeleteKey(registry.LOCAL_MACHINE, path) })
	need, err = anyKeyExists(keys)
	require.NoError(t, err)
	require.True(t, need)

	_, err = RebootRequired(t.Context())
	require.NoError(t, err)
}
