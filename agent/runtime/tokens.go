package runtime

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/cairn-rmm/cairn/agent"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/transport"
)

// ErrTokensCleared matches a *TokensClearedError.
var ErrTokensCleared = errors.New("device tokens cleared")

// TokensClearedError says the Engine's answer to a refresh dropped the
// device's tokens (revoke, purge, expiry, fingerprint or token-version
// mismatch): only a new enrollment, approved again, gives new ones.
type TokensClearedError struct {
	Code string
	// Err is the refusal (nil when there was no refresh token to send).
	Err error
}

func (e *TokensClearedError) Error() string {
	return "the Engine refused the refresh token (" + e.Code + "); local tokens were cleared and the device must enroll again"
}

func (e *TokensClearedError) Is(target error) bool { return target == ErrTokensCleared }

// Unwrap exposes the refusal, so transport.Code finds its code.
func (e *TokensClearedError) Unwrap() error { return e.Err }

// refreshCodes are Device-route answers a refresh can cure (the first
// three) or must judge: for a revoked or purged device, the refresh answer
// is what decides whether the tokens go.
var refreshCodes = map[string]bool{
	proto.CodeTokenExpired:       true,
	proto.CodeTokenVersion:       true,
	proto.CodeInvalidAccessToken: true,
	proto.CodeTokenRevoked:       true,
	proto.CodeDeviceRevoked:      true,
	proto.CodeDevicePurged:       true,
}

// keepOnRefresh are refresh refusals about the request, not the tokens,
// which agent.ClassifyRefreshError (unknown code: clear) would otherwise
// treat as final: a proof outside the Engine's iat window after a clock
// jump, or a protocol version it does not speak. Dropping the tokens for
// those would need an administrator to approve the device again.
var keepOnRefresh = map[string]bool{
	proto.CodeInvalidDPoPProof: true,
	"protocol_unsupported":     true,
	"agent_context_required":   true,
	"agent_context_refused":    true,
}

// Caller makes authenticated Device calls; *Tokens is one. Realtime
// handlers get it to talk back to the Engine.
type Caller interface {
	Call(ctx context.Context, method, path string, in, out any) error
}

// Tokens holds the access token, refreshes it before it expires or when a
// Device call says it is stale, and persists every rotated pair. Refreshes
// are serialized: refresh tokens rotate on use, and two concurrent
// refreshes with the same token look like theft to the Engine, which then
// revokes the whole token family.
type Tokens struct {
	store       Store
	client      *transport.Client
	fingerprint string
	bootID      string
	timing      Timing
	now         func() time.Time
	log         *slog.Logger
	hooks       Hooks
	onClear     func(error)

	refreshMu sync.Mutex // held for a whole refresh and for persisting
	retry     *backoff   // guarded by refreshMu

	mu      sync.Mutex
	access  string
	refresh string
	expires time.Time // zero: unknown, rely on the Engine's 401
	unsaved bool      // a rotated pair not yet in the store
	cleared error
	retryAt time.Time
	lastErr error
}

func newTokens(cfg *agent.Config, store Store, client *transport.Client, id Identity, timing Timing,
	now func() time.Time, log *slog.Logger, hooks Hooks, onClear func(error)) *Tokens {
	return &Tokens{
		store: store, client: client, fingerprint: id.Fingerprint, bootID: id.BootID, timing: timing, now: now, log: log,
		hooks: hooks, onClear: onClear, retry: newBackoff(timing.RetryMin, timing.RetryMax),
		access: cfg.AccessToken, refresh: cfg.RefreshToken, expires: accessExpiry(cfg.AccessToken),
	}
}

