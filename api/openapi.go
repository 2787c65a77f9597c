package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
	"github.com/cairn-rmm/cairn/internal/internalauth"
)

// The API document is generated from the route table: each route's
// Endpoint carries its request and response types (jsonAction and
// getAction take them from their type parameters), query parameters and
// error codes; its auth class is a security scheme. `make generate` writes
// it to docs/openapi.json; the Engine serves it at /api/openapi.json; the
// API tests validate every request and answer against it.

// APIVersion is the document's info.version; it changes when the API does
// in a way clients must know of.
const APIVersion = "1"

var pathParamRe = regexp.MustCompile(`\{([^}:]+)(:[^}]*)?\}`)

// Security scheme names (components.securitySchemes).
const (
	secBearer    = "sessionBearer"
	secCookie    = "sessionCookie"
	secDevice    = "deviceDPoP"
	secProof     = "dpopProof"
	secSignedURL = "signedURL"
	secInternal  = "internalHMAC"
	secWebhook   = "webhookHMAC"
)

func securityFor(class AuthClass) *openapi3.SecurityRequirements {
	req := func(names ...string) openapi3.SecurityRequirement {
		r := openapi3.SecurityRequirement{}
		for _, n := range names {
			r[n] = []string{}
		}
		return r
	}
	session := []openapi3.SecurityRequirement{req(secBearer), req(secCookie)}
	var out openapi3.SecurityRequirements
	switch class {
	case AuthToken, AuthAdmin:
		out = session
	case AuthDevice:
		out = openapi3.SecurityRequirements{req(secDevice, secProof)}
	case AuthRefresh:
		out = openapi3.SecurityRequirements{req(secProof)}
	case AuthDeviceOrToken:
		out = append(openapi3.SecurityRequirements{req(secDevice, secProof)}, session...)
	case AuthSignedURL:
		out = openapi3.SecurityRequirements{req(secSignedURL)}
	case AuthInternal:
		out = openapi3.SecurityRequirements{req(secInternal)}
	case AuthWebhook:
		out = openapi3.SecurityRequirements{req(secWebhook)}
	default:
		// None, Bootstrap and MFA pending: nothing in the request's
		// headers (the pending token is in the body).
		out = openapi3.SecurityRequirements{}
	}
	return &out
}

func securitySchemes() openapi3.SecuritySchemes {
	return openapi3.SecuritySchemes{
		secBearer: {Value: &openapi3.SecurityScheme{Type: "http", Scheme: "bearer",
			Description: "An operator's session token (from sign-in) or personal API token (`cairn_pat_...`, from `POST /api/auth/tokens`) as `Authorization: Bearer <token>`. A read-only API token is refused (403) on anything but GET and HEAD."}},
		secCookie: {Value: &openapi3.SecurityScheme{Type: "apiKey", In: "cookie", Name: cookieSession,
			Description: "The console's session cookie (`__Host-cairn_session` on HTTPS). Requests other than GET/HEAD/OPTIONS must echo the `cairn_csrf` cookie in `X-CSRF-Token`."}},
		secDevice: {Value: &openapi3.SecurityScheme{Type: "http", Scheme: "DPoP",
			Description: "An agent's DPoP-bound access token (RFC 9449) as `Authorization: DPoP <token>`, with a proof in the `DPoP` header."}},
		secProof: {Value: &openapi3.SecurityScheme{Type: "apiKey", In: "header", Name: "DPoP",
			Description: "A DPoP proof (RFC 9449) signed by the device key."}},
		secSignedURL: {Value: &openapi3.SecurityScheme{Type: "apiKey", In: "query", Name: "signature",
			Description: "The install link's path and query carry its own signature; nothing else authenticates the download."}},
		secInternal: {Value: &openapi3.SecurityScheme{Type: "apiKey", In: "header", Name: internalauth.HeaderSignature,
			Description: "A service component's HMAC-SHA256 (base64) over `CAIRN-HMAC-SHA256`, the method, the path with its query, the body's SHA-256 (hex), `X-Cairn-Timestamp` (Unix seconds, within 5 minutes), `X-Cairn-Nonce` and `X-Cairn-Key-Id`, one per line, under an active internal key. Each signature is accepted once (docs/api.md \"Internal requests\")."}},
		secWebhook: {Value: &openapi3.SecurityScheme{Type: "apiKey", In: "header", Name: internalauth.HeaderSignature,
			Description: "A workflow webhook's request, signed as an Internal request is (same headers and canonical string) with the webhook's ID as `X-Cairn-Key-Id` and its secret as the key (docs/api.md \"Workflow webhooks\")."}},
	}
}

