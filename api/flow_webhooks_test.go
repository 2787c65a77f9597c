package api_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/internal/internalauth"
)

type flowWebhook struct {
	id, path string
	secret   []byte
}

func (f *fixture) createFlowWebhook(t *testing.T, who string, flow int64, body map[string]any) flowWebhook {
	t.Helper()
	r := f.do(t, "POST", fmt.Sprintf("/api/workflows/%d/webhooks", flow), who, body)
	require.Equal(t, 201, r.Status, r.Raw)
	secret, err := base64.StdEncoding.DecodeString(r.Body["secret"].(string))
	require.NoError(t, err)
	require.Len(t, secret, 32)
	return flowWebhook{id: r.Body["id"].(string), path: r.Body["path"].(string), secret: secret}
}

// signWebhook signs body for hook at time at, as an outside system does.
func signWebhook(t *testing.T, hook flowWebhook, body string, at time.Time) *signedRequest {
	t.Helper()
	req, err := http.NewRequest("POST", "http://engine"+hook.path, bytes.NewReader([]byte(body)))
	require.NoError(t, err)
	internalauth.Sign(req, []byte(body), hook.id, hook.secret, at)
	return &signedRequest{method: "POST", path: hook.path, body: []byte(body), header: req.Header}
}

// A flow's webhook (issue 27 item 6): created with a secret shown once,
// a signed request starts the flow on a real agent with the body as the
// run's input, once; a replayed, tampered, stale, wrongly keyed or
// unsigned request is refused, and the secret never comes back.
func TestFlowWebhookStartsTheFlowOnce(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	site := f.createSite(t, admin, "hook")
	a := f.scriptAgent(t, admin, site, "hook-01")
	r := f.do(t, "POST", "/api/assemblies", admin, map[string]any{"name": "hello", "kind": "script", "language": "sh",
		"body": `echo "hooked $CAIRN_PARAM_TICKET"`, "parameters": []any{map[string]any{"name": "ticket", "type": "number"}}})
	require.Equal(t, 201, r.Status, r.Raw)
	asm := int64(r.Body["id"].(float64))
	// The step takes the webhook body's ticket as its parameter.
	r = f.do(t, "POST", "/api/workflows", admin, map[string]any{"name": "on ticket", "steps": []any{map[string]any{"id": "hello",
		"assembly_id": asm, "parameters": map[string]any{"ticket": "{{input.ticket}}"}}}})
	require.Equal(t, 201, r.Status, r.Raw)
	flow := int64(r.Body["id"].(float64))

	hook := f.createFlowWebhook(t, admin, flow, map[string]any{"name": "psa", "device_guids": []string{a.guid}})
	require.Equal(t, "/api/workflows/webhooks/"+hook.id, hook.path)
	secret64 := base64.StdEncoding.EncodeToString(hook.secret)
	list := f.do(t, "GET", fmt.Sprintf("/api/workflows/%d/webhooks", flow), admin, nil)
	require.Equal(t, 200, list.Status, list.Raw)
	require.Len(t, list.Body["webhooks"], 1)
	require.NotContains(t, list.Raw, secret64, "the secret is shown once")
	require.NotContains(t, list.Body["webhooks"].([]any)[0].(map[string]any), "secret")
	require.Equal(t, float64(60), list.Body["webhooks"].([]any)[0].(map[string]any)["rate_limit_per_minute"], "the default rate")

	body := `{"ticket": 4711, "note": "disk full"}`
	req := signWebhook(t, hook, body, time.Now())
	ok := f.send(t, req)
	require.Equal(t, 202, ok.Status, ok.Raw)
	runID := ok.Body["run_id"].(string)
	var done response
	require.Eventually(t, func() bool {
		done = f.do(t, "GET", "/api/workflows/runs/"+runID, admin, nil)
		return done.Status == 200 && (done.Body["status"] == "succeeded" || done.Body["status"] == "failed")
	}, 2*time.Minute, 250*time.Millisecond)
	require.Equal(t, "succeeded", done.Body["status"], done.Raw)
	require.Equal(t, map[string]any{"ticket": float64(4711), "note": "disk full"}, done.Body["input"])
	require.Equal(t, hook.id, done.Body["webhook_id"])
	require.Equal(t, "webhook:"+hook.id, done.Body["requested_by"])
	require.Equal(t, []any{a.guid}, done.Body["device_guids"])
	step := done.Body["steps"].([]any)[0].(map[string]any)
	q := f.do(t, "GET", "/api/scripts/quick_run/"+step["run_id"].(string), admin, nil)
	require.Equal(t, 200, q.Status, q.Raw)
	require.Equal(t, "hooked 4711\n", onlyResult(t, q)["stdout"], "the flow ran on the agent with the body's ticket")

	again := f.send(t, req)
	require.Equal(t, 409, again.Status, again.Raw)
	require.Equal(t, "webhook_replayed", again.Body["error"])

	tampered := signWebhook(t, hook, body, time.Now())
	tampered.body = []byte(`{"ticket": 4712, "note": "disk full"}`)
	stale := signWebhook(t, hook, body, time.Now().Add(-10*time.Minute))
	other := signWebhook(t, flowWebhook{id: hook.id, path: hook.path, secret: bytes.Repeat([]byte{7}, 32)}, body, time.Now())
	unsigned := &signedRequest{method: "POST", path: hook.path, body: []byte(body), header: http.Header{}}
	elsewhere := signWebhook(t, hook, body, time.Now())
	elsewhere.path = "/api/workflows/webhooks/wh_00000000000000000000000000000000"
	for _, c := range []struct {
		name string
		req  *signedRequest
		code string
	}{
		{"tampered body", tampered, "webhook_signature_invalid"},
		{"stale timestamp", stale, "webhook_signature_stale"},
		{"another secret", other, "webhook_signature_invalid"},
		{"unsigned", unsigned, "webhook_signature_invalid"},
		{"another webhook's path", elsewhere, "webhook_signature_invalid"},
	} {
		res := f.send(t, c.req)
		require.Equal(t, 401, res.Status, "%s: %s", c.name, res.Raw)
		require.Equal(t, c.code, res.Body["error"], c.name)
		require.NotContains(t, res.Raw, secret64, c.name)
	}
	runs := f.do(t, "GET", fmt.Sprintf("/api/workflows/%d/runs", flow), admin, nil)
	require.Len(t, runs.Body["runs"], 1, "only the accepted request started a run")

	// Rotation: the old secret stops at once, the new one is shown once.
	rot := f.do(t, "POST", fmt.Sprintf("/api/workflows/%d/webhooks/%s/rotate", flow, hook.id), admin, nil)
	require.Equal(t, 200, rot.Status, rot.Raw)
	newSecret, err := base64.StdEncoding.DecodeString(rot.Body["secret"].(string))
	require.NoError(t, err)
	require.NotEqual(t, hook.secret, newSecret)
	res := f.send(t, signWebhook(t, hook, body, time.Now()))
	require.Equal(t, 401, res.Status, res.Raw)
	rotated := hook
	rotated.secret = newSecret
	res = f.send(t, signWebhook(t, rotated, body, time.Now()))
	require.Equal(t, 202, res.Status, res.Raw)
	list = f.do(t, "GET", fmt.Sprintf("/api/workflows/%d/webhooks", flow), admin, nil)
	require.NotContains(t, list.Raw, rot.Body["secret"].(string))
	require.NotNil(t, list.Body["webhooks"].([]any)[0].(map[string]any)["rotated_at"])
	require.NotNil(t, list.Body["webhooks"].([]any)[0].(map[string]any)["last_triggered_at"])

	// Deleted, it starts nothing.
	del := f.do(t, "DELETE", fmt.Sprintf("/api/workflows/%d/webhooks/%s", flow, hook.id), admin, nil)
	require.Equal(t, 204, del.Status, del.Raw)
	res = f.send(t, signWebhook(t, rotated, body, time.Now()))
	require.Equal(t, 401, res.Status, res.Raw)
	require.Equal(t, "webhook_signature_invalid", res.Body["error"])

	for _, s := range []string{secret64, rot.Body["secret"].(string)} {
		require.NotContains(t, f.logs.String(), s, "a webhook secret reached the log")
	}
}

