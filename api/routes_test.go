package api_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cairn-rmm/cairn"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/api"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
)

var knownClasses = map[api.AuthClass]bool{
	api.AuthNone: true, api.AuthBootstrap: true, api.AuthToken: true, api.AuthMFAPending: true, api.AuthAdmin: true,
	api.AuthDevice: true, api.AuthRefresh: true, api.AuthDeviceOrToken: true, api.AuthSignedURL: true,
	api.AuthInternal: true, api.AuthWebhook: true,
}

// Every route the router serves must come from a route table row with a
// known auth class: a route added any other way fails here.
func TestEveryRouteHasAnAuthClass(t *testing.T) {
	t.Parallel()
	f := setup(t)
	declared := map[string]api.AuthClass{}
	for _, rt := range f.engine.srv.Routes() {
		require.True(t, knownClasses[rt.Auth], "%s %s has unknown class %q", rt.Method, rt.Pattern, rt.Auth)
		key := rt.Method + " " + rt.Pattern
		_, dup := declared[key]
		require.False(t, dup, "%s declared twice", key)
		declared[key] = rt.Auth
	}
	router, ok := f.engine.srv.Handler().(chi.Routes)
	require.True(t, ok)
	served := 0
	err := chi.Walk(router, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		served++
		_, ok := declared[method+" "+route]
		require.True(t, ok, "%s %s is served but not in a route table", method, route)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, len(declared), served)
}

var pathParam = regexp.MustCompile(`\{[^}]+\}`)

// deviceContentRoutes answer device content (issue 21 item 11): a read
// API token needs read:device-content for them.
var deviceContentRoutes = []string{
	"GET /api/device/files/{hostname}/text",
	"GET /api/device/files/{hostname}/transfer/{transfer_id}/content",
	"GET /api/device/registry/{hostname}/children",
	"GET /api/shell/sessions/{id}/transcript",
}

// The authorization matrix: every protected route refuses an anonymous
// caller, every admin route refuses an operator, and bootstrap steps refuse
// everyone once bootstrap is finished. The API token columns: a read token
// without read:device-content is refused (403 scope_required) exactly the
// device content routes, where the token with the scope, a write token and
// the session pass that check; the routes that redact process command
// lines instead answer that token.
func TestAuthorizationMatrix(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	operator := f.operator(t, "matrix-operator")
	readBare := f.newReadToken(t, admin)
	readContent := f.newReadToken(t, admin, "read:device-content")
	write, _ := f.newAPIToken(t, admin, "write", 7)
	var content []string
	for _, rt := range f.engine.srv.Routes() {
		if rt.Handler.DeviceContent() {
			content = append(content, rt.Method+" "+rt.Pattern)
		}
	}
	require.ElementsMatch(t, deviceContentRoutes, content, "the routes marked as device content")
	for _, rt := range f.engine.srv.Routes() {
		path := pathParam.ReplaceAllString(rt.Pattern, "1")
		t.Run(rt.Method+" "+rt.Pattern, func(t *testing.T) {
			anon := f.do(t, rt.Method, path, "", nil)
			switch rt.Auth {
			case api.AuthToken, api.AuthAdmin, api.AuthDeviceOrToken:
				require.Equal(t, 401, anon.Status, anon.Raw)
				require.Equal(t, "unauthorized", anon.Body["error"])
			case api.AuthDevice, api.AuthRefresh:
				// An anonymous caller is not an agent at all.
				require.Equal(t, 401, anon.Status, anon.Raw)
				require.Equal(t, "agent_context_required", anon.Body["error"])
			case api.AuthSignedURL:
				// Without a valid signature there is nothing to serve.
				require.Equal(t, 403, anon.Status, anon.Raw)
				require.Equal(t, "install_link_invalid", anon.Body["error"])
			case api.AuthInternal:
				// Only an HMAC-signed request is a service component.
				require.Equal(t, 401, anon.Status, anon.Raw)
				require.Equal(t, "internal_signature_invalid", anon.Body["error"])
			case api.AuthWebhook:
				// Only a request signed with the webhook's secret starts it.
				require.Equal(t, 401, anon.Status, anon.Raw)
				require.Equal(t, "webhook_signature_invalid", anon.Body["error"])
			case api.AuthBootstrap:
				if rt.Method != "GET" {
					require.Equal(t, 403, anon.Status, anon.Raw)
					require.Equal(t, "bootstrap_finished", anon.Body["error"])
				}
			default:
				require.NotEqual(t, 401, anon.Status, "public route refused an anonymous caller: %s", anon.Raw)
			}
			if rt.Auth == api.AuthDevice || rt.Auth == api.AuthRefresh || rt.Auth == api.AuthInternal || rt.Auth == api.AuthWebhook {
				// An operator's session is neither a device nor a service.
				r := f.do(t, rt.Method, path, operator, map[string]any{})
				require.Equal(t, 401, r.Status, r.Raw)
			}
			if rt.Auth == api.AuthAdmin {
				r := f.do(t, rt.Method, path, operator, map[string]any{})
				require.Equal(t, 403, r.Status, r.Raw)
				require.Equal(t, "forbidden", r.Body["error"])
			}
			key := rt.Method + " " + rt.Pattern
			switch {
			case slices.Contains(deviceContentRoutes, key):
				requireScopeRequired(t, f.do(t, rt.Method, path, readBare, nil), "read token")
				for _, who := range []string{readContent, write, admin} {
					r := f.do(t, rt.Method, path, who, nil)
					require.NotEqual(t, "scope_required", r.Body["error"], r.Raw)
					require.Less(t, r.Status, 500, r.Raw)
				}
			case key == "GET /api/device/details/{hostname}" || key == "GET /api/device/processes/{hostname}":
				// Redacted, not refused: the device is unknown here.
				r := f.do(t, rt.Method, path, readBare, nil)
				require.Equal(t, 404, r.Status, r.Raw)
			}
		})
	}
}