// errorsByClass are the errors any route of an auth class may answer
// besides those it declares: what its authentication middleware refuses
// with (api/server.go, api/device_auth.go), and service_unavailable where
// that middleware reads the database.
func errorsByClass(class AuthClass) []string {
	// A session or API token unknown, expired, of a disabled directory
	// account or one that must be recovered; a read-only API token on a
	// change; a cookie without its CSRF header; the cipher locked.
	session := []string{cairn.ECodeUnauthorized, cairn.ECodeForbidden, cairn.ECodeRecoveryRequired,
		cairn.ECodeCSRF, cairn.ECodeAegisLocked, db.ECodeServiceUnavailable}
	agentContext := []string{ECodeAgentContextRequired, ECodeAgentContextRefused, ECodeProtocolUnsupported,
		cairn.ECodeUnauthorized, cairn.ECodeInvalidDPoPProof, db.ECodeServiceUnavailable}
	// The access token and the device it names (authenticateDevice).
	device := append(slices.Clone(agentContext), devicetrust.ECodeInvalidAccessToken, devicetrust.ECodeTokenExpired,
		devicetrust.ECodeTokenVersion, devicetrust.ECodeDeviceRevoked, devicetrust.ECodeDeviceQuarantined,
		devicetrust.ECodeDevicePurged, devicetrust.ECodeDeviceNotFound)
	switch class {
	case AuthToken, AuthAdmin:
		return session
	case AuthDeviceOrToken:
		return append(session, device...)
	case AuthDevice:
		return device
	case AuthRefresh:
		// requireProof: a proof without an access token, budgeted per
		// address (unboundProof).
		return append(agentContext, cairn.ECodeRateLimited)
	case AuthBootstrap:
		return []string{cairn.ECodeBootstrapFinished, db.ECodeServiceUnavailable}
	case AuthInternal:
		// requireInternal: the signature, its window and replay, the key
		// opened through the cipher, the body read within its limit.
		return []string{internalauth.ECodeSignatureInvalid, internalauth.ECodeSignatureStale, internalauth.ECodeSignatureReplayed,
			cairn.ECodeAegisLocked, cairn.ECodeTooLarge, cairn.ECodeValidation, db.ECodeServiceUnavailable}
	}
	return nil
}

type errorSchemaBody struct {
	// Error is the stable code (docs/api.md "Errors").
	Error   string `json:"error"`
	Message string `json:"message"`
	// Fields names each invalid field (path parameter, query parameter
	// or body field) with its problem; validation_failed always has it.
	Fields map[string]string `json:"fields,omitempty"`
	// Dependants lists the saved work (scheduled jobs, workflows) that
	// keeps a shared object from being changed (dependants_exist).
	Dependants []cairn.Dependant `json:"dependants,omitempty"`
	// RetryAfterSeconds repeats Retry-After (rate_limited,
	// vnc_auth_retry_in_progress, vnc_auth_retry_settling).
	RetryAfterSeconds int `json:"retry_after_seconds,omitempty"`
	// ProbeStage, Attempt and ElapsedMS say where an RFB banner probe
	// failed (vnc_backend_no_rfb_banner).
	ProbeStage string `json:"probe_stage,omitempty"`
	Attempt    int    `json:"attempt,omitempty"`
	ElapsedMS  int64  `json:"elapsed_ms,omitempty"`
}

