package flows

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/aegis"
	"github.com/cairn-rmm/cairn/internal/internalauth"
	"github.com/cairn-rmm/cairn/internal/ownership"
	"github.com/cairn-rmm/cairn/internal/ratelimit"
)

// Webhook error codes (declared in the flows capability's Codes). None
// says whether the webhook exists or what the signature should have been.
const (
	// ECodeWebhookSignatureInvalid: no such webhook, headers missing or
	// malformed, or a signature that does not match the request.
	ECodeWebhookSignatureInvalid = "webhook_signature_invalid"
	// ECodeWebhookSignatureStale: the timestamp is outside the window.
	ECodeWebhookSignatureStale = "webhook_signature_stale"
	// ECodeWebhookReplayed: this signed request was accepted before.
	ECodeWebhookReplayed = "webhook_replayed"
)

// Webhook bounds.
const (
	// MaxWebhookBody is the largest body a webhook request may carry.
	MaxWebhookBody = 64 << 10
	// DefaultWebhookRate and MaxWebhookRate bound accepted requests per
	// minute per webhook.
	DefaultWebhookRate = 60
	MaxWebhookRate     = 600
	// MaxWebhooksPerFlow bounds a flow's webhooks.
	MaxWebhooksPerFlow = 20
	webhookSecretBytes = 32
)

// WebhookPath is the path an outside system POSTs to.
func WebhookPath(id string) string { return "/api/workflows/webhooks/" + id }

// Webhook is an inbound webhook of a flow, without its secret.
type Webhook struct {
	ID         string `json:"id"`
	WorkflowID int64  `json:"workflow_id"`
	Name       string `json:"name"`
	// Path is where requests go (relative to the Engine's public URL).
	Path string `json:"path"`
	// DeviceGUIDs are the devices a run targets when the body names none.
	DeviceGUIDs        []string `json:"device_guids"`
	RateLimitPerMinute int      `json:"rate_limit_per_minute"`
	// SiteScope is the sites of whoever saved it (null: every site): its
	// runs reach devices inside them only.
	SiteScope       []int64    `json:"site_scope" openapi:"nullable"`
	CreatedBy       string     `json:"created_by"`
	CreatedAt       time.Time  `json:"created_at"`
	RotatedAt       *time.Time `json:"rotated_at"`
	LastTriggeredAt *time.Time `json:"last_triggered_at"`
}

// WebhookWithSecret is a webhook and its secret, answered once: when it
// is created and when its secret is rotated.
type WebhookWithSecret struct {
	Webhook
	// Secret is the HMAC key, standard base64 of 32 bytes.
	Secret string `json:"secret"`
}

// WebhookInput is what an operator sets on a webhook.
type WebhookInput struct {
	Name               string   `json:"name" limit:"max=200"`
	DeviceGUIDs        []string `json:"device_guids" limit:"max=1000"`
	RateLimitPerMinute int      `json:"rate_limit_per_minute"`
}

// Webhooks keeps flows' inbound webhooks and starts runs from their
// requests. Requests are signed as internal/internalauth signs Internal
// requests (one canonical string, window and seen-cache), under the
// webhook's secret, with the webhook's ID as the key ID.
type Webhooks struct {
	flows   *Service
	store   *db.Store
	cipher  *aegis.Cipher
	limiter *ratelimit.Limiter
	auth    *internalauth.Service
}

// NewWebhooks returns the webhook service over the flow service.
func NewWebhooks(f *Service, cipher *aegis.Cipher, auth *internalauth.Service) *Webhooks {
	return &Webhooks{flows: f, store: f.store, cipher: cipher, limiter: ratelimit.New(f.store.Queries), auth: auth}
}

func webhookAAD(id string) []byte { return []byte("cairn:flow-webhook:" + id) }

func (w *Webhooks) newSecret(id string) ([]byte, []byte, error) {
	secret := make([]byte, webhookSecretBytes)
	_, _ = rand.Read(secret)
	sealed, err := w.cipher.Seal(secret, webhookAAD(id))
	return secret, sealed, err
}

