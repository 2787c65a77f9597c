//go:build windows

package enforce_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/patches/enforce"
	"github.com/cairn-rmm/cairn/agent/registry"
)

// serial: on Windows (under Wine, in the test's private prefix) every test
// edits the machine's real Windows Update policy keys, so they run one at
// a time.
var serial sync.Mutex

// newStore is the real registry with the policy and backup keys removed
// before and after the test.
func newStore(t *testing.T) registry.Store {
	t.Helper()
	serial.Lock()
	store := registry.System()
	clean := func() {
		for _, k := range []registry.Path{enforce.WindowsUpdateKey, enforce.BackupKey} {
			if _, _, err := store.Children(k); err == nil {
				require.NoError(t, store.DeleteKey(k))
			}
		}
	}
	clean()
	t.Cleanup(func() { clean(); serial.Unlock() })
	return store
}