// document builds the API document of routes.
func document(routes []Route, book *cairn.CodeBook) (*openapi3.T, error) {
	g := newSchemaGen()
	g.components["Error"] = openapi3.NewSchemaRef("", g.structSchema(typeOf[errorSchemaBody](), false))
	errRef := func(desc string) *openapi3.ResponseRef {
		return &openapi3.ResponseRef{Value: openapi3.NewResponse().WithDescription(desc).
			WithJSONSchemaRef(openapi3.NewSchemaRef("#/components/schemas/Error", nil))}
	}
	doc := &openapi3.T{
		OpenAPI: "3.1.0",
		Info: &openapi3.Info{Title: "Cairn Engine API", Version: APIVersion,
			Description: "Generated from the Engine's route table (api/openapi.go); docs/api.md explains the concepts, flows and error model."},
		// The Engine serves the API from the root of its own address
		// (CAIRN_PUBLIC_URL), which differs per installation: a relative
		// server, resolved against where the document was fetched.
		// x-internal false: operators, integrations and agents use it.
		Servers: openapi3.Servers{{URL: "/", Extensions: map[string]any{"x-internal": false},
			Description: "The Engine that serves this document, at its public address (CAIRN_PUBLIC_URL), whichever environment (production, staging, local) it runs in."}},
		Paths: openapi3.NewPaths(),
		Components: &openapi3.Components{Schemas: g.components, SecuritySchemes: securitySchemes(),
			Responses: openapi3.ResponseBodies{}},
	}
	used := map[string]bool{}
	for _, rt := range routes {
		op, err := operation(g, rt, errRef, book)
		if err != nil {
			return nil, err
		}
		path := pathParamRe.ReplaceAllString(rt.Pattern, "{$1}")
		item := doc.Paths.Value(path)
		if item == nil {
			item = &openapi3.PathItem{}
			doc.Paths.Set(path, item)
		}
		item.SetOperation(rt.Method, op)
		used[op.Tags[0]] = true
	}
	for _, a := range apiAreas {
		if used[a.tag] {
			doc.Tags = append(doc.Tags, &openapi3.Tag{Name: a.tag, Description: a.description})
			used[a.tag] = false
		}
	}
	return doc, nil
}

func operation(g *schemaGen, rt Route, errRef func(string) *openapi3.ResponseRef, book *cairn.CodeBook) (op *openapi3.Operation, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%s %s: %v", rt.Method, rt.Pattern, v)
		}
	}()
	d := rt.Handler.doc
	if rt.Summary == "" {
		panic("the route has no Summary")
	}
	tag := tagOf(rt.Pattern)
	if tag == "" {
		panic("no area of apiAreas holds the route (add its prefix)")
	}
	op = &openapi3.Operation{
		OperationID: operationID(rt),
		Summary:     rt.Summary,
		Description: d.summary,
		Tags:        []string{tag},
		Security:    securityFor(rt.Auth),
		Responses:   openapi3.NewResponses(),
		Extensions:  map[string]any{"x-cairn-auth": string(rt.Auth)},
	}
	if rt.Auth == AuthAdmin {
		op.Description = strings.TrimSpace("Administrators only. " + op.Description)
	}
	for _, m := range pathParamRe.FindAllStringSubmatch(rt.Pattern, -1) {
		// pathParamLimit enforces the bound.
		op.AddParameter(openapi3.NewPathParameter(m[1]).WithSchema(openapi3.NewStringSchema().WithMaxLength(maxPathParam)))
	}
	for _, q := range d.query {
		p := openapi3.NewQueryParameter(q.Name).WithDescription(q.Description).WithRequired(q.Required)
		ps := &openapi3.Schema{Type: types(q.Type)}
		if q.Type == "integer" {
			// Handlers parse integer parameters into an int64 (queryInt,
			// strconv.ParseInt): no other value is accepted.
			lo, hi := intBounds(reflect.Int64)
			ps.Format, ps.Min, ps.Max = intFormat(reflect.Int64), &lo, &hi
		}
		p.Schema = openapi3.NewSchemaRef("", ps)
		op.AddParameter(p)
	}
	if d.request != nil {
		body := openapi3.NewRequestBody().WithRequired(!d.requestOptional).
			WithJSONSchemaRef(g.schema(d.request, true))
		op.RequestBody = &openapi3.RequestBodyRef{Value: body}
	}
	op.Responses.Delete("default")
	success := append([]altResponse{{status: d.status, response: d.response, contentType: d.contentType}}, d.also...)
	for _, a := range success {
		resp := openapi3.NewResponse().WithDescription(http.StatusText(a.status))
		switch {
		case a.response != nil:
			resp.WithJSONSchemaRef(g.schema(a.response, false))
		case a.contentType != "":
			resp.WithContent(openapi3.NewContentWithSchema(&openapi3.Schema{}, []string{a.contentType}))
		}
		op.AddResponse(a.status, resp)
	}
	codes := routeErrors(rt)
	op.Extensions["x-cairn-errors"] = codes
	byStatus := map[int][]string{}
	for _, c := range codes {
		// An undeclared code is answered 400, as writeError does; the API
		// tests fail on one (TestOpenAPIDeclaresErrorCodes).
		st := book.Status(c)
		if st == http.StatusInternalServerError {
			// A fault, not an answer a client acts on: under default.
			continue
		}
		byStatus[st] = append(byStatus[st], c)
	}
	statuses := make([]int, 0, len(byStatus))
	for st := range byStatus {
		statuses = append(statuses, st)
	}
	sort.Ints(statuses)
	for _, st := range statuses {
		if op.Responses.Value(strconv.Itoa(st)) != nil {
			panic(fmt.Sprintf("status %d is both a success and an error answer", st))
		}
		op.Responses.Set(strconv.Itoa(st), errRef(http.StatusText(st)+": "+strings.Join(byStatus[st], ", ")))
	}
	op.Responses.Set("default", errRef("A fault (internal, 500): the message names the request ID the server log has the details under."))
	return op, nil
}