// Access returns a usable access token, refreshing first when it expires
// within Timing.RefreshBefore. A token that is still valid is returned
// even when that refresh failed for a transient reason.
func (t *Tokens) Access(ctx context.Context) (string, error) {
	t.mu.Lock()
	access, exp, unsaved, cleared := t.access, t.expires, t.unsaved, t.cleared
	t.mu.Unlock()
	if cleared != nil {
		return "", cleared
	}
	if unsaved {
		t.refreshMu.Lock()
		t.persist()
		t.refreshMu.Unlock()
	}
	now := t.now()
	if access != "" && (exp.IsZero() || now.Add(t.timing.RefreshBefore).Before(exp)) {
		return access, nil
	}
	if err := t.Refresh(ctx, access); err != nil {
		if access != "" && now.Before(exp) && !errors.Is(err, ErrTokensCleared) {
			return access, nil
		}
		return "", err
	}
	return t.Current(), nil
}

// Current is the access token held now ("" when none).
func (t *Tokens) Current() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.access
}

// Call makes a Device call with the access token. When the Engine answers
// that the token is stale (expired, older token version, unknown) it
// refreshes once and repeats the call.
func (t *Tokens) Call(ctx context.Context, method, path string, in, out any) error {
	for attempt := 0; ; attempt++ {
		access, err := t.Access(ctx)
		if err != nil {
			return err
		}
		rctx, cancel := context.WithTimeout(ctx, t.timing.RequestTimeout)
		err = t.client.Do(rctx, method, path, in, out, transport.AuthBearer(access))
		cancel()
		if err == nil || attempt > 0 || !refreshCodes[transport.Code(err)] {
			return err
		}
		if rerr := t.Refresh(ctx, access); rerr != nil {
			return rerr
		}
	}
}

// Open makes a Device GET of path and returns the answer's body to
// stream (artifact downloads, which Call's bounded JSON does not fit).
// Like Call it refreshes a stale token once. ctx bounds the whole read.
func (t *Tokens) Open(ctx context.Context, path string) (io.ReadCloser, error) {
	for attempt := 0; ; attempt++ {
		access, err := t.Access(ctx)
		if err != nil {
			return nil, err
		}
		req, err := t.client.NewRequest(ctx, http.MethodGet, path, nil, transport.AuthBearer(access))
		if err != nil {
			return nil, err
		}
		resp, err := t.client.HTTPClient().Do(req)
		if err != nil {
			return nil, fmt.Errorf("GET %s: %w", path, err)
		}
		err = transport.CheckResponse(resp)
		if err == nil {
			return resp.Body, nil
		}
		resp.Body.Close()
		if attempt > 0 || !refreshCodes[transport.Code(err)] {
			return nil, err
		}
		if rerr := t.Refresh(ctx, access); rerr != nil {
			return nil, rerr
		}
	}
}

// Send makes a Device request whose body is streamed (file transfer
// content). prepare may set headers and trailers on the request; a 2xx
// JSON answer is decoded into out (when not nil). A streamed body cannot
// be sent twice, so a stale token is refreshed and the refusal returned:
// the caller sends again with a fresh body.
func (t *Tokens) Send(ctx context.Context, method, path string, body io.Reader, prepare func(*http.Request), out any) error {
	access, err := t.Access(ctx)
	if err != nil {
		return err
	}
	req, err := t.client.NewRequest(ctx, method, path, body, transport.AuthBearer(access))
	if err != nil {
		return err
	}
	if prepare != nil {
		prepare(req)
	}
	resp, err := t.client.HTTPClient().Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	if err := transport.CheckResponse(resp); err != nil {
		if refreshCodes[transport.Code(err)] {
			if rerr := t.Refresh(ctx, access); rerr != nil {
				return rerr
			}
		}
		return err
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, transport.MaxResponseBytes))
	if err != nil {
		return fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	return json.Unmarshal(data, out)
}

