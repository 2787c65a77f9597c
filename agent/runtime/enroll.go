package runtime

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/cairn-rmm/cairn/agent"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/transport"
)

// Terminal enrollment outcomes.
var (
	ErrDenied  = errors.New("the enrollment request was denied by an administrator")
	ErrExpired = errors.New("the enrollment request expired before an administrator approved it")
)

// errApprovalLost: the Engine no longer knows the approval (restored or
// purged Engine); a new request is the only way forward.
var errApprovalLost = errors.New("the Engine no longer knows the enrollment request")

// EnrollOptions configure Enroll.
type EnrollOptions struct {
	Identity Identity
	Version  string
	Timing   Timing
	Logger   *slog.Logger
	// Requested is called each time the Engine accepted a request, with
	// its approval ID and status (pending, or approved by auto-approval),
	// so a person can find it in the approval queue.
	Requested func(approvalID, status string)
	// Hooks.Error sees every failure that is retried ("enroll").
	Hooks Hooks
}

// EnrollResult is a completed enrollment.
type EnrollResult struct {
	ApprovalID string
	Device     proto.EnrolledDevice
}

// Enroll runs the enrollment exchange with the code and key in store: a
// nonce, a request signed with the Ed25519 key, then polls carrying a DPoP
// proof of the same key until the Engine answers enrolled (identity and
// tokens are saved to store), denied (ErrDenied) or expired (ErrExpired).
// Rate limiting (429) and answers that are not the Engine's refusal
// (network failures, 5xx, a proxy's page) are retried with backoff.
func Enroll(ctx context.Context, store Store, client *transport.Client, opts EnrollOptions) (EnrollResult, error) {
	cfg, err := store.Load()
	if err != nil {
		return EnrollResult{}, err
	}
	if !cfg.CanEnroll() {
		return EnrollResult{}, errors.New("no enrollment code in the config")
	}
	key, err := cfg.PrivateKey()
	if err != nil {
		return EnrollResult{}, err
	}
	e := &enroller{
		store: store, client: client, opts: opts, timing: opts.Timing.withDefaults(), key: key,
		code: cfg.EnrollmentCode, ticket: cfg.CloneTicket, log: opts.Logger,
	}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	e.retry = newBackoff(e.timing.RetryMin, e.timing.RetryMax)
	for {
		resp, err := e.request(ctx)
		if err != nil {
			return EnrollResult{}, err
		}
		if opts.Requested != nil {
			opts.Requested(resp.ApprovalID, resp.Status)
		}
		e.log.Info("enrollment requested", "approval_id", resp.ApprovalID, "status", resp.Status)
		dev, err := e.poll(ctx, resp)
		if errors.Is(err, errApprovalLost) {
			e.log.Warn("enrollment request vanished on the Engine; requesting again", "approval_id", resp.ApprovalID)
			continue
		}
		if err != nil {
			return EnrollResult{ApprovalID: resp.ApprovalID}, err
		}
		return EnrollResult{ApprovalID: resp.ApprovalID, Device: dev}, nil
	}
}

type enroller struct {
	store  Store
	client *transport.Client
	opts   EnrollOptions
	timing Timing
	key    ed25519.PrivateKey
	code   string
	// ticket is the clone ticket to enroll with instead of code.
	ticket string
	log    *slog.Logger
	retry  *backoff
}

// request gets a nonce and sends the signed request. A nonce refused as
// stale (used or expired between the two calls) is replaced a few times.
func (e *enroller) request(ctx context.Context) (proto.EnrollResponse, error) {
	pub := base64.StdEncoding.EncodeToString(e.key.Public().(ed25519.PublicKey))
	id := e.opts.Identity
	staleNonces := 0
	for {
		var n proto.EnrollNonce
		if err := e.client.Do(ctx, http.MethodPost, proto.PathEnrollNonce, nil, &n, transport.AuthNone); err != nil {
			if err := e.wait(ctx, "nonce", err); err != nil {
				return proto.EnrollResponse{}, err
			}
			continue
		}
		req := proto.EnrollRequest{
			Code: e.code, PublicKey: pub, Hostname: id.Hostname, OS: id.OS,
			Fingerprint: id.Fingerprint, AgentVersion: e.opts.Version, Nonce: n.Nonce,
		}
		if e.ticket != "" {
			req.Code, req.CloneTicket = "", e.ticket
		}
		sig := ed25519.Sign(e.key, proto.EnrollSigningMessage(req.Nonce, req.Code+req.CloneTicket, req.Hostname, req.Fingerprint, req.PublicKey))
		req.Signature = base64.StdEncoding.EncodeToString(sig)
		var resp proto.EnrollResponse
		// The proof lets the Engine refuse a server_url it does not serve
		// agents on now, rather than after an operator approved.
		err := e.client.Do(ctx, http.MethodPost, proto.PathEnrollRequest, req, &resp, transport.AuthProof)
		if err == nil {
			e.retry.reset()
			return resp, nil
		}
		var pe *proto.Error
		if errors.As(err, &pe) && pe.Code == "validation_failed" && pe.Fields["nonce"] != "" && staleNonces < 3 {
			staleNonces++
			continue
		}
		if errors.As(err, &pe) && pe.Code == "validation_failed" && pe.Fields["clone_ticket"] != "" && e.ticket != "" {
			// A spent or expired ticket: drop it, and enroll with the code
			// when there is one.
			e.log.Warn("the clone ticket was refused; dropping it", "reason", pe.Fields["clone_ticket"])
			e.ticket = ""
			if _, uerr := e.store.Update(func(c *agent.Config) error { c.CloneTicket = ""; return nil }); uerr != nil {
				return proto.EnrollResponse{}, uerr
			}
			if e.code != "" {
				continue
			}
		}
		if err := e.wait(ctx, "request", err); err != nil {
			return proto.EnrollResponse{}, fmt.Errorf("enrollment request refused: %w", err)
		}
	}
}