// routeErrors is every error code rt may answer, sorted: those of its auth
// class, those it declares, and those the shared middleware and decoder
// answer on any route. The API tests fail on an answer whose code is not
// in it (api/openapi_validate_test.go).
func routeErrors(rt Route) []string {
	d := rt.Handler.doc
	// internal: any fault. validation_failed: the shared middleware
	// refuses a path or query that is not UTF-8 (plainText) before any
	// handler runs, so every route may answer it.
	codes := []string{cairn.ECodeInternal, cairn.ECodeValidation}
	codes = append(codes, errorsByClass(rt.Auth)...)
	codes = append(codes, d.errors...)
	if d.request != nil {
		// The strict JSON decoder (jsonbody.Decode).
		codes = append(codes, cairn.ECodeTooLarge, cairn.ECodeUnsupportedMedia)
	}
	sort.Strings(codes)
	return slices.Compact(codes)
}

// operationID is the method and the path's words: POST
// /api/sites/{site_id}/auto-approval -> postSitesSiteIdAutoApproval.
func operationID(rt Route) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(rt.Method))
	path := strings.TrimPrefix(rt.Pattern, "/api")
	path = pathParamRe.ReplaceAllString(path, "$1")
	for _, w := range strings.FieldsFunc(path, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) {
		b.WriteString(exportName(w))
	}
	return b.String()
}

// tagOf is the tag of the area whose longest prefix holds pattern ("":
// none does; document fails on it).
func tagOf(pattern string) string {
	tag, best := "", -1
	for _, a := range apiAreas {
		for _, p := range a.prefixes {
			rest, ok := strings.CutPrefix(pattern, p)
			if ok && (rest == "" || rest[0] == '/' || strings.HasSuffix(p, "/")) && len(p) > best {
				tag, best = a.tag, len(p)
			}
		}
	}
	return tag
}

// apiArea is one tag of the document: the area of the API (most often one
// route table, api/routes_<area>.go) whose paths start with its prefixes.
// The document lists the tags in this order.
type apiArea struct {
	tag         string
	description string
	prefixes    []string
}

