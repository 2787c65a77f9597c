// Package api is the Engine's HTTP surface: a chi router built from one
// route table per area, each route carrying its auth class from the spec.
// Handlers are thin: decode and validate, call the domain, encode.
package api

import (
	"context"
	"io/fs"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/aegis"
	"github.com/cairn-rmm/cairn/internal/agentgateway"
	"github.com/cairn-rmm/cairn/internal/auth"
	"github.com/cairn-rmm/cairn/internal/automation"
	"github.com/cairn-rmm/cairn/internal/devicefilters"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
	"github.com/cairn-rmm/cairn/internal/events"
	"github.com/cairn-rmm/cairn/internal/installlinks"
	"github.com/cairn-rmm/cairn/internal/internalauth"
	"github.com/cairn-rmm/cairn/internal/logs"
	"github.com/cairn-rmm/cairn/internal/metadata"
	"github.com/cairn-rmm/cairn/internal/metrics"
	"github.com/cairn-rmm/cairn/internal/passkeys"
	"github.com/cairn-rmm/cairn/internal/ratelimit"
	"github.com/cairn-rmm/cairn/internal/scheduledjobs"
	"github.com/cairn-rmm/cairn/internal/scriptsign"
	"github.com/cairn-rmm/cairn/internal/sites"
	"github.com/cairn-rmm/cairn/internal/tlsca"
	"github.com/cairn-rmm/cairn/workers"
	"github.com/cairn-rmm/cairn/workflowclient"
)

// AuthClass is a route's authentication class (SPEC "Authentication").
type AuthClass string

// Auth classes used by routes.
const (
	AuthNone       AuthClass = "None"
	AuthBootstrap  AuthClass = "Bootstrap"
	AuthToken      AuthClass = "Token"
	AuthMFAPending AuthClass = "Token (MFA pending)"
	AuthAdmin      AuthClass = "Admin"
	// AuthDevice: an agent's DPoP-bound access token.
	AuthDevice AuthClass = "Device"
	// AuthRefresh: an agent's refresh token in the body with a DPoP proof.
	AuthRefresh AuthClass = "Refresh"
	// AuthDeviceOrToken: either a device or an operator session.
	AuthDeviceOrToken AuthClass = "Device or Token"
	// AuthSignedURL: the URL itself carries a signature the handler checks
	// (install links).
	AuthSignedURL AuthClass = "Signed URL"
	// AuthInternal: a service component's HMAC-signed request
	// (internal/internalauth): /api/internal/* and /v1/command.
	AuthInternal AuthClass = "Internal"
	// AuthWebhook: an outside system's request to a workflow webhook,
	// HMAC-signed under the webhook's secret; the handler checks it
	// (internal/flows.Webhooks.Trigger).
	AuthWebhook AuthClass = "Webhook"
)

// Route is one row of a route table.
type Route struct {
	Method  string
	Pattern string
	Auth    AuthClass
	Handler Endpoint
	// Summary is the operation's summary in the API document: a short
	// imperative line ("List file transfers"). Every route has one
	// (TestOpenAPIEveryRouteHasASummary); a longer note goes on the
	// Endpoint (Endpoint.Summary), which the document gives as the
	// operation's description.
	Summary string
}