// Create adds a webhook to flow flowID, scoped to by's sites; its
// devices must lie inside them.
func (w *Webhooks) Create(ctx context.Context, by ownership.Editor, flowID int64, in WebhookInput) (WebhookWithSecret, error) {
	if _, err := w.flows.Get(ctx, flowID); err != nil {
		return WebhookWithSecret{}, err
	}
	in, err := w.check(ctx, by.Scope, in)
	if err != nil {
		return WebhookWithSecret{}, err
	}
	existing, err := w.store.AutomationWorkflowWebhookList(ctx, flowID)
	if err != nil {
		return WebhookWithSecret{}, err
	}
	if len(existing) >= MaxWebhooksPerFlow {
		return WebhookWithSecret{}, cairn.Invalid("workflow", fmt.Sprintf("has %d webhooks already, the most a workflow may have", MaxWebhooksPerFlow))
	}
	raw := make([]byte, 16)
	_, _ = rand.Read(raw)
	id := "wh_" + hex.EncodeToString(raw)
	secret, sealed, err := w.newSecret(id)
	if err != nil {
		return WebhookWithSecret{}, err
	}
	row, err := w.store.AutomationWorkflowWebhookInsert(ctx, db.AutomationWorkflowWebhookInsertParams{ID: id, WorkflowID: flowID,
		Name: in.Name, DeviceGuids: in.DeviceGUIDs, RateLimitPerMinute: int32(in.RateLimitPerMinute), SecretSealed: sealed,
		SiteScope: by.Scope.Column(), CreatedBy: by.Username})
	if err != nil {
		return WebhookWithSecret{}, err
	}
	return WebhookWithSecret{Webhook: decodeWebhook(row), Secret: base64.StdEncoding.EncodeToString(secret)}, nil
}

func (w *Webhooks) check(ctx context.Context, scope cairn.SiteScope, in WebhookInput) (WebhookInput, error) {
	var v cairn.Validation
	in.Name = strings.TrimSpace(in.Name)
	if n := len([]rune(in.Name)); n == 0 || n > MaxName {
		v.Add("name", fmt.Sprintf("must be 1 to %d characters", MaxName))
	}
	if in.RateLimitPerMinute == 0 {
		in.RateLimitPerMinute = DefaultWebhookRate
	}
	if in.RateLimitPerMinute < 1 || in.RateLimitPerMinute > MaxWebhookRate {
		v.Add("rate_limit_per_minute", fmt.Sprintf("must be 1 to %d (0: %d)", MaxWebhookRate, DefaultWebhookRate))
	}
	in.DeviceGUIDs = dedupe(in.DeviceGUIDs)
	if len(in.DeviceGUIDs) > MaxDevices {
		v.Add("device_guids", fmt.Sprintf("name at most %d devices", MaxDevices))
	} else if bad, err := w.flows.outside(ctx, scope, in.DeviceGUIDs); err != nil {
		return in, err
	} else if bad != "" {
		v.Add("device_guids", "unknown device "+bad)
	}
	return in, v.Err()
}

// outside returns the first of guids that is unknown or outside scope
// ("" when every one is inside).
func (s *Service) outside(ctx context.Context, scope cairn.SiteScope, guids []string) (string, error) {
	if len(guids) == 0 {
		return "", nil
	}
	rows, err := s.store.DeviceSitesByGUIDs(ctx, guids)
	if err != nil {
		return "", err
	}
	known := map[string]bool{}
	for _, r := range rows {
		known[string(r.Guid)] = scope.Allows(r.SiteID)
	}
	for _, g := range guids {
		if !known[g] {
			return g, nil
		}
	}
	return "", nil
}

// List returns the webhooks of flow flowID that scope covers.
func (w *Webhooks) List(ctx context.Context, scope cairn.SiteScope, flowID int64) ([]Webhook, error) {
	if _, err := w.flows.Get(ctx, flowID); err != nil {
		return nil, err
	}
	rows, err := w.store.AutomationWorkflowWebhookList(ctx, flowID)
	if err != nil {
		return nil, err
	}
	out := []Webhook{}
	for _, r := range rows {
		if scope.Covers(cairn.ScopeColumn(r.SiteScope)) {
			out = append(out, decodeWebhook(r))
		}
	}
	return out, nil
}

// get returns webhook id of flow flowID when scope covers it; not_found
// otherwise, so a scoped operator learns nothing of others' webhooks.
func (w *Webhooks) get(ctx context.Context, scope cairn.SiteScope, flowID int64, id string) (db.AutomationWorkflowWebhook, error) {
	row, err := w.store.AutomationWorkflowWebhookGet(ctx, id)
	if err != nil {
		return row, db.NotFound(err, "webhook not found")
	}
	if row.WorkflowID != flowID || !scope.Covers(cairn.ScopeColumn(row.SiteScope)) {
		return row, cairn.Errorf(cairn.ECodeNotFound, "webhook not found")
	}
	return row, nil
}