// poll asks for the decision until there is one.
func (e *enroller) poll(ctx context.Context, resp proto.EnrollResponse) (proto.EnrolledDevice, error) {
	every := e.pollEvery(resp.PollAfterSeconds)
	// An auto-approved request can be collected at once.
	if resp.Status != proto.ApprovalApproved && !sleep(ctx, every) {
		return proto.EnrolledDevice{}, ctx.Err()
	}
	for {
		var pr proto.EnrollPollResponse
		err := e.client.Do(ctx, http.MethodPost, proto.PathEnrollPoll, proto.EnrollPoll{ApprovalID: resp.ApprovalID}, &pr, transport.AuthProof)
		if err != nil {
			if transport.Code(err) == "not_found" {
				return proto.EnrolledDevice{}, errApprovalLost
			}
			if err := e.wait(ctx, "poll", err); err != nil {
				return proto.EnrolledDevice{}, err
			}
			continue
		}
		e.retry.reset()
		switch pr.Status {
		case proto.ApprovalEnrolled:
			if pr.Device == nil || pr.Tokens == nil {
				return proto.EnrolledDevice{}, errors.New("the Engine answered enrolled without identity or tokens")
			}
			return *pr.Device, e.save(*pr.Device, *pr.Tokens, pr.ScriptSigning)
		case proto.ApprovalDenied:
			return proto.EnrolledDevice{}, ErrDenied
		case proto.ApprovalExpired:
			return proto.EnrolledDevice{}, ErrExpired
		}
		if !sleep(ctx, e.pollEvery(pr.PollAfterSeconds)) {
			return proto.EnrolledDevice{}, ctx.Err()
		}
	}
}

func (e *enroller) pollEvery(seconds int) time.Duration {
	if seconds > 0 {
		return time.Duration(seconds) * time.Second
	}
	return e.timing.EnrollPoll
}

// save stores identity and tokens, unless the key changed meanwhile (the
// tokens are bound to the key that polled).
func (e *enroller) save(dev proto.EnrolledDevice, tok proto.Tokens, trust *proto.ScriptTrust) error {
	want := base64.StdEncoding.EncodeToString(e.key)
	_, err := e.store.Update(func(c *agent.Config) error {
		if c.Ed25519PrivateKey != want {
			return errors.New("the device key changed during enrollment")
		}
		c.Agent.GUID, c.Agent.AgentID = dev.GUID, dev.AgentID
		c.AccessToken, c.RefreshToken = tok.AccessToken, tok.RefreshToken
		c.CloneTicket = ""
		c.PinTrust(trust)
		return nil
	})
	if err != nil {
		return fmt.Errorf("save enrollment: %w", err)
	}
	return nil
}

// wait sleeps before a retry when err is worth retrying, and returns err
// otherwise.
func (e *enroller) wait(ctx context.Context, step string, err error) error {
	d, ok := retryDelay(ctx, err, e.retry)
	if !ok {
		return err
	}
	e.opts.Hooks.error("enroll", err)
	e.log.Warn("enrollment step failed; retrying", "step", step, "in", d, "err", err)
	if !sleep(ctx, d) {
		return ctx.Err()
	}
	return nil
}

// retryDelay says whether err is transient and how long to wait: a 429 or
// 503 waits its Retry-After (at least the backoff); network failures, 5xx
// and answers without an Engine code back off. The Engine's 4xx refusals
// are final.
func retryDelay(ctx context.Context, err error, b *backoff) (time.Duration, bool) {
	if err == nil || ctx.Err() != nil {
		return 0, false
	}
	d := b.next()
	var te *transport.Error
	if !errors.As(err, &te) {
		return d, true // no answer at all
	}
	switch {
	case te.Status == http.StatusTooManyRequests || te.Status == http.StatusServiceUnavailable:
		return max(d, te.RetryAfter), true
	case te.Status >= 500 || te.API.Code == "":
		return d, true
	}
	return 0, false
}
