package api

// Device and Refresh authentication (SPEC "Authentication"): every agent
// request names its process context, and every device route carries a
// DPoP-bound access token whose device is checked on each request (token
// version, trust state), so a trust action takes effect at once.

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
	"github.com/cairn-rmm/cairn/internal/ratelimit"
)

// Error codes of the agent context header.
const (
	ECodeAgentContextRequired = "agent_context_required"
	ECodeAgentContextRefused  = "agent_context_refused"
	ECodeProtocolUnsupported  = "protocol_unsupported"
)

type deviceKey struct{}
type proofKeyCtx struct{}

// deviceFrom returns the device a Device route authenticated.
func deviceFrom(ctx context.Context) *devicetrust.Identity {
	d, _ := ctx.Value(deviceKey{}).(*devicetrust.Identity)
	return d
}

// proofJKT returns the key thumbprint of a proof-only request's DPoP proof.
func proofJKT(ctx context.Context) string {
	j, _ := ctx.Value(proofKeyCtx{}).(string)
	return j
}

// checkAgentContext enforces X-Service-Agent-Context: present, the
// privileged process (SPEC "Agent-side behavior" item 1), and a protocol
// version this Engine speaks.
func checkAgentContext(r *http.Request) error {
	raw := strings.TrimSpace(r.Header.Get(proto.HeaderAgentContext))
	if raw == "" {
		return cairn.Errorf(ECodeAgentContextRequired, "the %s header is required on agent requests", proto.HeaderAgentContext)
	}
	parts := strings.Split(raw, ";")
	if strings.TrimSpace(parts[0]) != proto.ContextPrivileged {
		return cairn.Errorf(ECodeAgentContextRefused, "only the privileged agent process may call the Engine")
	}
	for _, p := range parts[1:] {
		k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
		if k == "v" {
			if n, err := strconv.Atoi(v); err != nil || !proto.Supported(n) {
				return cairn.Errorf(ECodeProtocolUnsupported, "agent protocol %q is not supported (this Engine speaks %d to %d)", v, proto.MinVersion, proto.Version)
			}
		}
	}
	return nil
}

// requireDevice authenticates a Device route.
func (s *Server) requireDevice(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := s.authenticateDevice(r)
		if err != nil {
			writeError(w, r, s.Log, err)
			return
		}
		if e := auditFrom(r); e != nil {
			e.Username = "device:" + id.Hostname
		}
		addLogAttrs(r, "guid", id.GUID)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), deviceKey{}, id)))
	})
}

func (s *Server) authenticateDevice(r *http.Request) (*devicetrust.Identity, error) {
	if err := checkAgentContext(r); err != nil {
		return nil, err
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), proto.AuthScheme+" ")
	if !ok || strings.TrimSpace(token) == "" {
		return nil, cairn.Errorf(cairn.ECodeUnauthorized, "a DPoP-bound access token is required (Authorization: DPoP <token>)")
	}
	claims, err := s.DeviceTokens.ParseAccess(r.Context(), token)
	if err != nil {
		return nil, err
	}
	ctx := r.Context()
	proof, err := dpopHeader(r)
	if err != nil {
		return nil, err
	}
	jkt, err := s.DPoP.VerifyAny(ctx, proof, r.Method, devicetrust.RequestURLs(s.agentOrigins, r), token, claims.CNF.JKT)
	if err != nil {
		return nil, err
	}
	d, err := s.Store.DeviceGetByGUID(ctx, cairn.DeviceGUID(claims.Subject))
	if err != nil {
		return nil, s.missingDevice(ctx, cairn.DeviceGUID(claims.Subject), err)
	}
	switch {
	case d.Jkt != jkt:
		return nil, cairn.Errorf(cairn.ECodeInvalidDPoPProof, "DPoP proof key does not belong to this device")
	case d.TrustState == devicetrust.TrustRevoked:
		return nil, cairn.Errorf(devicetrust.ECodeDeviceRevoked, "the device was revoked")
	case d.TokenVersion != claims.TokenVersion:
		return nil, cairn.Errorf(devicetrust.ECodeTokenVersion, "the access token predates a trust change; refresh it")
	case d.TrustState == devicetrust.TrustQuarantined:
		return nil, cairn.Errorf(devicetrust.ECodeDeviceQuarantined, "the device is quarantined")
	}
	return &devicetrust.Identity{
		GUID: d.Guid, AgentID: d.AgentID, Hostname: d.Hostname, SiteID: d.SiteID, SiteSlug: d.SiteSlug,
		TokenVersion: d.TokenVersion, JKT: d.Jkt, AgentVersion: d.AgentVersion, ExpiresAt: claims.ExpiresAt.Time,
	}, nil
}