// Deps are what the handlers of several capabilities share; what only one
// capability's routes use is in its Area.
type Deps struct {
	Store    *db.Store
	Auth     *auth.Service
	Cipher   *aegis.Cipher
	Sites    *sites.Service
	Passkeys *passkeys.Service
	Bus      *events.Bus
	Presence *events.Presence
	// EventKeepAlive is how often operator event streams send a
	// keep-alive and re-check their session (0: 15 s).
	EventKeepAlive time.Duration

	Temporal client.Client
	// Workers is this process's worker manager (nil when it runs none).
	Workers   *workers.Manager
	Namespace string
	// Console is the built web console (index.html at its root).
	Console fs.FS
	// PublicURL is the address operators and agents use for the Engine.
	PublicURL string
	// TrustedProxies are the peers whose X-Forwarded-For is believed
	// (CAIRN_TRUSTED_PROXIES); see clientIP.
	TrustedProxies []netip.Prefix
	// TLS is the Engine's HTTPS certificate (nil when HTTPS is off).
	TLS *tlsca.Manager
	Log *slog.Logger
	// Started reports whether startup finished (migrations, workers).
	Started func() bool
	Now     func() time.Time
	// DeviceTokens issues and checks device access and refresh tokens.
	DeviceTokens *devicetrust.Tokens
	// DPoP verifies agents' proofs of possession.
	DPoP *devicetrust.Verifier
	// Sockets is this process's agent socket hub (nil without site workers).
	Sockets *agentgateway.Hub
	// AgentURLs are further origins agents reach the Engine under (the
	// HTTPS address), accepted in DPoP proofs besides PublicURL.
	AgentURLs []string
	// PayloadCodec seals Temporal payloads; the codec server routes serve
	// it to the Temporal UI at TemporalUIOrigins (CORS, with credentials).
	PayloadCodec      converter.PayloadCodec
	TemporalUIOrigins []string
	// ProofsPerAddress budgets DPoP proofs without an access token (token
	// refresh, enrollment poll) per client address; zero takes
	// DefaultProofsPerAddress.
	ProofsPerAddress ratelimit.Rule
	// Devices is the device and inventory domain (and the agent callbacks).
	Devices *devices.Service
	// Operations runs remote operations on devices (the command path).
	Operations workflowclient.OperationRunner
	// AgentOnly serves only what agents call on a standalone site worker:
	// health and the realtime socket.
	AgentOnly bool
	// Jobs are the scheduled jobs; Slots the site workers' scheduled lanes.
	Jobs  *scheduledjobs.Service
	Slots *scheduledjobs.Slots
	// Signer signs script payloads and names the keys agents trust.
	Signer *scriptsign.Signer
	// InstallLinks are the sites' signed install links.
	InstallLinks *installlinks.Service
	// Automation is assemblies and job runs; Runs starts job-run workflows.
	Automation *automation.Service
	Runs       workflowclient.JobRunStarter
	// DeviceFilters evaluates device filters and keeps saved filters and
	// device-list views.
	DeviceFilters *devicefilters.Service
	// Metadata is the metadata fields (definitions, values, agent sync).
	Metadata *metadata.Service
	// Metrics counts requests, event streams and Temporal errors (nil:
	// nothing is counted).
	Metrics *metrics.Metrics
	// Internal verifies the Internal class's HMAC-signed requests (nil:
	// Internal routes answer internal_signature_invalid).
	Internal *internalauth.Service
	// Codes are every capability's declared error codes: the status each
	// is answered with (nil: the core codes alone).
	Codes *cairn.CodeBook
}

// Server serves the API and the console.
type Server struct {
	Deps
	routes       []Route
	agentOrigins []*url.URL
	// publicHTTPS: the public URL is https, so browsers reach the Engine
	// over HTTPS even when a TLS-terminating proxy forwards plain HTTP.
	publicHTTPS bool
	// shell is the shell routes' state, whose liveness loop Run runs.
	shell *shellAPI
	// endTransfers is the transfers area's transfersEnded (nil without it).
	endTransfers func(ctx context.Context, ids []cairn.TransferID, purged bool)
	docCache
}

// Run runs what this process's routes keep going in the background (the
// liveness of the shell sessions it bridges) until ctx ends.
func (s *Server) Run(ctx context.Context) {
	if s.shell != nil {
		s.shell.live.KeepAlive(ctx, s.shell.svc, 0)
	}
}

