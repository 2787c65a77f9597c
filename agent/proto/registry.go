package proto

// ---- Registry editor (Windows agents; docs/api.md "Registry") ----------
//
// EventRegistryManagement carries a RegistryRequest whose Action says
// what to do. Paths are `ROOT\sub\key` with ROOT one of HKLM, HKCU, HKCR,
// HKU, HKCC. Value data travels typed by Type (agent/registry encodes and
// checks it): REG_SZ and REG_EXPAND_SZ a string, REG_MULTI_SZ an array of
// strings, REG_DWORD a number, REG_QWORD a decimal string (a JSON number
// loses precision above 2^53), REG_BINARY lowercase hex.

// EventRegistryManagement is the registry editor's event name.
const EventRegistryManagement = "registry_management_request"

// Registry actions.
const (
	RegistryRoots       = "roots"
	RegistryChildren    = "children"
	RegistryKeyCreate   = "key_create"
	RegistryKeyRename   = "key_rename"
	RegistryKeyDelete   = "key_delete"
	RegistryValueCreate = "value_create"
	RegistryValueUpdate = "value_update"
	RegistryValueDelete = "value_delete"
)

// Registry refusal codes (besides CodeOpInvalid, CodeOpPermission and
// CodeOpFailed). CodeUnsupportedPlatform and CodePathExists are shared
// with the file manager.
const (
	CodeUnsupportedPlatform   = "unsupported_platform"     // not a Windows agent
	CodePathExists            = "path_exists"              // the key or value to create exists
	CodeRegistryKeyNotFound   = "registry_key_not_found"   // the key does not exist
	CodeRegistryValueNotFound = "registry_value_not_found" // the value does not exist
	CodeRegistryTypeInvalid   = "registry_type_invalid"    // type unknown, or data does not match it
)

// RegistryRequest is the payload of EventRegistryManagement.
type RegistryRequest struct {
	Action string `json:"action"`
	// Path is the key acted on (children, key_*, value_*).
	Path string `json:"path,omitempty"`
	// NewName is key_rename's new last component.
	NewName string `json:"new_name,omitempty"`
	// Value is value_create and value_update's value; value_delete uses
	// only its Name.
	Value *RegistryValue `json:"value,omitempty"`
}

// RegistryRoot is one root key.
type RegistryRoot struct {
	Path  string `json:"path"`  // HKLM
	Label string `json:"label"` // HKEY_LOCAL_MACHINE
}

// RegistryRootsResult answers the roots action.
type RegistryRootsResult struct {
	Roots []RegistryRoot `json:"roots"`
}

// RegistryKey is a key: its last component and its full path.
type RegistryKey struct {
	Name string `json:"name"`
	Path string `json:"path"`
}

// RegistryValue is one value. Name "" is the key's default value. Data is
// the typed wire form described above; types the editor cannot write
// (REG_NONE, REG_LINK, ...) are listed with their bytes as hex.
type RegistryValue struct {
	Name string `json:"name"`
	Type string `json:"type"`
	Data any    `json:"data"`
}

// RegistryChildrenResult answers children: the key's subkeys and values, each
// sorted by name (case-insensitively, as Windows compares them).
type RegistryChildrenResult struct {
	Path    string          `json:"path"`
	Subkeys []RegistryKey   `json:"subkeys"`
	Values  []RegistryValue `json:"values"`
	// Truncated says the answer is not the whole key: a value's data over
	// the listing limit is sent as null, and entries past the answer's
	// size budget are left out (docs/api.md "Registry").
	Truncated bool `json:"truncated"`
}

// RegistryKeyResult answers key_create and key_rename (the key as it now
// is) and key_delete (the key that was removed).
type RegistryKeyResult struct {
	Key RegistryKey `json:"key"`
}

// RegistryValueResult answers value_create, value_update (the value as
// stored) and value_delete (Data null).
type RegistryValueResult struct {
	Path  string        `json:"path"`
	Value RegistryValue `json:"value"`
}