var apiAreas = []apiArea{
	{"Probes", "Liveness, readiness and startup probes for load balancers and orchestrators.",
		[]string{"/health", "/healthz", "/live", "/ready", "/startup", "/engine-status", "/api/system"}},
	{"Bootstrap", "First start: set up or unlock the Aegis cipher and create or recover the first administrator.",
		[]string{"/api/bootstrap"}},
	{"Authentication", "Operator sign-in, MFA, sign-out, re-authentication and the signed-in account.",
		[]string{"/api/auth"}},
	{"Passkeys", "WebAuthn passkeys: registration, sign-in and re-authentication.",
		[]string{"/api/auth/passkeys", "/api/auth/reauth/passkey"}},
	{"API tokens", "Personal API tokens for scripts and integrations.", []string{"/api/auth/tokens"}},
	{"Aegis", "The Aegis cipher that seals stored secrets: status, unlock, passphrase rotation.", []string{"/api/aegis"}},
	{"Users", "Operator accounts, roles, MFA and site assignments.", []string{"/api/users", "/api/user_site_assignments"}},
	{"Directory", "Directory (LDAP) providers, user lookup and sync, and the directory cache.",
		[]string{"/api/directory", "/api/users/{username}/directory-cache"}},
	{"Sites", "Sites, the devices they hold and their enrollment auto-approval.", []string{"/api/sites"}},
	{"Server", "The Engine itself: its workers and the audit log.", []string{"/api/server"}},
	{"Cluster", "The Engine's processes (replicas and site workers), their admission with a join code, releases, and the operator bridge.",
		[]string{"/api/server/cluster", "/api/bootstrap/cluster", "/v1/command", "/api/internal/job-scheduler"}},
	{"Backup", "Encrypted export, analysis and restore of the Engine's configuration and trust (SPEC backup rules).",
		[]string{"/api/server/backup", "/api/bootstrap/backup"}},
	{"Events", "The operator's realtime event stream and notifications.", []string{"/api/realtime", "/api/notifications"}},
	{"Credentials", "Stored remote-session credentials.", []string{"/api/credentials"}},
	{"Source hosting", "The GitHub token and branch heads scripts are fetched from.", []string{"/api/github", "/api/repo"}},
	{"TLS", "The Engine's certificate authority.", []string{"/api/tls"}},
	{"Enrollment", "Enrollment codes and device approvals (operators) and enrollment and token refresh (agents).",
		[]string{"/api/admin/enrollment-codes", "/api/admin/device-approvals", "/api/agent/enroll", "/api/agent/token"}},
	{"Agent socket", "The agent's realtime socket and where to open it.", []string{"/api/agent/realtime"}},
	{"Agent callbacks", "What agents report: heartbeats, status and device details.",
		[]string{"/api/agent/heartbeat", "/api/agent/status", "/api/agent/details"}},
	{"Device trust", "Quarantine, revoke and purge devices.", []string{"/api/devices/{guid}/quarantine",
		"/api/devices/{guid}/unquarantine", "/api/devices/{guid}/revoke", "/api/devices/{guid}/purge"}},
	{"Devices", "Devices, their details and descriptions, and the agents online.",
		[]string{"/api/agents", "/api/devices", "/api/device/details", "/api/device/description"}},
	{"Device activity", "A device's activity log.", []string{"/api/device/activity"}},
	{"Device operations", "Processes, services, software and patch inventories on a device.",
		[]string{"/api/device/processes", "/api/device/services", "/api/device/patches", "/api/device/software/{hostname}/refresh"}},
	{"Operations", "The status of an operation that outlived its request (answered 202 with its URL).", []string{"/api/operations"}},
	{"Agent roles", "Stop and start an agent role on a device (its desired state).", []string{"/api/device/roles"}},
	{"Files", "A device's file system: browse, read, write, rename, move, copy and delete.", []string{"/api/device/files"}},
	{"File transfers", "Uploads to and downloads from a device, and the agent's side of them.",
		[]string{"/api/device/files/{hostname}/upload", "/api/device/files/{hostname}/download",
			"/api/device/files/{hostname}/transfer", "/api/agent/files/transfers"}},
	{"Registry", "A Windows device's registry editor.", []string{"/api/device/registry"}},
	{"Shell", "Remote shells and remote operations sessions.", []string{"/api/shell", "/api/remote-ops", "/api/agent/shell"}},
	{"Tunnel", "The managed WireGuard tunnel between the Engine and each device.",
		[]string{"/api/tunnel", "/api/agent/vpn", "/api/server/wireguard"}},
	{"Remote desktop", "Remote desktop (VNC and RDP) sessions through the managed tunnel, and the agent's VNC and RDP roles.",
		[]string{"/api/vnc", "/api/agent/vnc", "/api/internal/vnc", "/api/agent/rdp"}},
	{"Agent artifacts", "Agent builds, their hashes, update manifests and install links.",
		[]string{"/api/agent/update", "/api/agent/hash", "/api/agent/hash_list", "/api/agent/install", "/api/sites/{site_id}/agent-install-links"}},
	{"Agent updates", "Agent updates and maintenance on devices.", []string{"/api/devices/agent-maintenance",
		"/api/device/update-agent", "/api/devices/{guid}/agent-updates", "/api/agent/update/progress"}},
	{"Assemblies", "Scripts (assemblies) and their versions.", []string{"/api/assemblies"}},
	{"Quick run", "Running a script now, and the agent's side of script runs.", []string{"/api/scripts/quick_run", "/api/agent/script"}},
	{"Script signing", "The key scripts are signed with.", []string{"/api/server/script-signing"}},
	{"Scheduled jobs", "Scheduled jobs, their runs and the site workers' settings.",
		[]string{"/api/scheduled_jobs", "/api/devices/{guid}/job_runs", "/api/server/site-worker-settings"}},
	{"Workflows", "Workflows (flows of steps) and their runs.", []string{"/api/workflows"}},
	{"Onboarding", "Agent redeploys with a new enrollment code, followed until the device enrolls again.", []string{"/api/onboarding"}},
	{"Patches", "Patch inventory per device, the fleet patch audit, and the agent's install progress.",
		[]string{"/api/patches", "/api/agent/patches"}},
	{"Software", "Software inventory audit, rules and overrides.",
		[]string{"/api/software", "/api/device/software", "/api/agent/software-management"}},
	{"Device filters", "Saved device filters and their previews.", []string{"/api/device_filters"}},
	{"Device views", "Saved device list views.", []string{"/api/device_list_views"}},
	{"Metadata", "Device metadata fields and values.",
		[]string{"/api/metadata_fields", "/api/devices/{guid}/metadata_fields", "/api/agent/metadata"}},
	{"Watchdogs", "Watchdog policies, the alert queue of their incidents and device overrides.",
		[]string{"/api/watchdogs", "/api/devices/{guid}/watchdogs"}},
	{"Temporal codec", "The payload codec server the Temporal UI decodes workflow data with.", []string{"/api/temporal/codec"}},
	{"API document", "This document and its reference page.", []string{"/api/openapi.json", "/api/docs"}},
}