// Rotate gives webhook id a new secret, answered this once; the old one
// stops verifying at once.
func (w *Webhooks) Rotate(ctx context.Context, scope cairn.SiteScope, flowID int64, id string) (WebhookWithSecret, error) {
	if _, err := w.get(ctx, scope, flowID, id); err != nil {
		return WebhookWithSecret{}, err
	}
	secret, sealed, err := w.newSecret(id)
	if err != nil {
		return WebhookWithSecret{}, err
	}
	row, err := w.store.AutomationWorkflowWebhookRotate(ctx, db.AutomationWorkflowWebhookRotateParams{ID: id, WorkflowID: flowID, SecretSealed: sealed})
	if err != nil {
		return WebhookWithSecret{}, db.NotFound(err, "webhook not found")
	}
	return WebhookWithSecret{Webhook: decodeWebhook(row), Secret: base64.StdEncoding.EncodeToString(secret)}, nil
}

// Delete removes webhook id; its requests are refused from then on.
func (w *Webhooks) Delete(ctx context.Context, scope cairn.SiteScope, flowID int64, id string) error {
	if _, err := w.get(ctx, scope, flowID, id); err != nil {
		return err
	}
	n, err := w.store.AutomationWorkflowWebhookDelete(ctx, db.AutomationWorkflowWebhookDeleteParams{ID: id, WorkflowID: flowID})
	if err != nil {
		return err
	}
	if n == 0 {
		return cairn.Errorf(cairn.ECodeNotFound, "webhook not found")
	}
	return nil
}

// webhookBody is the part of a request body the Engine reads; the whole
// body is the run's input.
type webhookBody struct {
	DeviceGUIDs *[]string `json:"device_guids"`
}

// Trigger verifies a request to webhook id (method, path with query,
// body, headers), counts it against the webhook's rate, and starts a run
// of its flow with the body as input; it returns the webhook and run IDs.
// The order matters: nothing is read or counted for a request that is
// not signed by the webhook's secret, and a signature is accepted once.
func (w *Webhooks) Trigger(ctx context.Context, id, method, pathAndQuery string, body []byte, h http.Header) (cairn.RunID, error) {
	var hook db.AutomationWorkflowWebhook
	secret := func(ctx context.Context, keyID string) ([]byte, error) {
		if keyID != id {
			return nil, cairn.Errorf(ECodeWebhookSignatureInvalid, "the request is not signed by this webhook's secret")
		}
		row, err := w.store.AutomationWorkflowWebhookGet(ctx, id)
		if db.IsNoRows(err) {
			return nil, cairn.Errorf(ECodeWebhookSignatureInvalid, "the request is not signed by this webhook's secret")
		}
		if err != nil {
			return nil, err
		}
		key, err := w.cipher.Open(row.SecretSealed, webhookAAD(id))
		if err != nil {
			if errors.Is(err, aegis.ErrLocked) {
				return nil, err
			}
			return nil, fmt.Errorf("flows: open webhook %s: %w", id, err)
		}
		hook = row
		return key, nil
	}
	if _, err := w.auth.VerifyWith(ctx, method, pathAndQuery, body, h, secret); err != nil {
		return "", webhookError(err)
	}
	if err := w.limiter.Hit(ctx, "flow-webhook:"+id, ratelimit.Rule{Limit: int(hook.RateLimitPerMinute), Window: time.Minute}); err != nil {
		return "", err
	}
	input, guids, err := checkWebhookBody(body, hook.DeviceGuids)
	if err != nil {
		return "", err
	}
	runID, err := w.flows.start(ctx, cairn.ScopeColumn(hook.SiteScope), "webhook:"+id, hook.WorkflowID, guids,
		trigger{input: input, webhookID: &id})
	if err != nil {
		return "", err
	}
	if err := w.store.AutomationWorkflowWebhookTriggered(ctx, id); err != nil {
		return "", err
	}
	return cairn.RunID(runID), nil
}

