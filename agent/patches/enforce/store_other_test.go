//go:build !windows

package enforce_test

import (
	"testing"

	"github.com/cairn-rmm/cairn/agent/registry"
	"github.com/cairn-rmm/cairn/agent/registry/registrytest"
)

// newStore is a fresh in-memory registry per test on Linux.
func newStore(t *testing.T) registry.Store {
	t.Helper()
	t.Parallel()
	return registrytest.New()
}
