package registry

import "github.com/cairn-rmm/cairn/agent/proto/registrywire"

// The wire rules live in agent/proto/registrywire, which the Engine
// imports to check a request before it sends it; these names keep the
// editor's own code reading as before.
type (
	Path       = registrywire.Path
	Value      = registrywire.Value
	FieldError = registrywire.FieldError
)

const (
	TypeSZ       = registrywire.TypeSZ
	TypeExpandSZ = registrywire.TypeExpandSZ
	TypeBinary   = registrywire.TypeBinary
	TypeDWord    = registrywire.TypeDWord
	TypeMultiSZ  = registrywire.TypeMultiSZ
	TypeQWord    = registrywire.TypeQWord
)

// Roots are the root keys, in the order the roots action lists them.
var Roots = registrywire.Roots

var (
	ParsePath      = registrywire.ParsePath
	ParseValue     = registrywire.ParseValue
	CheckKeyName   = registrywire.CheckKeyName
	CheckValueName = registrywire.CheckValueName
	Check          = registrywire.Check
	Wire           = registrywire.Wire
	FromRaw        = registrywire.FromRaw
	invalid        = registrywire.Invalid
)
