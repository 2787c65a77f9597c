package engine

import "github.com/cairn-rmm/cairn/api"

// directoryCapability is directory providers (LDAP) and their cached
// users. Sign-in shares the directory service, so core builds it.
var directoryCapability = Capability{
	Name: "directory",
	API:  func(e *Engine) api.Area { return api.DirectoryArea{Directory: e.Directory} },
}
