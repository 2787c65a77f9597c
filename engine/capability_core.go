package engine

import (
	"net/http"
	"slices"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/api"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/auth"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
	"github.com/cairn-rmm/cairn/internal/events"
	"github.com/cairn-rmm/cairn/internal/payloadkeys"
	"github.com/cairn-rmm/cairn/workflows"
)

// coreCapability is what every other capability stands on: health,
// setup, sign-in, accounts, sites, events, the agent socket and device
// authentication, the worker probe and the clean-up of their tables. Its
// routes are the api.Server's own (api.New), not an area.
var coreCapability = Capability{
	Name: "core",
	Codes: slices.Concat(cairn.CoreCodes, api.Codes, []cairn.Code{
		{ID: db.ECodeServiceUnavailable, Status: http.StatusServiceUnavailable, Retryable: true},
		{ID: events.ECodeTooManyStreams, Status: http.StatusTooManyRequests},
		{ID: auth.ECodeSetupCodeRequired, Status: http.StatusForbidden},
		{ID: auth.ECodeReauthRequired, Status: http.StatusForbidden},
		{ID: payloadkeys.ECodeUnknownKey, Status: http.StatusInternalServerError},
		// Device authentication (SPEC "Authentication", "Errors").
		{ID: devicetrust.ECodeInvalidAccessToken, Status: http.StatusUnauthorized},
		{ID: devicetrust.ECodeTokenExpired, Status: http.StatusUnauthorized},
		{ID: devicetrust.ECodeTokenVersion, Status: http.StatusUnauthorized},
		{ID: devicetrust.ECodeTokenRevoked, Status: http.StatusUnauthorized},
		{ID: devicetrust.ECodeInvalidRefreshToken, Status: http.StatusUnauthorized},
		{ID: devicetrust.ECodeDeviceNotFound, Status: http.StatusUnauthorized},
		{ID: devicetrust.ECodeDevicePurged, Status: http.StatusUnauthorized},
		{ID: devicetrust.ECodeFingerprint, Status: http.StatusUnauthorized},
		// Quarantined and revoked devices: refused operations answer 409
		// to operators; agents act on the code, not the status.
		{ID: devicetrust.ECodeDeviceRevoked, Status: http.StatusConflict},
		{ID: devicetrust.ECodeDeviceQuarantined, Status: http.StatusConflict},
	}),
	Workflows: []any{workflows.WorkerProbe, workflows.Maintenance},
	Activities: func(e *Engine) []any {
		return []any{&activities.Maintenance{Sessions: e.Auth, RateLimits: e.Store, DPoP: e.DPoP, RefreshTokens: e.Tokens,
			Presence: e.Presence, AgentRequests: e.Store}}
	},
	// Rows a hot path writes for every agent request or operator stream
	// (DPoP proof IDs, refresh tokens, presence of dead replicas, which the
	// console shows) go every minute; tables that only grow slowly and
	// whose expired rows are already refused where they are read
	// (sessions, pending tokens, rate limit windows) every five minutes.
	Maintenance: []workflows.MaintenanceJob{
		{Name: workflows.JobDPoP, Every: time.Minute, Activity: "SweepDPoP"},
		{Name: workflows.JobRefreshTokens, Every: time.Minute, Activity: "SweepRefreshTokens"},
		{Name: workflows.JobPresence, Every: time.Minute, Activity: "SweepPresence"},
		{Name: workflows.JobSessions, Every: 5 * time.Minute, Activity: "SweepSessions"},
		{Name: workflows.JobPendingTokens, Every: 5 * time.Minute, Activity: "SweepPendingTokens"},
		{Name: workflows.JobRateLimits, Every: 5 * time.Minute, Activity: "SweepRateLimits"},
	},
}
