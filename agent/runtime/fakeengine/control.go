package fakeengine

import (
	"slices"
	"time"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// ---- knobs ---------------------------------------------------------------

// SetDecision makes pending approvals turn into status (approved, denied
// or expired) after that many polls answered pending.
func (e *Engine) SetDecision(status string, afterPolls int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.decision, e.decideAfter = status, afterPolls
}

// SetAutoApprove makes new requests approved at once (site auto-approval).
func (e *Engine) SetAutoApprove(on bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.autoApprove = on
}

// RateLimitEnroll answers the next n enrollment requests 429 with
// Retry-After (seconds; 0 sends none).
func (e *Engine) RateLimitEnroll(n, retryAfterSeconds int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.rateLimit, e.retryAfter = n, retryAfterSeconds
}

// SetAccessTTL sets the lifetime of access tokens minted from now on.
func (e *Engine) SetAccessTTL(d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.accessTTL = d
}

// ExpireAccessTokens makes every current access token expired, so the next
// Device call answers 401 token_expired.
func (e *Engine) ExpireAccessTokens() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, d := range e.devices {
		d.AccessExp = time.Now().Add(-time.Second)
	}
}

// SetRefreshError makes refreshes answer status and code ("" restores).
func (e *Engine) SetRefreshError(status int, code string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.refreshErr = nil
	if code != "" {
		e.refreshErr = &answer{status, code}
	}
}

// SetDeviceError makes Device routes answer status and code ("" restores).
func (e *Engine) SetDeviceError(status int, code string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.deviceErr = nil
	if code != "" {
		e.deviceErr = &answer{status, code}
	}
}

// SetRefreshDelay holds every refresh open for d.
func (e *Engine) SetRefreshDelay(d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.refreshDelay = d
}

// SetStatusDelay holds every status post open for d; the status event is
// recorded when the post completes.
func (e *Engine) SetStatusDelay(d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.statusDelay = d
}

// SetHeartbeatAnswer sets interval_seconds and details_wanted.
func (e *Engine) SetHeartbeatAnswer(intervalSeconds int, detailsWanted bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.hbInterval, e.hbDetails = intervalSeconds, detailsWanted
}

// SetScriptTrust sets the script-signing keys enrollment and heartbeat
// answers carry (nil: none).
func (e *Engine) SetScriptTrust(keys []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.scriptTrust = nil
	if keys != nil {
		e.scriptTrust = &proto.ScriptTrust{TrustedPublicKeys: keys}
	}
}

// SetTrust sets the whole trust answer (keys and signed chains) of
// enrollment and heartbeat answers (nil: none).
func (e *Engine) SetTrust(t *proto.ScriptTrust) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.scriptTrust = t
}

// SetAckMetadata turns the acknowledgement of metadata writes on or off.
func (e *Engine) SetAckMetadata(on bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ackMetadata = on
}

// SetMetadataValue is an operator edit of field n: it bumps the revision
// the heartbeat answers with and names n as changed.
func (e *Engine) SetMetadataValue(n int, value string, at time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.metadataRev++
	stamp := at.UTC().Format(time.RFC3339Nano)
	e.metadata[n] = proto.MetadataFieldValue{FieldNumber: n, Value: value, ModifiedAt: &stamp, Source: "operator:test"}
	e.metadataEdit[n] = e.metadataRev
}

// SetMetadataReadFails makes reads of field n fail (503) or work again.
func (e *Engine) SetMetadataReadFails(n int, fail bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.metadataFail[n] = fail
}

// SetSocketModes sets how the next connections are answered, in order;
// later ones are accepted.
func (e *Engine) SetSocketModes(modes ...SocketMode) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.socketModes = slices.Clone(modes)
}

// RefuseSocket makes the next upgrade answer status and code (once per
// call), as a worker that is not the device's (421 wrong_worker) or an
// Engine refusing the token would.
func (e *Engine) RefuseSocket(status int, code string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.socketErrs = append(e.socketErrs, answer{status, code})
}

// Purge marks the device purged: Device routes and refresh answer
// device_purged until it enrolls again.
func (e *Engine) Purge(guid string) { e.setTrust(guid, true, false) }

// Quarantine blocks the device (device_quarantined) without touching its
// tokens; Unquarantine lifts it.
func (e *Engine) Quarantine(guid string)   { e.setTrust(guid, false, true) }
func (e *Engine) Unquarantine(guid string) { e.setTrust(guid, false, false) }

func (e *Engine) setTrust(guid string, purged, quarantined bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if d := e.devices[guid]; d != nil {
		d.Purged, d.Quarantined = purged, quarantined
	}
}

// ---- records -------------------------------------------------------------

// Events lists what arrived, in order: enroll_request, poll, refresh,
// status:<phase>, heartbeat, details, route, socket, socket_refused,
// connect_agent, and "refused <path> <code>" for a Device call the
// device's state or a knob refused.
func (e *Engine) Events() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.events)
}

// Count is how many times event arrived.
func (e *Engine) Count(event string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, ev := range e.events {
		if ev == event {
			n++
		}
	}
	return n
}

func (e *Engine) EnrollRequests() []EnrollRecord {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.enrollRequests)
}

// PollKeys are the thumbprints of the keys that signed each poll's proof.
func (e *Engine) PollKeys() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.polls)
}

func (e *Engine) Statuses() []proto.Status {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.statuses)
}

func (e *Engine) Heartbeats() []HeartbeatRecord {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.heartbeats)
}

func (e *Engine) Details() []proto.Details {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.details)
}

// Refreshes counts refresh calls; MaxConcurrentRefreshes is the most that
// were in flight at once.
func (e *Engine) Refreshes() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.refreshes
}

func (e *Engine) MaxConcurrentRefreshes() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.refreshMax
}

// Devices returns copies of the enrolled devices.
func (e *Engine) Devices() []Device {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]Device, 0, len(e.devices))
	for _, d := range e.devices {
		out = append(out, *d)
	}
	return out
}