// Each webhook has its own budget of accepted requests per minute; past
// it the answer is 429 with Retry-After, and the request starts nothing.
// Bodies are validated after the signature and before anything starts.
func TestFlowWebhookRateAndBody(t *testing.T) {
	t.Parallel()
	f := setup(t)
	fl := f.fleet(t)
	asm := f.testAssembly(t, fl.admin, "noop", "script")
	r := f.do(t, "POST", "/api/workflows", fl.admin, map[string]any{"name": "noop", "steps": []any{map[string]any{"assembly_id": asm}}})
	require.Equal(t, 201, r.Status, r.Raw)
	flow := int64(r.Body["id"].(float64))

	op := f.scopedOperatorOf(t, fl.admin, "hook-op", fl.siteA)
	for _, c := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"no name", map[string]any{"name": " "}, "name"},
		{"rate too high", map[string]any{"name": "x", "rate_limit_per_minute": 601}, "rate_limit_per_minute"},
		{"negative rate", map[string]any{"name": "x", "rate_limit_per_minute": -1}, "rate_limit_per_minute"},
		{"device outside the operator's sites", map[string]any{"name": "x", "device_guids": []string{"guid-off"}}, "device_guids"},
		{"unknown device", map[string]any{"name": "x", "device_guids": []string{"nope"}}, "device_guids"},
	} {
		r := f.do(t, "POST", fmt.Sprintf("/api/workflows/%d/webhooks", flow), op, c.body)
		require.Equal(t, 400, r.Status, "%s: %s", c.name, r.Raw)
		require.Equal(t, "validation_failed", r.Body["error"], c.name)
		require.NotEmpty(t, r.field(c.field), "%s: %s", c.name, r.Raw)
	}
	r = f.do(t, "POST", "/api/workflows/999999/webhooks", op, map[string]any{"name": "x"})
	require.Equal(t, 404, r.Status, r.Raw)

	hook := f.createFlowWebhook(t, op, flow, map[string]any{"name": "limited", "rate_limit_per_minute": 2})
	// Bodies: checked once signed, refused without starting anything.
	checked := f.createFlowWebhook(t, op, flow, map[string]any{"name": "checked"})
	for _, c := range []struct {
		name, body, field string
	}{
		{"not JSON", `ticket=1`, "body"},
		{"not an object", `[1, 2]`, "body"},
		{"no devices anywhere", `{"ticket": 1}`, "device_guids"},
		{"devices not a list", `{"device_guids": "guid-conn"}`, "device_guids"},
		{"device outside the webhook's sites", `{"device_guids": ["guid-off"]}`, "device_guids"},
	} {
		res := f.send(t, signWebhook(t, checked, c.body, time.Now()))
		require.Equal(t, 400, res.Status, "%s: %s", c.name, res.Raw)
		require.Equal(t, "validation_failed", res.Body["error"], c.name)
		require.NotEmpty(t, res.field(c.field), "%s: %s", c.name, res.Raw)
	}
	big := `{"pad": "` + strings.Repeat("x", 70<<10) + `"}`
	res := f.send(t, signWebhook(t, checked, big, time.Now()))
	require.Equal(t, 413, res.Status, res.Raw)

	for i := range 2 {
		res = f.send(t, signWebhook(t, hook, fmt.Sprintf(`{"device_guids": ["guid-conn"], "ticket": %d}`, i), time.Now()))
		require.Equal(t, 202, res.Status, res.Raw)
	}
	res = f.send(t, signWebhook(t, hook, `{"device_guids": ["guid-conn"], "ticket": 3}`, time.Now()))
	require.Equal(t, 429, res.Status, res.Raw)
	require.Equal(t, "rate_limited", res.Body["error"])
	retry, err := strconv.Atoi(res.Header.Get("Retry-After"))
	require.NoError(t, err, "Retry-After: %q", res.Header.Get("Retry-After"))
	require.GreaterOrEqual(t, retry, 1)
	runs := f.do(t, "GET", fmt.Sprintf("/api/workflows/%d/runs", flow), fl.admin, nil)
	require.Len(t, runs.Body["runs"], 2, "only the requests within the budget started runs")
	require.Equal(t, "webhook:"+hook.id, runs.Body["runs"].([]any)[0].(map[string]any)["requested_by"])

	// Scope: another site's operator neither sees nor changes the webhook.
	other := f.scopedOperatorOf(t, fl.admin, "hook-op-b", fl.siteB)
	list := f.do(t, "GET", fmt.Sprintf("/api/workflows/%d/webhooks", flow), other, nil)
	require.Equal(t, 200, list.Status, list.Raw)
	require.Empty(t, list.Body["webhooks"])
	for _, m := range []string{"POST rotate", "DELETE"} {
		method, suffix, _ := strings.Cut(m, " ")
		path := fmt.Sprintf("/api/workflows/%d/webhooks/%s", flow, hook.id)
		if suffix != "" {
			path += "/" + suffix
		}
		r := f.do(t, method, path, other, nil)
		require.Equal(t, 404, r.Status, "%s: %s", m, r.Raw)
	}
	list = f.do(t, "GET", fmt.Sprintf("/api/workflows/%d/webhooks", flow), fl.admin, nil)
	require.Len(t, list.Body["webhooks"], 2, "the admin sees every webhook")
}