// New builds the server and its route table: the core routes (health,
// setup, sign-in, accounts, sites, events, the agent socket, the API
// document) and each capability's area.
func New(d Deps, areas ...Area) *Server {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Started == nil {
		d.Started = func() bool { return true }
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Codes == nil {
		d.Codes = cairn.CoreBook()
	}
	// The root handler adds each request's log scope to its lines and
	// keeps secrets out (a no-op when engine.New already wrapped it).
	d.Log = slog.New(logs.Redact(d.Log.Handler()))
	s := &Server{Deps: d}
	if u, err := url.Parse(d.PublicURL); err == nil {
		s.publicHTTPS = u.Scheme == "https"
	}
	for _, o := range append([]string{d.PublicURL}, d.AgentURLs...) {
		if u, err := url.Parse(o); err == nil && u.Host != "" {
			s.agentOrigins = append(s.agentOrigins, u)
		}
	}
	if d.AgentOnly {
		s.routes = slices.Concat(s.healthRoutes(), s.agentSocketRoutes())
		return s
	}
	s.routes = slices.Concat(
		s.healthRoutes(), s.bootstrapRoutes(), s.authRoutes(), s.apiTokenRoutes(), s.aegisRoutes(),
		s.siteRoutes(), s.serverRoutes(), s.eventRoutes(), s.userRoutes(), s.tlsRoutes(),
		s.agentSocketRoutes(), s.temporalCodecRoutes(), s.openapiRoutes(),
	)
	for _, a := range areas {
		s.routes = append(s.routes, a.routes(s)...)
	}
	return s
}

// Routes returns the route table (for the route and authorization tests).
func (s *Server) Routes() []Route { return s.routes }

// Handler returns the HTTP handler.
func (s *Server) Handler() http.Handler {
	r := chi.NewRouter()
	r.Use(middleware.RequestID, s.Metrics.Middleware, s.requestLog, s.recoverer, s.securityHeaders, s.plainText)
	for _, rt := range s.routes {
		mw := []func(http.Handler) http.Handler{routeLog(rt.Pattern)}
		if !isAgentRoute(rt) {
			// The audit trail is operators' actions; agent traffic (a
			// heartbeat every 20 s per device) would drown it and cost a
			// write per request. Enrollment decisions are recorded by the
			// operators' approve/deny calls and the device activity.
			mw = append(mw, s.audit)
		}
		mw = append(mw, s.authFor(rt.Auth, rt.Handler.csrfExempt), s.pathParamLimit)
		r.With(mw...).Method(rt.Method, rt.Pattern, rt.Handler)
	}
	r.NotFound(s.notFound)
	r.MethodNotAllowed(func(w http.ResponseWriter, req *http.Request) {
		writeError(w, req, s.Log, cairn.Errorf(cairn.ECodeMethodNotAllowed, "%s is not allowed on %s", req.Method, req.URL.Path))
	})
	return r
}

// isAgentRoute reports routes only agents call.
func isAgentRoute(rt Route) bool {
	return rt.Auth == AuthDevice || rt.Auth == AuthRefresh || strings.HasPrefix(rt.Pattern, "/api/agent/")
}

func (s *Server) authFor(class AuthClass, csrfExempt bool) func(http.Handler) http.Handler {
	switch class {
	case AuthToken:
		return s.requireSession(false, csrfExempt)
	case AuthAdmin:
		return s.requireSession(true, csrfExempt)
	case AuthBootstrap:
		return s.requireBootstrap
	case AuthDevice:
		return s.requireDevice
	case AuthRefresh:
		return s.requireProof
	case AuthDeviceOrToken:
		return s.requireDeviceOrSession
	case AuthInternal:
		return s.requireInternal
	case AuthNone, AuthMFAPending, AuthSignedURL, AuthWebhook:
		// MFA-pending routes carry their signed token in the body, signed
		// URLs their signature in the URL, webhook requests theirs in
		// headers over the body the handler reads.
		return func(next http.Handler) http.Handler { return next }
	}
	panic("api: route with unknown auth class " + string(class))
}

type principalKey struct{}

func principal(ctx context.Context) *auth.Principal {
	p, _ := ctx.Value(principalKey{}).(*auth.Principal)
	return p
}

const (
	cookieSession = "cairn_session"
	cookieCSRF    = "cairn_csrf"
	headerCSRF    = "X-CSRF-Token"
	// hostPrefix binds a cookie to this exact origin: the browser takes it
	// only Secure, with Path=/ and no Domain, so neither a sibling
	// subdomain nor a plain-HTTP page can set or shadow it.
	hostPrefix = "__Host-"
)

// secureOrigin reports whether the browser talks to the Engine over HTTPS:
// the request arrived over TLS, or the public URL is https (a
// TLS-terminating proxy in front forwards plain HTTP).
func (s *Server) secureOrigin(r *http.Request) bool { return s.publicHTTPS || r.TLS != nil }

// cookieName is the session cookie's name for the origin: __Host- prefixed
// on HTTPS. Only that name is read there, so a cookie planted without the
// prefix (over plain HTTP, or by a subdomain) is never a session.
func cookieName(base string, secure bool) string {
	if secure {
		return hostPrefix + base
	}
	return base
}

// requireSession resolves the operator from a bearer token or the session
// cookie. Cookie-authenticated changes must echo the CSRF token.
func (s *Server) requireSession(admin, csrfExempt bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// Sessions are not sealed, so they resolve with the cipher
			// locked: an anonymous request is 401 whatever the cipher's
			// state (SPEC Errors), and only a signed-in operator learns
			// that this replica is locked.
			token, viaCookie := sessionToken(r, s.secureOrigin(r))
			var p *auth.Principal
			var err error
			if !viaCookie && strings.HasPrefix(token, auth.APITokenPrefix) {
				// A personal API token: never a session, so it neither
				// starts nor extends one, and needs no CSRF token (a
				// browser never sends it by itself).
				p, err = s.Auth.AuthenticateAPIToken(r.Context(), token)
			} else {
				p, err = s.Auth.Authenticate(r.Context(), token)
			}
			if err != nil {
				writeError(w, r, s.Log, err)
				return
			}
			if !s.Cipher.Unlocked() {
				writeError(w, r, s.Log, aegis.ErrLocked)
				return
			}
			if viaCookie && !safeMethod(r.Method) && !csrfExempt && !p.CheckCSRF(r.Header.Get(headerCSRF)) {
				writeError(w, r, s.Log, cairn.Errorf(cairn.ECodeCSRF, "the %s header is missing or does not match", headerCSRF))
				return
			}
			if e := auditFrom(r); e != nil {
				e.Username, e.Role, e.APITokenID = p.Username, p.Role, p.APITokenID
			}
			addLogAttrs(r, "user_id", p.UserID)
			if p.APITokenID != 0 {
				addLogAttrs(r, "api_token_id", p.APITokenID)
			}
			if admin && !p.IsAdmin() {
				writeError(w, r, s.Log, cairn.Errorf(cairn.ECodeForbidden, "administrators only"))
				return
			}
			if p.ReadOnly() && !safeMethod(r.Method) {
				writeError(w, r, s.Log, cairn.Errorf(cairn.ECodeForbidden, "this API token is read-only"))
				return
			}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
		})
	}
}

