// Package registrywire holds the registry editor's wire rules (SPEC
// "Registry", docs/api.md "Registry"): paths, names, typed value data and
// whole requests are checked here, in code that builds on every platform
// and imports only agent/proto, so the Engine checks a request with the
// same rules as the agent (agent/registry) before it sends it, without
// importing the agent's runtime.
package registrywire

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// Value types, numbered as Windows numbers them (winnt.h REG_*).
const (
	TypeNone     uint32 = 0
	TypeSZ       uint32 = 1
	TypeExpandSZ uint32 = 2
	TypeBinary   uint32 = 3
	TypeDWord    uint32 = 4
	TypeMultiSZ  uint32 = 7
	TypeQWord    uint32 = 11
)

var typeNames = map[uint32]string{
	0: "REG_NONE", 1: "REG_SZ", 2: "REG_EXPAND_SZ", 3: "REG_BINARY", 4: "REG_DWORD",
	5: "REG_DWORD_BIG_ENDIAN", 6: "REG_LINK", 7: "REG_MULTI_SZ", 8: "REG_RESOURCE_LIST",
	9: "REG_FULL_RESOURCE_DESCRIPTOR", 10: "REG_RESOURCE_REQUIREMENTS_LIST", 11: "REG_QWORD",
}

// writable are the types the editor creates and updates.
var writable = map[string]uint32{
	"REG_SZ": TypeSZ, "REG_EXPAND_SZ": TypeExpandSZ, "REG_MULTI_SZ": TypeMultiSZ,
	"REG_DWORD": TypeDWord, "REG_QWORD": TypeQWord, "REG_BINARY": TypeBinary,
}

// TypeName is a type's REG_* name ("REG_0x1f" for one Windows does not name).
func TypeName(t uint32) string {
	if n, ok := typeNames[t]; ok {
		return n
	}
	return fmt.Sprintf("REG_0x%x", t)
}

// Limits. A key name is at most 255 characters and a value name 16383
// (Windows' own limits); the data of one value on the wire at most
// MaxDataBytes, so an operation's answer stays far below Temporal's
// payload limit.
const (
	MaxKeyName   = 255
	MaxValueName = 16383
	MaxPath      = 32767
	MaxDataBytes = 256 << 10
)

// Roots are the root keys, in the order the roots action lists them.
var Roots = []proto.RegistryRoot{
	{Path: "HKLM", Label: "HKEY_LOCAL_MACHINE"},
	{Path: "HKCU", Label: "HKEY_CURRENT_USER"},
	{Path: "HKCR", Label: "HKEY_CLASSES_ROOT"},
	{Path: "HKU", Label: "HKEY_USERS"},
	{Path: "HKCC", Label: "HKEY_CURRENT_CONFIG"},
}

// FieldError is a request refused before anything is done: Field names
// the request field, Code the stable code (invalid_request or
// registry_type_invalid).
type FieldError struct {
	Field, Code, Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// Invalid is a FieldError with the invalid_request code.
func Invalid(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Code: proto.CodeOpInvalid, Message: fmt.Sprintf(format, args...)}
}

// Path is a parsed registry path: Root is one of Roots, Sub the key
// below it ("" for the root itself), with single backslashes.
type Path struct {
	Root, Sub string
}

