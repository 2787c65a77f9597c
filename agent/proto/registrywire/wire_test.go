package registrywire_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	registry "github.com/cairn-rmm/cairn/agent/proto/registrywire"
)

func TestParsePath(t *testing.T) {
	t.Parallel()
	p, err := registry.ParsePath("path", `hklm\Software\Vendor`)
	require.NoError(t, err)
	require.Equal(t, registry.Path{Root: "HKLM", Sub: `Software\Vendor`}, p)
	require.Equal(t, `HKLM\Software\Vendor`, p.String())
	require.Equal(t, "Vendor", p.Name())
	require.Equal(t, `HKLM\Software`, p.Parent().String())
	require.Equal(t, `HKLM\Software\Vendor\App`, p.Child("App").String())
	root, err := registry.ParsePath("path", "HKU")
	require.NoError(t, err)
	require.Equal(t, "HKU", root.String())
	require.Equal(t, root, root.Parent())

	for _, bad := range []string{"", "HKEY_LOCAL_MACHINE", `C:\Windows`, `HKLM\`, `HKLM\\Software`, `HKLM\Software\`,
		`HKLM\a` + "\x00", `HKLM\` + strings.Repeat("k", 256), "HKLM/Software"} {
		_, err := registry.ParsePath("path", bad)
		var fe *registry.FieldError
		require.True(t, errors.As(err, &fe), "%q", bad)
		require.Equal(t, "path", fe.Field)
		require.Equal(t, proto.CodeOpInvalid, fe.Code)
	}
	_, err = registry.ParsePath("path", `HKLM\`+strings.Repeat("k", 255))
	require.NoError(t, err)
}

// parse decodes data as it arrives in JSON, then checks it.
func parse(t *testing.T, typ, data string) (registry.Value, error) {
	t.Helper()
	var d any
	require.NoError(t, json.Unmarshal([]byte(data), &d))
	return registry.ParseValue("value", &proto.RegistryValue{Name: "v", Type: typ, Data: d})
}

func TestParseValue(t *testing.T) {
	t.Parallel()
	good := []struct {
		typ, data string
		want      any
		wire      any
	}{
		{"REG_SZ", `"text"`, "text", "text"},
		{"REG_SZ", `""`, "", ""},
		{"REG_EXPAND_SZ", `"%PATH%"`, "%PATH%", "%PATH%"},
		{"REG_MULTI_SZ", `["a","b"]`, []string{"a", "b"}, []string{"a", "b"}},
		{"REG_MULTI_SZ", `[]`, []string{}, []string{}},
		{"REG_DWORD", `0`, uint32(0), uint32(0)},
		{"REG_DWORD", `4294967295`, uint32(4294967295), uint32(4294967295)},
		{"REG_QWORD", `"18446744073709551615"`, uint64(18446744073709551615), "18446744073709551615"},
		{"REG_QWORD", `"0"`, uint64(0), "0"},
		{"REG_QWORD", `9007199254740991`, uint64(1<<53 - 1), "9007199254740991"},
		{"REG_BINARY", `"00FF10"`, []byte{0, 0xff, 0x10}, "00ff10"},
		{"REG_BINARY", `""`, []byte{}, ""},
	}
	for _, c := range good {
		v, err := parse(t, c.typ, c.data)
		require.NoError(t, err, "%s %s", c.typ, c.data)
		require.Equal(t, c.want, v.Data, "%s %s", c.typ, c.data)
		w := registry.Wire(v)
		require.Equal(t, c.typ, w.Type)
		require.Equal(t, c.wire, w.Data, "%s %s", c.typ, c.data)
	}

	bad := []struct{ typ, data, field string }{
		{"REG_NONE", `""`, "value.type"},
		{"reg_sz", `""`, "value.type"},
		{"REG_SZ", `12`, "value.data"},
		{"REG_SZ", `"a\u0000b"`, "value.data"},
		{"REG_MULTI_SZ", `"a"`, "value.data"},
		{"REG_MULTI_SZ", `["a",""]`, "value.data"},
		{"REG_MULTI_SZ", `["a",1]`, "value.data"},
		{"REG_MULTI_SZ", `null`, "value.data"},
		{"REG_DWORD", `-1`, "value.data"},
		{"REG_DWORD", `4294967296`, "value.data"},
		{"REG_DWORD", `1.5`, "value.data"},
		{"REG_DWORD", `"12"`, "value.data"},
		{"REG_QWORD", `"18446744073709551616"`, "value.data"},
		{"REG_QWORD", `"-1"`, "value.data"},
		{"REG_QWORD", `"+1"`, "value.data"},
		{"REG_QWORD", `"0x10"`, "value.data"},
		{"REG_QWORD", `9007199254740992`, "value.data"},
		{"REG_BINARY", `"abc"`, "value.data"},
		{"REG_BINARY", `"zz"`, "value.data"},
		{"REG_BINARY", `[1,2]`, "value.data"},
	}
	for _, c := range bad {
		_, err := parse(t, c.typ, c.data)
		var fe *registry.FieldError
		require.True(t, errors.As(err, &fe), "%s %s", c.typ, c.data)
		require.Equal(t, c.field, fe.Field, "%s %s", c.typ, c.data)
		require.Equal(t, proto.CodeRegistryTypeInvalid, fe.Code)
	}
	_, err := registry.ParseValue("value", &proto.RegistryValue{Name: strings.Repeat("n", 16384), Type: "REG_SZ", Data: ""})
	var fe *registry.FieldError
	require.True(t, errors.As(err, &fe))
	require.Equal(t, "value.name", fe.Field)
	_, err = registry.ParseValue("value", &proto.RegistryValue{Type: "REG_BINARY", Data: strings.Repeat("00", registry.MaxDataBytes)})
	require.True(t, errors.As(err, &fe))
	require.Equal(t, "value.data", fe.Field)
}

func TestFromRaw(t *testing.T) {
	t.Parallel()
	utf16 := func(s string) []byte {
		var b []byte
		for _, r := range s {
			b = append(b, byte(r), byte(r>>8))
		}
		return b
	}
	require.Equal(t, "hé", registry.FromRaw("a", registry.TypeSZ, utf16("hé\x00")).Data)
	require.Equal(t, []string{"a", "bc"}, registry.FromRaw("a", registry.TypeMultiSZ, utf16("a\x00bc\x00\x00")).Data)
	require.Equal(t, uint32(0x01020304), registry.FromRaw("a", registry.TypeDWord, []byte{4, 3, 2, 1}).Data)
	require.Equal(t, uint64(1<<63), registry.FromRaw("a", registry.TypeQWord, []byte{0, 0, 0, 0, 0, 0, 0, 0x80}).Data)
	// Damaged and foreign values are listed as hex bytes.
	w := registry.Wire(registry.FromRaw("a", registry.TypeDWord, []byte{1, 2, 3}))
	require.Equal(t, proto.RegistryValue{Name: "a", Type: "REG_DWORD", Data: "010203"}, w)
	w = registry.Wire(registry.FromRaw("a", 6, []byte{0xab}))
	require.Equal(t, proto.RegistryValue{Name: "a", Type: "REG_LINK", Data: "ab"}, w)
	require.Equal(t, "REG_0x20", registry.TypeName(0x20))
}

func TestCheck(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		req   proto.RegistryRequest
		field string
	}{
		{proto.RegistryRequest{Action: "format"}, "action"},
		{proto.RegistryRequest{Action: proto.RegistryChildren}, "path"},
		{proto.RegistryRequest{Action: proto.RegistryKeyDelete, Path: "HKLM"}, "path"},
		{proto.RegistryRequest{Action: proto.RegistryKeyCreate, Path: "HKCU"}, "path"},
		{proto.RegistryRequest{Action: proto.RegistryKeyRename, Path: `HKCU\a`, NewName: `b\c`}, "new_name"},
		{proto.RegistryRequest{Action: proto.RegistryKeyRename, Path: `HKCU\a`}, "new_name"},
		{proto.RegistryRequest{Action: proto.RegistryValueCreate, Path: `HKCU\a`}, "value"},
		{proto.RegistryRequest{Action: proto.RegistryValueDelete, Path: `HKCU\a`}, "value"},
		{proto.RegistryRequest{Action: proto.RegistryValueUpdate, Path: `HKCU\a`, Value: &proto.RegistryValue{Type: "REG_DWORD", Data: "x"}}, "value.data"},
	} {
		_, _, err := registry.Check(c.req)
		var fe *registry.FieldError
		require.True(t, errors.As(err, &fe), "%+v", c.req)
		require.Equal(t, c.field, fe.Field, "%+v", c.req)
	}
	p, v, err := registry.Check(proto.RegistryRequest{Action: proto.RegistryValueDelete, Path: `hkcu\a`, Value: &proto.RegistryValue{Name: "x"}})
	require.NoError(t, err)
	require.Equal(t, `HKCU\a`, p.String())
	require.Equal(t, "x", v.Name)
}