// requireBootstrap lets bootstrap steps through only while bootstrap is
// not finished. Reading the state is always allowed: the console reads it on
// every load.
func (s *Server) requireBootstrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !safeMethod(r.Method) {
			phase, err := s.Auth.Phase(r.Context())
			if err != nil {
				writeError(w, r, s.Log, err)
				return
			}
			if phase == auth.PhaseLogin {
				writeError(w, r, s.Log, cairn.Errorf(cairn.ECodeBootstrapFinished, "setup is already finished"))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func sessionToken(r *http.Request, secure bool) (token string, viaCookie bool) {
	if h := r.Header.Get("Authorization"); h != "" {
		if t, ok := strings.CutPrefix(h, "Bearer "); ok {
			return strings.TrimSpace(t), false
		}
		return "", false
	}
	if c, err := r.Cookie(cookieName(cookieSession, secure)); err == nil {
		return c.Value, true
	}
	return "", false
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

func (s *Server) clientMeta(r *http.Request) auth.ClientMeta {
	return auth.ClientMeta{Addr: clientIP(r, s.TrustedProxies), UserAgent: r.UserAgent(), RequestID: middleware.GetReqID(r.Context())}
}

func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.reqLog(r).Error("handler panic", "panic", v)
				writeError(w, r, s.Log, cairn.Errorf(cairn.ECodeInternal, "something went wrong (request %s)", middleware.GetReqID(r.Context())))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// consolePolicy is the Content-Security-Policy of every answer. Scripts
// come only from the Engine's own files (the Vite build has no inline
// script) and never from eval. Styles also allow 'unsafe-inline': MUI's
// emotion, CodeMirror, AG Grid and xterm.js insert <style> elements at run
// time and not all of them take a nonce; injected CSS cannot run script, and
// React escapes the markup an attacker would need for CSS exfiltration.
// Images allow data: (the MFA QR code, grid icons); connect-src 'self'
// covers the same-origin event stream and shell WebSockets.
const consolePolicy = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; worker-src 'self'; " +
	"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// hstsPolicy keeps browsers on HTTPS for a year once they saw it there
// (no includeSubDomains: other hosts of the domain are not the Engine's).
const hstsPolicy = "max-age=31536000"

func (s *Server) securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Content-Security-Policy", consolePolicy)
		if s.secureOrigin(r) {
			h.Set("Strict-Transport-Security", hstsPolicy)
		}
		if id := middleware.GetReqID(r.Context()); id != "" {
			h.Set("X-Request-Id", id)
		}
		next.ServeHTTP(w, r)
	})
}
