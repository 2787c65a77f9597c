package engine

import "github.com/cairn-rmm/cairn/api"

// passkeysCapability is operators' WebAuthn passkeys. Re-authentication
// shares the passkey service, so core builds it.
var passkeysCapability = Capability{
	Name: "passkeys",
	API:  func(*Engine) api.Area { return api.PasskeysArea },
}