// missingDevice explains a token whose device has no row: purged (final)
// or unknown (a restored Engine; recoverable).
func (s *Server) missingDevice(ctx context.Context, guid cairn.DeviceGUID, err error) error {
	if !db.IsNoRows(err) {
		return err
	}
	if _, perr := s.Store.DevicePurgeGet(ctx, guid); perr == nil {
		return cairn.Errorf(devicetrust.ECodeDevicePurged, "the device was purged; it must enroll again")
	} else if !db.IsNoRows(perr) {
		return perr
	}
	return cairn.Errorf(devicetrust.ECodeDeviceNotFound, "the device is not enrolled here")
}

// requireProof authenticates proof-only agent requests (token refresh):
// the agent context header and a DPoP proof without access token, whose
// key the handler then matches against the device or request.
func (s *Server) requireProof(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := checkAgentContext(r); err != nil {
			writeError(w, r, s.Log, err)
			return
		}
		if r.Header.Get(proto.HeaderDPoP) == "" {
			writeError(w, r, s.Log, cairn.Errorf(cairn.ECodeUnauthorized, "a DPoP proof is required"))
			return
		}
		jkt, err := s.unboundProof(r)
		if err != nil {
			writeError(w, r, s.Log, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), proofKeyCtx{}, jkt)))
	})
}

// DefaultProofsPerAddress is how many proofs without an access token (token
// refresh, enrollment poll) one address may present per minute. Such a
// proof is recorded in the shared replay cache before anything authorizes
// the request, so without a budget anyone could fill the cache with proofs
// of throwaway keys. An agent refreshes every quarter hour and polls its
// enrollment every few seconds: the budget leaves room for hundreds of
// agents behind one NAT address. CAIRN_PROOF_RATE_LIMIT sets it.
var DefaultProofsPerAddress = ratelimit.Rule{Limit: 600, Window: time.Minute}

// unboundProof verifies the DPoP proof of a request that carries no access
// token, within the address's budget, and returns its key's thumbprint.
// The one place these proofs are counted.
func (s *Server) unboundProof(r *http.Request) (string, error) {
	proof, err := dpopHeader(r)
	if err != nil {
		return "", err
	}
	rule := s.ProofsPerAddress
	if rule.Limit <= 0 {
		rule = DefaultProofsPerAddress
	}
	if err := ratelimit.New(s.Store.Queries).Hit(r.Context(), "dpop-unbound:"+s.clientMeta(r).Addr, rule); err != nil {
		return "", err
	}
	return s.DPoP.VerifyAny(r.Context(), proof, r.Method, devicetrust.RequestURLs(s.agentOrigins, r), "", "")
}

// dpopHeader returns the request's DPoP proof. RFC 9449 section 4.3: a
// request with more than one DPoP header is refused (a proxy or client
// that adds one must not decide which the Engine checks).
func dpopHeader(r *http.Request) (string, error) {
	v := r.Header.Values(proto.HeaderDPoP)
	switch {
	case len(v) > 1:
		return "", cairn.Errorf(cairn.ECodeInvalidDPoPProof, "DPoP proof: the request carries %d DPoP headers; send exactly one", len(v))
	case len(v) == 1 && strings.Contains(v[0], ","):
		return "", cairn.Errorf(cairn.ECodeInvalidDPoPProof, "DPoP proof: the DPoP header carries more than one value; send exactly one")
	case len(v) == 1:
		return v[0], nil
	}
	return "", nil
}

// requireDeviceOrSession accepts either a device (Authorization: DPoP) or
// an operator session.
func (s *Server) requireDeviceOrSession(next http.Handler) http.Handler {
	session := s.requireSession(false, false)(next)
	device := s.requireDevice(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.Header.Get("Authorization"), proto.AuthScheme+" ") {
			device.ServeHTTP(w, r)
			return
		}
		session.ServeHTTP(w, r)
	})
}
