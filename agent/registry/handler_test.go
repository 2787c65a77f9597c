package registry_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/registry"
	"github.com/cairn-rmm/cairn/agent/registry/registrytest"
	"github.com/cairn-rmm/cairn/agent/runtime"
)

// TestChildrenStayWithinOneReply: a children answer never outgrows one
// socket reply; what is left out is said.
func TestChildrenStayWithinOneReply(t *testing.T) {
	t.Parallel()
	store := registrytest.New()
	handlers := runtime.NewHandlers()
	require.NoError(t, registry.Register(handlers, store, nil))
	h := handlers.Lookup(proto.EventRegistryManagement)
	list := func(path string) proto.RegistryChildrenResult {
		t.Helper()
		res, err := h(context.Background(), nil, []byte(fmt.Sprintf(`{"action":"children","path":%q}`, path)))
		require.NoError(t, err)
		b, err := json.Marshal(res)
		require.NoError(t, err)
		require.Less(t, len(b), 1536<<10, "fits MaxReplyBytes")
		var out proto.RegistryChildrenResult
		require.NoError(t, json.Unmarshal(b, &out))
		return out
	}

	base, err := registry.ParsePath("path", `HKCU\Software\Big`)
	require.NoError(t, err)
	require.NoError(t, store.CreateKey(base))
	require.NoError(t, store.SetValue(base, registry.Value{Name: "blob", Type: registry.TypeBinary, Data: make([]byte, 100<<10)}, true))
	require.NoError(t, store.SetValue(base, registry.Value{Name: "small", Type: registry.TypeDWord, Data: uint32(1)}, true))
	out := list(base.String())
	require.True(t, out.Truncated)
	require.Equal(t, []proto.RegistryValue{{Name: "blob", Type: "REG_BINARY"}, {Name: "small", Type: "REG_DWORD", Data: float64(1)}}, out.Values)

	many, err := registry.ParsePath("path", `HKCU\Software\Many`)
	require.NoError(t, err)
	require.NoError(t, store.CreateKey(many))
	for i := range 5000 {
		require.NoError(t, store.CreateKey(many.Child(fmt.Sprintf("%04d-%s", i, strings.Repeat("k", 200)))))
	}
	out = list(many.String())
	require.True(t, out.Truncated)
	require.NotEmpty(t, out.Subkeys)
	require.Less(t, len(out.Subkeys), 5000)
	require.True(t, strings.HasPrefix(out.Subkeys[0].Name, "0000-"), "the first keys by name are kept")

	out = list(`HKCU\Software`)
	require.False(t, out.Truncated)
	require.Len(t, out.Subkeys, 2)
}