// Refresh rotates the token pair unless the access token is no longer
// stale (another caller refreshed meanwhile). A transient failure keeps
// the tokens and holds further attempts back with a backoff; a refusal
// that agent.ClassifyRefreshError calls final clears them in the store and
// returns a *TokensClearedError.
func (t *Tokens) Refresh(ctx context.Context, stale string) error {
	t.refreshMu.Lock()
	defer t.refreshMu.Unlock()
	t.mu.Lock()
	if t.cleared != nil {
		defer t.mu.Unlock()
		return t.cleared
	}
	if t.access != stale {
		t.mu.Unlock()
		return nil
	}
	if t.now().Before(t.retryAt) {
		defer t.mu.Unlock()
		return t.lastErr
	}
	refresh := t.refresh
	t.mu.Unlock()
	if refresh == "" {
		return t.clear("no_refresh_token", refresh, nil)
	}

	var resp proto.RefreshResponse
	rctx, cancel := context.WithTimeout(ctx, t.timing.RequestTimeout)
	err := t.client.Do(rctx, http.MethodPost, proto.PathTokenRefresh,
		proto.RefreshRequest{RefreshToken: refresh, Fingerprint: t.fingerprint, BootID: t.bootID}, &resp, transport.AuthProof)
	cancel()
	if err == nil {
		t.retry.reset()
		exp := resp.Tokens.ExpiresAt
		if e := accessExpiry(resp.Tokens.AccessToken); !e.IsZero() {
			exp = e
		}
		t.mu.Lock()
		t.access, t.refresh, t.expires, t.unsaved = resp.Tokens.AccessToken, resp.Tokens.RefreshToken, exp, true
		t.retryAt, t.lastErr = time.Time{}, nil
		t.mu.Unlock()
		t.persist()
		applyScriptTrust(t.store, t.log, resp.ScriptSigning)
		return nil
	}
	t.hooks.error("refresh", err)
	code := transport.Code(err)
	if ctx.Err() != nil {
		return err
	}
	if code == proto.CodeDeviceCloned {
		var pe *proto.Error
		if errors.As(err, &pe) && pe.Fields[proto.FieldCloneTicket] != "" {
			return t.becomeCloneLocked(pe.Fields[proto.FieldCloneTicket], err)
		}
	}
	if keepOnRefresh[code] || agent.ClassifyRefreshError(code) == agent.RefreshRetry {
		wait := t.retry.next()
		t.log.Warn("token refresh failed; keeping the tokens and retrying", "code", code, "in", wait, "err", err)
		t.mu.Lock()
		t.retryAt, t.lastErr = t.now().Add(wait), err
		t.mu.Unlock()
		return err
	}
	return t.clear(code, refresh, err)
}

// BecomeClone acts on a device_cloned answer (a refresh refusal, a
// refused connect_agent or a message on the socket): this agent is a copy
// of an enrolled device, so it makes a new key, drops the GUID and tokens
// and keeps the clone ticket to enroll with (agent.Config.BecomeClone).
// It returns the *TokensClearedError that ends the session; Run then
// enrolls.
func (t *Tokens) BecomeClone(ticket string, cause error) error {
	t.refreshMu.Lock()
	defer t.refreshMu.Unlock()
	return t.becomeCloneLocked(ticket, cause)
}

// becomeCloneLocked is BecomeClone; the caller holds refreshMu.
func (t *Tokens) becomeCloneLocked(ticket string, cause error) error {
	t.mu.Lock()
	if t.cleared != nil {
		defer t.mu.Unlock()
		return t.cleared
	}
	t.mu.Unlock()
	if _, err := t.store.Update(func(c *agent.Config) error { return c.BecomeClone(ticket) }); err != nil {
		// Without the new key saved the copy cannot enroll: keep going as
		// is; the Engine tells it again.
		t.log.Error("could not save the new identity of a cloned agent", "err", err)
		return fmt.Errorf("become a clone: %w", err)
	}
	cleared := &TokensClearedError{Code: proto.CodeDeviceCloned, Err: cause}
	t.mu.Lock()
	t.access, t.refresh, t.expires, t.unsaved, t.cleared = "", "", time.Time{}, false, cleared
	t.mu.Unlock()
	t.log.Warn("this agent is a copy of an enrolled device: made a new key; enrolling as a new device with the clone ticket")
	if t.onClear != nil {
		t.onClear(cleared)
	}
	return cleared
}