// The "shared objects by owner and scope" columns: every write route on
// one shared automation object (an assembly, a workflow, a saved device
// filter; found by walking the route table) is called by a site-limited
// operator on an administrator's object (forbidden: it reaches every
// site), on another site's operator's object (forbidden), and on its own
// (allowed). docs/api.md "Shared objects: owner and scope".
func TestSharedObjectWritesFollowOwnerScope(t *testing.T) {
	t.Parallel()
	f := setup(t)
	fl := f.fleet(t)
	opA := f.scopedOperatorOf(t, fl.admin, "matrix-shared-a", fl.siteA)
	opB := f.scopedOperatorOf(t, fl.admin, "matrix-shared-b", fl.siteB)
	asm := f.testAssembly(t, fl.admin, "matrix shared step", "script")
	n := 0
	object := func(token, collection string) string {
		n++
		id := f.create(t, token, collection, sharedBodies(fmt.Sprintf("matrix-%d", n), asm)[collection])
		return fmt.Sprintf("%s/%d", collection, id)
	}
	covered := 0
	for _, rt := range f.engine.srv.Routes() {
		if rt.Auth != api.AuthToken || (rt.Method != "PUT" && rt.Method != "DELETE" && rt.Method != "PATCH") {
			continue
		}
		collection, _, one := strings.Cut(rt.Pattern, "/{")
		if _, shared := sharedBodies("", 0)[collection]; !shared || !one || strings.Contains(rt.Pattern, "}/") {
			continue
		}
		covered++
		t.Run(rt.Method+" "+rt.Pattern, func(t *testing.T) {
			body := func() any {
				n++
				if rt.Method == "DELETE" {
					return nil
				}
				return sharedBodies(fmt.Sprintf("matrix-%d", n), asm)[collection]
			}
			for _, c := range []struct{ owner, caller string }{{fl.admin, opA}, {opB, opA}, {opA, opB}} {
				path := object(c.owner, collection)
				r := f.do(t, rt.Method, path, c.caller, body())
				require.Equal(t, 403, r.Status, r.Raw)
				require.Equal(t, "forbidden", r.Body["error"])
				require.Equal(t, 200, f.do(t, "GET", path, fl.admin, nil).Status, "the object is still there")
			}
			r := f.do(t, rt.Method, object(opA, collection), opA, body())
			require.Less(t, r.Status, 300, "an operator changes its own object: %s", r.Raw)
		})
	}
	require.Equal(t, 6, covered, "PUT and DELETE of assemblies, workflows and device filters")
}

