package agent

// Token state rules (SPEC "Agent-side behavior" items 8 and 16).

// Refresh answer codes the Engine returns from token refresh.
const (
	// Recoverable: a blank or restored Engine does not know the device yet.
	CodeInvalidRefreshToken = "invalid_refresh_token"
	CodeDeviceNotFound      = "device_not_found"
)

// RefreshAction says what the agent does with its tokens after a failed
// refresh.
type RefreshAction int

const (
	// RefreshRetry keeps the refresh token and retries later: disaster
	// recovery must not strand an enrolled agent.
	RefreshRetry RefreshAction = iota
	// RefreshClear drops local token state: revoke, purge, expiry,
	// fingerprint or token-version mismatch, and any other refusal.
	RefreshClear
)

// transientCodes are answers about the Engine, not about the token
// (overload, outage); treating them as refusals would make a whole fleet
// drop its tokens during an Engine restart.
var transientCodes = map[string]bool{
	// "": no Engine answer at all (network failure, a proxy's HTML page).
	"":             true,
	"unavailable":  true,
	"rate_limited": true,
	"internal":     true,
	// The Engine's device-token key is sealed: a replica whose master
	// cipher is locked (after a restart) cannot mint tokens until unlocked.
	"aegis_locked": true,
	// Quarantine is reversible: unquarantine lets the same refresh token
	// work again, so dropping it would force a needless re-enrollment.
	"device_quarantined": true,
}

// ClassifyRefreshError maps a refresh error code to the action: the two
// recoverable codes and the transient Engine codes retry; every other code
// (token_revoked, device_purged, token_expired, fingerprint_mismatch,
// token_version_mismatch, unknown ones) clears local token state.
func ClassifyRefreshError(code string) RefreshAction {
	if code == CodeInvalidRefreshToken || code == CodeDeviceNotFound || transientCodes[code] {
		return RefreshRetry
	}
	return RefreshClear
}

// ApplyRefreshError applies the refresh rule to c and returns the action.
func (c *Config) ApplyRefreshError(code string) RefreshAction {
	a := ClassifyRefreshError(code)
	if a == RefreshClear {
		c.ClearTokens()
	}
	return a
}

// ClearTokens drops the access and refresh tokens (revoke, purge, expiry,
// fingerprint or token-version mismatch). Identity and keys stay: the
// device re-enrolls with the same key.
func (c *Config) ClearTokens() {
	c.AccessToken = ""
	c.RefreshToken = ""
}

// HasTokens reports whether a refresh token is held (without it the access
// token cannot be renewed).
func (c *Config) HasTokens() bool { return c.RefreshToken != "" }

// ApplyEnrollment records the enrollment code and server URL of a
// (re-)deploy. A changed code means the device is being re-homed: cached
// tokens and the remote-ops route belong to the old enrollment and are
// cleared; the same code keeps everything, so re-running the installer is
// harmless. It reports whether state was cleared.
func (c *Config) ApplyEnrollment(code, serverURL string) bool {
	changed := c.EnrollmentCode != code
	c.EnrollmentCode = code
	if serverURL != "" {
		c.ServerURL = serverURL
	}
	if changed {
		c.ClearTokens()
		c.Agent.Route = nil
	}
	return changed
}