func (p Path) String() string {
	if p.Sub == "" {
		return p.Root
	}
	return p.Root + `\` + p.Sub
}

// Name is the path's last component (the root's name for a root).
func (p Path) Name() string {
	if p.Sub == "" {
		return p.Root
	}
	return p.Sub[strings.LastIndexByte(p.Sub, '\\')+1:]
}

// Parent is the key above p (p itself for a root).
func (p Path) Parent() Path {
	i := strings.LastIndexByte(p.Sub, '\\')
	if i < 0 {
		return Path{Root: p.Root}
	}
	return Path{Root: p.Root, Sub: p.Sub[:i]}
}

// Child is the key name below p.
func (p Path) Child(name string) Path {
	if p.Sub == "" {
		return Path{Root: p.Root, Sub: name}
	}
	return Path{Root: p.Root, Sub: p.Sub + `\` + name}
}

// ParsePath reads `HKLM\Software\Vendor`: a root's short name (any case;
// answered in capitals), then key names separated by single backslashes,
// none empty, none over MaxKeyName characters, no NUL.
func ParsePath(field, s string) (Path, error) {
	if s == "" {
		return Path{}, Invalid(field, `is required: a registry path such as HKLM\Software`)
	}
	if len(s) > MaxPath {
		return Path{}, Invalid(field, "is longer than %d characters", MaxPath)
	}
	root, sub, _ := strings.Cut(s, `\`)
	p := Path{}
	for _, r := range Roots {
		if strings.EqualFold(root, r.Path) {
			p.Root = r.Path
		}
	}
	if p.Root == "" {
		return Path{}, Invalid(field, "must start with HKLM, HKCU, HKCR, HKU or HKCC")
	}
	if strings.Contains(s, `\`) {
		for _, c := range strings.Split(sub, `\`) {
			if err := checkKeyName(field, c); err != nil {
				return Path{}, err
			}
		}
		p.Sub = sub
	}
	return p, nil
}

// CheckKeyName checks one key name (key_create's last component,
// key_rename's new name).
func CheckKeyName(field, name string) error { return checkKeyName(field, name) }

func checkKeyName(field, name string) error {
	switch {
	case name == "":
		return Invalid(field, "has an empty key name (no leading, trailing or doubled backslash)")
	case len(utf16.Encode([]rune(name))) > MaxKeyName:
		return Invalid(field, "has a key name over %d characters", MaxKeyName)
	case strings.ContainsAny(name, "\\\x00"):
		return Invalid(field, "has a key name with a backslash or NUL")
	}
	return nil
}

// CheckValueName checks a value name ("" is the key's default value).
func CheckValueName(field, name string) error {
	switch {
	case len(utf16.Encode([]rune(name))) > MaxValueName:
		return Invalid(field, "is over %d characters", MaxValueName)
	case strings.ContainsRune(name, 0):
		return Invalid(field, "contains NUL")
	}
	return nil
}

// Value is one registry value as the stores hold it. Data is a string
// (REG_SZ, REG_EXPAND_SZ), []string (REG_MULTI_SZ), uint32 (REG_DWORD),
// uint64 (REG_QWORD) or []byte (REG_BINARY and every other type).
type Value struct {
	Name string
	Type uint32
	Data any
}

// ParseValue checks a value from the wire: its name, a writable type and
// data of that type's wire form. Fields are named under prefix
// ("value.type", "value.data").
func ParseValue(prefix string, v *proto.RegistryValue) (Value, error) {
	if v == nil {
		return Value{}, Invalid(prefix, "is required: {name, type, data}")
	}
	if err := CheckValueName(prefix+".name", v.Name); err != nil {
		return Value{}, err
	}
	typ, ok := writable[v.Type]
	if !ok {
		return Value{}, &FieldError{Field: prefix + ".type", Code: proto.CodeRegistryTypeInvalid,
			Message: "must be REG_SZ, REG_EXPAND_SZ, REG_MULTI_SZ, REG_DWORD, REG_QWORD or REG_BINARY"}
	}
	raw, err := json.Marshal(v.Data)
	if err != nil {
		return Value{}, dataError(prefix, "cannot be read: %v", err)
	}
	if len(raw) > MaxDataBytes {
		return Value{}, dataError(prefix, "is over %d bytes", MaxDataBytes)
	}
	out := Value{Name: v.Name, Type: typ}
	switch typ {
	case TypeSZ, TypeExpandSZ:
		s, ok := v.Data.(string)
		if !ok || strings.ContainsRune(s, 0) {
			return Value{}, dataError(prefix, "must be a string without NUL for %s", v.Type)
		}
		out.Data = s
	case TypeMultiSZ:
		var list []string
		if json.Unmarshal(raw, &list) != nil || list == nil {
			return Value{}, dataError(prefix, "must be an array of strings for REG_MULTI_SZ")
		}
		for _, s := range list {
			if s == "" || strings.ContainsRune(s, 0) {
				return Value{}, dataError(prefix, "must hold non-empty strings without NUL (an empty string ends a REG_MULTI_SZ)")
			}
		}
		out.Data = list
	case TypeDWord:
		n, ok := wholeNumber(v.Data)
		if !ok || n > math.MaxUint32 {
			return Value{}, dataError(prefix, "must be a whole number from 0 to 4294967295 for REG_DWORD")
		}
		out.Data = uint32(n)
	case TypeQWord:
		// A decimal string carries all 64 bits; a JSON number only up to
		// 2^53, so a number is taken only below 2^53, where every integer is exact.
		var n uint64
		switch d := v.Data.(type) {
		case string:
			u, err := strconv.ParseUint(d, 10, 64)
			if err != nil || d == "" || d[0] == '+' {
				return Value{}, dataError(prefix, "must be a decimal string from 0 to 18446744073709551615 for REG_QWORD")
			}
			n = u
		default:
			u, ok := wholeNumber(d)
			if !ok || u >= 1<<53 {
				return Value{}, dataError(prefix, "must be a decimal string from 0 to 18446744073709551615 for REG_QWORD")
			}
			n = u
		}
		out.Data = n
	case TypeBinary:
		s, ok := v.Data.(string)
		b, err := hex.DecodeString(s)
		if !ok || err != nil {
			return Value{}, dataError(prefix, "must be hexadecimal bytes (e.g. \"00ff10\") for REG_BINARY")
		}
		out.Data = b
	}
	return out, nil
}

func dataError(prefix, format string, args ...any) error {
	return &FieldError{Field: prefix + ".data", Code: proto.CodeRegistryTypeInvalid, Message: fmt.Sprintf(format, args...)}
}

// wholeNumber reads a JSON number (float64 from encoding/json, or an
// integer from Go callers) that is a whole number >= 0.
func wholeNumber(v any) (uint64, bool) {
	switch n := v.(type) {
	case float64:
		if n < 0 || n != math.Trunc(n) || n > math.MaxUint64 {
			return 0, false
		}
		return uint64(n), true
	case json.Number:
		u, err := strconv.ParseUint(string(n), 10, 64)
		return u, err == nil
	case int:
		return uint64(n), n >= 0
	case uint32:
		return uint64(n), true
	case uint64:
		return n, true
	case int64:
		return uint64(n), n >= 0
	}
	return 0, false
}

// Wire is v in its wire form (data as described in agent/proto/registry.go).
func Wire(v Value) proto.RegistryValue {
	out := proto.RegistryValue{Name: v.Name, Type: TypeName(v.Type)}
	switch d := v.Data.(type) {
	case string:
		out.Data = d
	case []string:
		if d == nil {
			d = []string{}
		}
		out.Data = d
	case uint32:
		out.Data = d
	case uint64:
		out.Data = strconv.FormatUint(d, 10)
	case []byte:
		out.Data = hex.EncodeToString(d)
	}
	return out
}

// FromRaw decodes a value's bytes as Windows stores them (UTF-16LE
// strings, little-endian integers). Malformed data of a typed value
// (an odd-length string, a 3-byte DWORD) and every type the editor does
// not write are listed as hex bytes rather than refused, so such a value
// can still be seen and deleted.
func FromRaw(name string, typ uint32, raw []byte) Value {
	v := Value{Name: name, Type: typ, Data: raw}
	switch typ {
	case TypeSZ, TypeExpandSZ:
		if len(raw)%2 == 0 {
			s := decodeUTF16(raw)
			if i := strings.IndexRune(s, 0); i >= 0 {
				s = s[:i]
			}
			v.Data = s
		}
	case TypeMultiSZ:
		if len(raw)%2 == 0 {
			list := []string{}
			for _, s := range strings.Split(decodeUTF16(raw), "\x00") {
				if s != "" {
					list = append(list, s)
				}
			}
			v.Data = list
		}
	case TypeDWord:
		if len(raw) == 4 {
			v.Data = binary.LittleEndian.Uint32(raw)
		}
	case TypeQWord:
		if len(raw) == 8 {
			v.Data = binary.LittleEndian.Uint64(raw)
		}
	}
	return v
}

func decodeUTF16(b []byte) string {
	u := make([]uint16, len(b)/2)
	for i := range u {
		u[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	return string(utf16.Decode(u))
}

// Check validates a request as the agent would before acting: the Engine
// calls it so bad input is a 400 naming the field before any operation
// starts. It returns the parsed path and value (when the action has them).
func Check(req proto.RegistryRequest) (Path, Value, error) {
	var p Path
	var v Value
	var err error
	switch req.Action {
	case proto.RegistryRoots:
		return p, v, nil
	case proto.RegistryChildren, proto.RegistryKeyCreate, proto.RegistryKeyRename, proto.RegistryKeyDelete,
		proto.RegistryValueCreate, proto.RegistryValueUpdate, proto.RegistryValueDelete:
	default:
		return p, v, Invalid("action", "unknown registry action %q", req.Action)
	}
	if p, err = ParsePath("path", req.Path); err != nil {
		return p, v, err
	}
	switch req.Action {
	case proto.RegistryKeyCreate, proto.RegistryKeyRename, proto.RegistryKeyDelete:
		if p.Sub == "" {
			return p, v, Invalid("path", "names a root key, which cannot be created, renamed or deleted")
		}
	}
	switch req.Action {
	case proto.RegistryKeyRename:
		err = CheckKeyName("new_name", req.NewName)
	case proto.RegistryValueCreate, proto.RegistryValueUpdate:
		v, err = ParseValue("value", req.Value)
	case proto.RegistryValueDelete:
		if req.Value == nil {
			err = Invalid("value", "is required: {name}")
		} else if err = CheckValueName("value.name", req.Value.Name); err == nil {
			v.Name = req.Value.Name
		}
	}
	return p, v, err
}