// The "operator of another site" column: an operator assigned elsewhere
// calls every Token and Device-or-Token route, reads and writes, with each
// path parameter naming a real object of a site hidden from them (a
// device's GUID and hostname, an activity entry, an enrollment code, an
// approval). The answer must equal the one for a missing object, so the
// route tells nothing about what exists elsewhere, and must never carry
// the hidden site or device.
func TestNoRouteLeaksOutOfScopeSites(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	admin := f.sudo(t, f.admin(t))
	mine := f.do(t, "POST", "/api/sites", admin, map[string]any{"name": "Visible Site", "site_worker_slug": uniqueSlug("visible")})
	hidden := f.do(t, "POST", "/api/sites", admin, map[string]any{"name": "Hidden Site", "site_worker_slug": uniqueSlug("hidden")})
	require.Equal(t, 201, mine.Status)
	require.Equal(t, 201, hidden.Status)
	hiddenSite := int64(hidden.Body["site_id"].(float64))
	guid := uuid.NewString()
	_, err := f.store.DeviceInsert(ctx, db.DeviceInsertParams{Guid: cairn.DeviceGUID(guid), Hostname: "hidden-host", SiteID: cairn.SiteID(hiddenSite)})
	require.NoError(t, err)
	activity, err := f.store.DeviceActivityInsert(ctx, db.DeviceActivityInsertParams{DeviceGuid: (*cairn.DeviceGUID)(&guid), Hostname: "hidden-host",
		SiteID: &hiddenSite, Kind: "script", Summary: "hidden-host work", Actor: "admin", Status: "succeeded", Metadata: []byte(`{}`)})
	require.NoError(t, err)
	runID := uuid.NewString()
	_, err = f.store.JobRunInsert(ctx, db.JobRunInsertParams{ID: cairn.RunID(runID), Kind: "script", Trigger: "manual", Language: "bash",
		RequestedBy: "admin", WorkflowID: "hidden-run-" + runID, TargetCount: 1, Body: "true", Parameters: []byte(`{}`), TimeoutSeconds: 60})
	require.NoError(t, err)
	require.NoError(t, f.store.JobRunResultsInsert(ctx, db.JobRunResultsInsertParams{RunID: cairn.RunID(runID), Guids: []string{guid},
		Hostnames: []string{"hidden-host"}, SiteIds: []int64{hiddenSite}, Statuses: []string{"pending"},
		ErrorCodes: []string{""}, ErrorMessages: []string{""}, Signed: []string{""}}))
	code := f.do(t, "POST", "/api/admin/enrollment-codes", admin, map[string]any{"site_id": hiddenSite})
	require.Equal(t, 201, code.Status, code.Raw)
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	approval, err := f.store.ApprovalInsert(ctx, db.ApprovalInsertParams{ID: uuid.NewString(), SiteID: cairn.SiteID(hiddenSite), Hostname: "hidden-host",
		Fingerprint: "hidden-fp", PublicKey: pub, Jkt: devicetrust.Thumbprint(pub), RemoteAddr: "192.0.2.1",
		Status: proto.ApprovalPending, ExpiresAt: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	// The hidden values are real: an admin reaches each object.
	for _, path := range []string{"/api/devices/" + guid, "/api/device/details/hidden-host",
		"/api/device/activity/job/" + strconv.FormatInt(activity.ID, 10), "/api/scripts/quick_run/" + runID} {
		require.Equal(t, 200, f.do(t, "GET", path, admin, nil).Status, path)
	}
	operator := f.operator(t, "elsewhere")
	r := f.do(t, "POST", "/api/user_site_assignments/assign", admin, map[string]any{"usernames": []string{"elsewhere"}, "site_ids": []any{mine.Body["site_id"]}})
	require.Equal(t, 200, r.Status, r.Raw)

	// Parameters naming site-scoped objects: the hidden object's value
	// and one that names nothing. Other parameters (assemblies, metadata
	// fields, ...) are not site-scoped and get "1" either way.
	type param struct{ hidden, missing string }
	scoped := func(pattern, name string) (param, bool) {
		switch {
		case name == "hostname":
			return param{"hidden-host", "no-such-host"}, true
		case name == "guid":
			return param{guid, uuid.NewString()}, true
		case name == "site_id":
			return param{strconv.FormatInt(hiddenSite, 10), "999999999"}, true
		case name == "code_id":
			return param{strconv.FormatFloat(code.Body["id"].(float64), 'f', -1, 64), "999999999"}, true
		case name == "approval_id":
			return param{approval.ID, uuid.NewString()}, true
		case name == "run_id":
			return param{runID, uuid.NewString()}, true
		case name == "id" && strings.HasPrefix(pattern, "/api/device/activity/"):
			return param{strconv.FormatInt(activity.ID, 10), "999999999"}, true
		}
		return param{"1", "1"}, false
	}
	// Bodies that pass validation, so a write reaches its scope check.
	bodies := map[string]any{
		"/api/device/description/{hostname}":                 map[string]any{"description": "changed from elsewhere"},
		"/api/device/processes/{hostname}/terminate":         map[string]any{"pid": 4242, "name": "x"},
		"/api/device/services/{hostname}/action":             map[string]any{"name": "cron", "action": "start"},
		"/api/devices/{guid}/metadata_fields/{field_number}": map[string]any{"value": "x"},
	}

	// same calls a route with a hidden object and with a missing one.
	same := func(method, route, hiddenPath, missingPath string, body any, keyed bool) {
		t.Helper()
		missing := f.do(t, method, missingPath, operator, body)
		got := f.do(t, method, hiddenPath, operator, body)
		require.Less(t, got.Status, 500, "%s %s: %s", method, hiddenPath, got.Raw)
		for _, secret := range []string{"Hidden Site", "hidden-host", guid, approval.ID, runID} {
			if strings.Contains(hiddenPath, secret) || strings.Contains(fmt.Sprint(body), secret) {
				continue // echoing what the caller sent ("... not found") tells nothing
			}
			require.NotContains(t, got.Raw, secret, "%s %s leaks an object outside scope", method, route)
		}
		if keyed {
			require.Equal(t, missing.Status, got.Status, "%s %s: a hidden object answers unlike a missing one: %s vs %s",
				method, route, got.Raw, missing.Raw)
			require.Equal(t, missing.Body["error"], got.Body["error"], "%s %s", method, route)
		}
	}

	checked, compared := 0, 0
	routes := f.engine.srv.Routes()
	// Reads first: a leaking write must not hide what a read would leak.
	sort.SliceStable(routes, func(i, j int) bool { return routes[i].Method == "GET" && routes[j].Method != "GET" })
	for _, rt := range routes {
		if rt.Auth != api.AuthToken && rt.Auth != api.AuthDeviceOrToken {
			continue
		}
		names := pathParam.FindAllString(rt.Pattern, -1)
		// The event stream never ends (the events tests read it); writes
		// without a path parameter act on the caller's own account or
		// name their objects in bodies (a few are checked below).
		if rt.Pattern == "/api/realtime/events" || (rt.Method != "GET" && len(names) == 0) {
			continue
		}
		hiddenPath, missingPath, keyed := rt.Pattern, rt.Pattern, false
		for _, n := range names {
			p, ok := scoped(rt.Pattern, strings.Trim(n, "{}"))
			keyed = keyed || ok
			hiddenPath = strings.Replace(hiddenPath, n, p.hidden, 1)
			missingPath = strings.Replace(missingPath, n, p.missing, 1)
		}
		body := bodies[rt.Pattern]
		if body == nil && rt.Method != "GET" && rt.Method != "DELETE" {
			body = map[string]any{}
		}
		same(rt.Method, rt.Pattern, hiddenPath, missingPath, body, keyed)
		if rt.Method == "GET" {
			// Lists filtered by site or hostname in the query string.
			same("GET", rt.Pattern+"?site_id=…&hostname=…",
				hiddenPath+"?site_id="+strconv.FormatInt(hiddenSite, 10)+"&hostname=hidden-host",
				missingPath+"?site_id=999999999&hostname=no-such-host", nil, true)
		}
		if keyed {
			compared++
		}
		checked++
	}
	require.Positive(t, checked)
	require.GreaterOrEqual(t, compared, 25, "the keyed routes were compared")

	// Writes that name their object in the body.
	for _, c := range []struct {
		path            string
		hidden, missing map[string]any
	}{
		{"/api/admin/enrollment-codes", map[string]any{"site_id": hiddenSite}, map[string]any{"site_id": 999999999}},
		{"/api/remote-ops/session", map[string]any{"hostname": "hidden-host", "capability": "shell"},
			map[string]any{"hostname": "no-such-host", "capability": "shell"}},
		{"/api/devices/agent-maintenance", map[string]any{"action": "update_now", "guids": []string{guid}},
			map[string]any{"action": "update_now", "guids": []string{uuid.NewString()}}},
	} {
		missing := f.do(t, "POST", c.path, operator, c.missing)
		got := f.do(t, "POST", c.path, operator, c.hidden)
		require.Equal(t, missing.Status, got.Status, "POST %s: %s vs %s", c.path, got.Raw, missing.Raw)
		require.Equal(t, missing.Body["error"], got.Body["error"], "POST %s", c.path)
		require.NotContains(t, got.Raw, "Hidden Site", c.path)
	}

	// Nothing hidden changed through the writes.
	dev, err := f.store.DeviceGetByGUID(ctx, cairn.DeviceGUID(guid))
	require.NoError(t, err)
	require.Equal(t, cairn.SiteID(hiddenSite), dev.SiteID)
	after, err := f.store.ApprovalGet(ctx, approval.ID)
	require.NoError(t, err)
	require.Equal(t, proto.ApprovalPending, after.Status)
}

// Bad input is the caller's fault, never the server's: every route that
// takes a body answers malformed, wrongly shaped or unknown-field bodies
// with a 4xx (validation_failed where the route gets that far), not a 500.
func TestNoRouteFailsOnBadBodies(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	for _, rt := range f.engine.srv.Routes() {
		if rt.Method != "POST" && rt.Method != "PUT" && rt.Method != "PATCH" {
			continue
		}
		path := pathParam.ReplaceAllString(rt.Pattern, "1")
		for _, body := range []string{`{"zz_unknown": 1}`, `{"broken":`, `[1, 2]`, `"text"`} {
			r := f.do(t, rt.Method, path, admin, body)
			require.GreaterOrEqual(t, r.Status, 400, "%s %s accepted %s: %s", rt.Method, rt.Pattern, body, r.Raw)
			require.Less(t, r.Status, 500, "%s %s failed on %s: %s", rt.Method, rt.Pattern, body, r.Raw)
		}
	}
}
