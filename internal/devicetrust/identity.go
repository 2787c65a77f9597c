package devicetrust

import (
	"time"

	"github.com/cairn-rmm/cairn"
)

// Identity is an authenticated device: what the Device middleware puts on
// a request after checking its access token and DPoP proof, and what the
// site worker runtime registers a socket under.
type Identity struct {
	GUID         cairn.DeviceGUID
	AgentID      string
	Hostname     string
	SiteID       cairn.SiteID
	SiteSlug     string
	TokenVersion int32
	// JKT is the RFC 7638 thumbprint of the device key (cnf.jkt).
	JKT string
	// AgentVersion and Protocol come from the X-Service-Agent-Context
	// header and the token.
	AgentVersion string
	// ExpiresAt is when the access token that authenticated the request
	// expires: a socket opened with it outlives it only if the device
	// refreshed (AccessValidUntil).
	ExpiresAt time.Time
}
