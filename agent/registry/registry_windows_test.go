//go:build windows

package registry_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	winreg "golang.org/x/sys/windows/registry"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/registry"
	"github.com/cairn-rmm/cairn/agent/runtime"
)

// call runs one request through the registered handler, as the runtime
// does for an operation, and decodes the answer into out.
func call(t *testing.T, h runtime.Handler, req proto.RegistryRequest, out any) *proto.Error {
	t.Helper()
	raw, err := json.Marshal(req)
	require.NoError(t, err)
	res, err := h(context.Background(), nil, raw)
	if err != nil {
		var pe *proto.Error
		require.True(t, errors.As(err, &pe), "%v", err)
		return pe
	}
	b, err := json.Marshal(res)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, out))
	return nil
}

// TestWindowsRegistry edits a key of its own under HKCU\Software through
// the handler and the real registry (under Wine in make test-wine), and
// checks each change with the registry package of x/sys directly.
func TestWindowsRegistry(t *testing.T) {
	t.Parallel()
	handlers := runtime.NewHandlers()
	require.NoError(t, registry.Register(handlers, registry.System(), nil))
	h := handlers.Lookup(proto.EventRegistryManagement)
	require.NotNil(t, h)

	name := fmt.Sprintf("CairnTest-%016x", rand.Uint64())
	base := `HKCU\Software\` + name
	t.Cleanup(func() {
		_ = call(t, h, proto.RegistryRequest{Action: proto.RegistryKeyDelete, Path: base}, &proto.RegistryKeyResult{})
		_ = call(t, h, proto.RegistryRequest{Action: proto.RegistryKeyDelete, Path: base + "-renamed"}, &proto.RegistryKeyResult{})
	})

	var roots proto.RegistryRootsResult
	require.Nil(t, call(t, h, proto.RegistryRequest{Action: proto.RegistryRoots}, &roots))
	require.Len(t, roots.Roots, 5)

	var key proto.RegistryKeyResult
	require.Nil(t, call(t, h, proto.RegistryRequest{Action: proto.RegistryKeyCreate, Path: base}, &key))
	require.Equal(t, proto.RegistryKey{Name: name, Path: base}, key.Key)
	pe := call(t, h, proto.RegistryRequest{Action: proto.RegistryKeyCreate, Path: base}, &key)
	require.NotNil(t, pe)
	require.Equal(t, proto.CodePathExists, pe.Code)
	pe = call(t, h, proto.RegistryRequest{Action: proto.RegistryKeyCreate, Path: base + `\missing\child`}, &key)
	require.NotNil(t, pe)
	require.Equal(t, proto.CodeRegistryKeyNotFound, pe.Code)
	require.Nil(t, call(t, h, proto.RegistryRequest{Action: proto.RegistryKeyCreate, Path: base + `\Sub`}, &key))
	require.Nil(t, call(t, h, proto.RegistryRequest{Action: proto.RegistryKeyCreate, Path: base + `\Sub\Deeper`}, &key))

	values := []proto.RegistryValue{
		{Name: "", Type: "REG_SZ", Data: "default value"},
		{Name: "Text", Type: "REG_SZ", Data: "héllo wörld"},
		{Name: "Expand", Type: "REG_EXPAND_SZ", Data: `%SystemRoot%\system32`},
		{Name: "Multi", Type: "REG_MULTI_SZ", Data: []any{"one", "two", "three"}},
		{Name: "DWord", Type: "REG_DWORD", Data: float64(4294967295)},
		{Name: "QWord", Type: "REG_QWORD", Data: "18446744073709551615"},
		{Name: "Binary", Type: "REG_BINARY", Data: "00ff10ab"},
	}
	for _, v := range values {
		var res proto.RegistryValueResult
		require.Nil(t, call(t, h, proto.RegistryRequest{Action: proto.RegistryValueCreate, Path: base, Value: &v}, &res), v.Name)
		require.Equal(t, base, res.Path)
	}
	pe = call(t, h, proto.RegistryRequest{Action: proto.RegistryValueCreate, Path: base, Value: &values[1]}, &proto.RegistryValueResult{})
	require.NotNil(t, pe)
	require.Equal(t, proto.CodePathExists, pe.Code)
	pe = call(t, h, proto.RegistryRequest{Action: proto.RegistryValueUpdate, Path: base,
		Value: &proto.RegistryValue{Name: "Nope", Type: "REG_SZ", Data: "x"}}, &proto.RegistryValueResult{})
	require.NotNil(t, pe)
	require.Equal(t, proto.CodeRegistryValueNotFound, pe.Code)
	pe = call(t, h, proto.RegistryRequest{Action: proto.RegistryValueCreate, Path: base,
		Value: &proto.RegistryValue{Name: "Bad", Type: "REG_DWORD", Data: "12"}}, &proto.RegistryValueResult{})
	require.NotNil(t, pe)
	require.Equal(t, proto.CodeRegistryTypeInvalid, pe.Code)

	// What the registry holds, read without the package under test.
	k, err := winreg.OpenKey(winreg.CURRENT_USER, `Software\`+name, winreg.QUERY_VALUE)
	require.NoError(t, err)
	s, typ, err := k.GetStringValue("Text")
	require.NoError(t, err)
	require.Equal(t, "héllo wörld", s)
	require.Equal(t, uint32(winreg.SZ), typ)
	_, typ, err = k.GetStringValue("Expand")
	require.NoError(t, err)
	require.Equal(t, uint32(winreg.EXPAND_SZ), typ)
	list, _, err := k.GetStringsValue("Multi")
	require.NoError(t, err)
	require.Equal(t, []string{"one", "two", "three"}, list)
	n, typ, err := k.GetIntegerValue("DWord")
	require.NoError(t, err)
	require.Equal(t, uint64(4294967295), n)
	require.Equal(t, uint32(winreg.DWORD), typ)
	n, typ, err = k.GetIntegerValue("QWord")
	require.NoError(t, err)
	require.Equal(t, uint64(18446744073709551615), n)
	require.Equal(t, uint32(winreg.QWORD), typ)
	b, _, err := k.GetBinaryValue("Binary")
	require.NoError(t, err)
	require.Equal(t, []byte{0x00, 0xff, 0x10, 0xab}, b)
	k.Close()

	var kids proto.RegistryChildrenResult
	require.Nil(t, call(t, h, proto.RegistryRequest{Action: proto.RegistryChildren, Path: base}, &kids))
	require.Equal(t, base, kids.Path)
	require.Equal(t, []proto.RegistryKey{{Name: "Sub", Path: base + `\Sub`}}, kids.Subkeys)
	got := map[string]proto.RegistryValue{}
	for _, v := range kids.Values {
		got[v.Name] = v
	}
	require.Len(t, got, len(values))
	require.Equal(t, "default value", got[""].Data)
	require.Equal(t, "héllo wörld", got["Text"].Data)
	require.Equal(t, "REG_EXPAND_SZ", got["Expand"].Type)
	require.Equal(t, []any{"one", "two", "three"}, got["Multi"].Data)
	require.Equal(t, float64(4294967295), got["DWord"].Data)
	require.Equal(t, "18446744073709551615", got["QWord"].Data)
	require.Equal(t, "00ff10ab", got["Binary"].Data)

	// Update may change the type.
	require.Nil(t, call(t, h, proto.RegistryRequest{Action: proto.RegistryValueUpdate, Path: base,
		Value: &proto.RegistryValue{Name: "Text", Type: "REG_DWORD", Data: float64(7)}}, &proto.RegistryValueResult{}))
	require.Nil(t, call(t, h, proto.RegistryRequest{Action: proto.RegistryValueDelete, Path: base,
		Value: &proto.RegistryValue{Name: "Binary"}}, &proto.RegistryValueResult{}))
	pe = call(t, h, proto.RegistryRequest{Action: proto.RegistryValueDelete, Path: base,
		Value: &proto.RegistryValue{Name: "Binary"}}, &proto.RegistryValueResult{})
	require.NotNil(t, pe)
	require.Equal(t, proto.CodeRegistryValueNotFound, pe.Code)
	require.Nil(t, call(t, h, proto.RegistryRequest{Action: proto.RegistryChildren, Path: base}, &kids))
	got = map[string]proto.RegistryValue{}
	for _, v := range kids.Values {
		got[v.Name] = v
	}
	require.Equal(t, proto.RegistryValue{Name: "Text", Type: "REG_DWORD", Data: float64(7)}, got["Text"])
	require.NotContains(t, got, "Binary")

	// Rename copies the whole tree, values included, and removes the old key.
	require.Nil(t, call(t, h, proto.RegistryRequest{Action: proto.RegistryValueCreate, Path: base + `\Sub\Deeper`,
		Value: &proto.RegistryValue{Name: "Deep", Type: "REG_SZ", Data: "kept"}}, &proto.RegistryValueResult{}))
	require.Nil(t, call(t, h, proto.RegistryRequest{Action: proto.RegistryKeyRename, Path: base, NewName: name + "-renamed"}, &key))
	require.Equal(t, proto.RegistryKey{Name: name + "-renamed", Path: base + "-renamed"}, key.Key)
	pe = call(t, h, proto.RegistryRequest{Action: proto.RegistryChildren, Path: base}, &kids)
	require.NotNil(t, pe)
	require.Equal(t, proto.CodeRegistryKeyNotFound, pe.Code)
	require.Nil(t, call(t, h, proto.RegistryRequest{Action: proto.RegistryChildren, Path: base + `-renamed\Sub\Deeper`}, &kids))
	require.Equal(t, []proto.RegistryValue{{Name: "Deep", Type: "REG_SZ", Data: "kept"}}, kids.Values)
	require.Nil(t, call(t, h, proto.RegistryRequest{Action: proto.RegistryChildren, Path: base + "-renamed"}, &kids))
	require.Len(t, kids.Values, len(values)-1)

	// Rename onto an existing key is refused and changes nothing.
	require.Nil(t, call(t, h, proto.RegistryRequest{Action: proto.RegistryKeyCreate, Path: base + `-renamed\Other`}, &key))
	pe = call(t, h, proto.RegistryRequest{Action: proto.RegistryKeyRename, Path: base + `-renamed\Sub`, NewName: "Other"}, &key)
	require.NotNil(t, pe)
	require.Equal(t, proto.CodePathExists, pe.Code)
	require.Nil(t, call(t, h, proto.RegistryRequest{Action: proto.RegistryChildren, Path: base + `-renamed\Sub\Deeper`}, &kids))

	// Delete removes the tree.
	require.Nil(t, call(t, h, proto.RegistryRequest{Action: proto.RegistryKeyDelete, Path: base + "-renamed"}, &key))
	_, err = winreg.OpenKey(winreg.CURRENT_USER, `Software\`+name+"-renamed", winreg.QUERY_VALUE)
	require.ErrorIs(t, err, winreg.ErrNotExist)
	pe = call(t, h, proto.RegistryRequest{Action: proto.RegistryKeyDelete, Path: base + "-renamed"}, &key)
	require.NotNil(t, pe)
	require.Equal(t, proto.CodeRegistryKeyNotFound, pe.Code)

	// The roots are listed and readable.
	require.Nil(t, call(t, h, proto.RegistryRequest{Action: proto.RegistryChildren, Path: "HKLM"}, &kids))
	require.NotEmpty(t, kids.Subkeys)
}