// DocumentJSON is the API document of the core routes and areas, whose
// error codes book declares; engine.DocumentJSON passes every capability's,
// as committed in docs/openapi.json.
func DocumentJSON(book *cairn.CodeBook, areas ...Area) ([]byte, error) {
	s := New(Deps{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Codes: book}, areas...)
	return s.documentJSON()
}

func (s *Server) documentJSON() ([]byte, error) {
	s.docOnce.Do(func() {
		doc, err := document(s.routes, s.Codes)
		if err != nil {
			s.docErr = err
			return
		}
		s.docJSON, s.docErr = json.MarshalIndent(doc, "", "  ")
		s.docJSON = append(s.docJSON, '\n')
	})
	return s.docJSON, s.docErr
}

func (s *Server) openapiRoutes() []Route {
	return []Route{
		{"GET", "/api/openapi.json", AuthNone, raw(func(w http.ResponseWriter, r *http.Request) {
			b, err := s.documentJSON()
			if err != nil {
				writeError(w, r, s.Log, err)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(b)
		}).Stream(http.StatusOK, "application/json").Summary("This document"), "Get this API document"},
		{"GET", "/api/docs", AuthNone, raw(s.apiDocs).Stream(http.StatusOK, "text/html").
			Summary("The API reference page (this document, rendered)").Errors(cairn.ECodeNotFound), "Get the API reference page"},
	}
}

// apiDocs serves the API reference page, a page of the console build
// (web/api-docs.html) that renders /api/openapi.json with scripts from the
// Engine's own files, within the console's CSP.
func (s *Server) apiDocs(w http.ResponseWriter, r *http.Request) {
	var page []byte
	err := fs.ErrNotExist
	if s.Console != nil {
		page, err = fs.ReadFile(s.Console, "api-docs.html")
	}
	if errors.Is(err, fs.ErrNotExist) {
		writeError(w, r, s.Log, cairn.Errorf(cairn.ECodeNotFound, "the API reference was not built into this binary; /api/openapi.json has the document"))
		return
	} else if err != nil {
		writeError(w, r, s.Log, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(page)
}

// docCache holds the generated document (built on first use).
type docCache struct {
	docOnce sync.Once
	docJSON []byte
	docErr  error
}