// Redeploy saves a new enrollment code (agent behaviour 16): the cached
// tokens and remote-ops route belong to the old enrollment and go
// (agent.Config.ApplyEnrollment). It returns the *TokensClearedError that
// ends the session; Run then enrolls with the code, under the same key.
func (t *Tokens) Redeploy(code string) error {
	t.refreshMu.Lock()
	defer t.refreshMu.Unlock()
	if _, err := t.store.Update(func(c *agent.Config) error {
		c.ApplyEnrollment(code, "")
		c.ClearTokens()
		c.Agent.Route = nil
		return nil
	}); err != nil {
		t.log.Error("could not save the redeploy's enrollment code", "err", err)
		return fmt.Errorf("redeploy: %w", err)
	}
	cleared := &TokensClearedError{Code: CodeRedeployed, Err: errors.New("the Engine redeployed this agent with a new enrollment code")}
	t.mu.Lock()
	t.access, t.refresh, t.expires, t.unsaved, t.cleared = "", "", time.Time{}, false, cleared
	t.mu.Unlock()
	t.log.Warn("redeployed with a new enrollment code: cleared the tokens and route; enrolling again")
	if t.onClear != nil {
		t.onClear(cleared)
	}
	return cleared
}

// CodeRedeployed is the TokensClearedError code of a redeploy.
const CodeRedeployed = "redeployed"

// errStoreMoved: the stored refresh token is not the one refused (a new
// enrollment wrote another); it is adopted instead of cleared.
var errStoreMoved = errors.New("stored tokens changed")

// clear drops the tokens after a final refusal. Caller holds refreshMu.
func (t *Tokens) clear(code, refused string, cause error) error {
	var adopt *agent.Config
	_, err := t.store.Update(func(c *agent.Config) error {
		if c.RefreshToken != "" && c.RefreshToken != refused {
			adopt = c
			return errStoreMoved
		}
		// Refresh already classified code as final (ApplyRefreshError's
		// rule, plus keepOnRefresh), so clear unconditionally.
		c.ClearTokens()
		return nil
	})
	if adopt != nil {
		t.mu.Lock()
		t.access, t.refresh, t.expires, t.unsaved = adopt.AccessToken, adopt.RefreshToken, accessExpiry(adopt.AccessToken), false
		t.mu.Unlock()
		return nil
	}
	if err != nil {
		t.log.Error("could not clear the tokens in the config", "err", err)
	}
	cleared := &TokensClearedError{Code: code, Err: cause}
	t.mu.Lock()
	t.access, t.refresh, t.expires, t.unsaved, t.cleared = "", "", time.Time{}, false, cleared
	t.mu.Unlock()
	t.log.Warn("device tokens cleared by the Engine", "code", code)
	if t.onClear != nil {
		t.onClear(cleared)
	}
	return cleared
}

// persist writes the held pair in one atomic write. Caller holds
// refreshMu, so an older pair can never overwrite a newer one. A failed
// write is retried by the next Access: losing the rotated refresh token
// would strand the device.
func (t *Tokens) persist() {
	t.mu.Lock()
	access, refresh, unsaved := t.access, t.refresh, t.unsaved
	t.mu.Unlock()
	if !unsaved {
		return
	}
	_, err := t.store.Update(func(c *agent.Config) error {
		c.AccessToken, c.RefreshToken = access, refresh
		return nil
	})
	if err != nil {
		t.log.Error("could not save the rotated tokens; will retry", "err", err)
		return
	}
	t.mu.Lock()
	if t.access == access {
		t.unsaved = false
	}
	t.mu.Unlock()
}

// accessExpiry reads exp from a JWT access token without verifying it
// (the agent only schedules its refresh by it); zero when unreadable.
func accessExpiry(token string) time.Time {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return time.Time{}
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}
	}
	var claims struct {
		Exp int64 `json:"exp"`
	}
	if json.Unmarshal(raw, &claims) != nil || claims.Exp <= 0 {
		return time.Time{}
	}
	return time.Unix(claims.Exp, 0)
}
