//go:build !windows

package registry_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/registry"
	"github.com/cairn-rmm/cairn/agent/runtime"
)

// TestUnsupportedPlatform: outside Windows every request, even a
// malformed one, answers unsupported_platform.
func TestUnsupportedPlatform(t *testing.T) {
	t.Parallel()
	handlers := runtime.NewHandlers()
	require.NoError(t, registry.Register(handlers, registry.System(), nil))
	h := handlers.Lookup(proto.EventRegistryManagement)
	require.NotNil(t, h)
	for _, payload := range []string{`{"action":"roots"}`, `{"action":"children","path":"HKLM"}`, `nonsense`} {
		_, err := h(context.Background(), nil, []byte(payload))
		var pe *proto.Error
		require.True(t, errors.As(err, &pe), payload)
		require.Equal(t, proto.CodeUnsupportedPlatform, pe.Code)
	}
}