// checkWebhookBody validates a request body: a JSON object of at most
// MaxWebhookBody bytes, with optional device_guids (the run's devices,
// else the webhook's own). It returns the compacted body and the devices.
func checkWebhookBody(body []byte, defaults []string) ([]byte, []string, error) {
	if len(body) > MaxWebhookBody {
		return nil, nil, cairn.Errorf(cairn.ECodeTooLarge, "the body is larger than %d bytes", MaxWebhookBody)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil || obj == nil {
		return nil, nil, cairn.Invalid("body", "must be a JSON object")
	}
	var b webhookBody
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, nil, cairn.Invalid("device_guids", "must be a list of device GUIDs")
	}
	guids := defaults
	if b.DeviceGUIDs != nil {
		guids = *b.DeviceGUIDs
	}
	if len(guids) == 0 {
		return nil, nil, cairn.Invalid("device_guids", "the webhook names no devices; the body must")
	}
	var out bytes.Buffer
	if err := json.Compact(&out, body); err != nil {
		return nil, nil, cairn.Invalid("body", "must be a JSON object")
	}
	return out.Bytes(), guids, nil
}

// webhookError gives a refused signature the webhook's own code.
func webhookError(err error) error {
	var ce *cairn.Error
	if !errors.As(err, &ce) {
		return err
	}
	code := ""
	switch ce.Code {
	case internalauth.ECodeSignatureInvalid:
		code = ECodeWebhookSignatureInvalid
	case internalauth.ECodeSignatureStale:
		code = ECodeWebhookSignatureStale
	case internalauth.ECodeSignatureReplayed:
		code = ECodeWebhookReplayed
	default:
		return err
	}
	return &cairn.Error{Code: code, Message: ce.Message}
}

func decodeWebhook(r db.AutomationWorkflowWebhook) Webhook {
	guids := r.DeviceGuids
	if guids == nil {
		guids = []string{}
	}
	return Webhook{ID: r.ID, WorkflowID: r.WorkflowID, Name: r.Name, Path: WebhookPath(r.ID), DeviceGUIDs: guids,
		RateLimitPerMinute: int(r.RateLimitPerMinute), SiteScope: r.SiteScope, CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt,
		RotatedAt: r.RotatedAt, LastTriggeredAt: r.LastTriggeredAt}
}

// WebhookSealedColumns is the webhooks' sealed secret, which a data-key
// rotation re-seals.
func WebhookSealedColumns() []aegis.Column {
	return []aegis.Column{{Names: []string{"automation_workflow_webhooks.secret_sealed"},
		Reseal: func(ctx context.Context, q *db.Queries, r *aegis.Resealer) error {
			rows, err := q.AutomationWorkflowWebhookListAll(ctx)
			if err != nil {
				return err
			}
			for _, h := range rows {
				v, changed, err := r.Reseal(h.SecretSealed, webhookAAD(h.ID))
				if err != nil {
					return err
				}
				if changed {
					if err := q.AutomationWorkflowWebhookSealedUpdate(ctx, db.AutomationWorkflowWebhookSealedUpdateParams{ID: h.ID, SecretSealed: v}); err != nil {
						return err
					}
				}
			}
			return nil
		}}}
}

// inputRef is a step parameter value that takes a top-level field of the
// run's input: the whole value must be "{{input.<field>}}".
var inputRef = regexp.MustCompile(`^\{\{\s*input\.([A-Za-z0-9_-]{1,64})\s*\}\}$`)

// ResolveParameters gives a step of a run started with input (a webhook's
// body) its parameter values: each value "{{input.<field>}}" becomes that
// field of the input (a string, number or boolean as is; an object or
// list as its JSON text; absent or null: no value, so the assembly's
// default applies or a required parameter fails the step). Without input
// the references resolve to no value. Other values stay as saved.
func ResolveParameters(params map[string]any, input json.RawMessage) map[string]any {
	var fields map[string]json.RawMessage
	if len(input) > 0 {
		_ = json.Unmarshal(input, &fields)
	}
	out := make(map[string]any, len(params))
	for name, val := range params {
		s, ok := val.(string)
		m := inputRef.FindStringSubmatch(s)
		if !ok || m == nil {
			out[name] = val
			continue
		}
		raw, found := fields[m[1]]
		if !found {
			continue
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil || v == nil {
			continue
		}
		switch v.(type) {
		case string, float64, bool:
			out[name] = v
		default:
			out[name] = string(raw)
		}
	}
	return out
}
