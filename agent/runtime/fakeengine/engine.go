// Package fakeengine is an in-process stand-in for the Engine's agent
// routes (enrollment, token refresh, status, heartbeat, details, realtime
// route and socket), built on agent/proto, for the agent runtime's and
// command's tests. It checks what the Engine checks that the agent could
// get wrong (signatures, DPoP proofs, token binding and rotation) and
// records everything the agent sent. The end-to-end test against the real
// Engine lives with the Engine.
package fakeengine

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-rmm/cairn/agent"
	"github.com/cairn-rmm/cairn/agent/proto"
)

// Engine is the fake. Its knobs are safe to change while agents run.
type Engine struct {
	URL string
	srv *httptest.Server

	mu        sync.Mutex
	code      string
	jtis      map[string]bool
	nonces    map[string]bool
	approvals map[string]*approval
	devices   map[string]*Device // by GUID
	byAccess  map[string]*Device
	byRefresh map[string]*Device
	seq       int

	// knobs
	decision     string // status a pending approval turns into
	decideAfter  int    // polls before the decision shows
	autoApprove  bool
	rateLimit    int // enroll requests answered 429 first
	retryAfter   int
	accessTTL    time.Duration
	refreshErr   *answer
	deviceErr    *answer
	refreshDelay time.Duration
	statusDelay  time.Duration
	hbInterval   int
	hbDetails    bool
	scriptTrust  *proto.ScriptTrust
	// grantKey signs the grants of the requests tests send (Conn.Send),
	// as the Engine's script key does; agents trust it by default.
	grantKey    ed25519.PrivateKey
	ackMetadata bool
	// metadata are the Engine's values (SetMetadataValue) and the revision
	// of the last edit; metadataFail fails reads of these fields.
	metadata     map[int]proto.MetadataFieldValue
	metadataRev  int64
	metadataEdit map[int]int64 // field -> revision of its last edit
	metadataFail map[int]bool
	socketModes  []SocketMode
	socketErrs   []answer

	// records
	events          []string
	enrollRequests  []EnrollRecord
	polls           []string // thumbprint of each poll's proof key
	statuses        []proto.Status
	heartbeats      []HeartbeatRecord
	details         []proto.Details
	refreshes       int
	refreshInFlight int
	refreshMax      int
	conns           chan *Conn
	shellTokens     map[string]string // by session ID
	shellConns      chan *ShellConn
}

type answer struct {
	status int
	code   string
}

type approval struct {
	id, jkt, hostname, fingerprint string
	polls                          int
	status                         string
}

// Device is an enrolled device as the fake knows it.
type Device struct {
	GUID, AgentID, JKT, Hostname, Fingerprint string
	Access, Refresh                           string
	AccessExp                                 time.Time
	Purged, Quarantined                       bool
}

// EnrollRecord is one enrollment request and whether its signature
// verified with its public key over proto.EnrollSigningMessage.
type EnrollRecord struct {
	Request     proto.EnrollRequest
	SignatureOK bool
}

// HeartbeatRecord is one heartbeat and when it arrived.
type HeartbeatRecord struct {
	At   time.Time
	Body proto.Heartbeat
}

// New starts a fake Engine accepting enrollment code; it approves every
// request at the first poll until told otherwise.
func New(t testing.TB, code string) *Engine {
	_, grantKey, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	e := &Engine{
		grantKey: grantKey,
		code:     code, jtis: map[string]bool{}, nonces: map[string]bool{}, approvals: map[string]*approval{},
		devices: map[string]*Device{}, byAccess: map[string]*Device{}, byRefresh: map[string]*Device{},
		decision: proto.ApprovalApproved, accessTTL: time.Hour, ackMetadata: true, conns: make(chan *Conn, 64),
		shellTokens: map[string]string{}, shellConns: make(chan *ShellConn, 64),
		metadata: map[int]proto.MetadataFieldValue{}, metadataEdit: map[int]int64{}, metadataFail: map[int]bool{},
	}
	// Agents trust the fake's script key unless a test sets the trust.
	e.scriptTrust = &proto.ScriptTrust{TrustedPublicKeys: []string{e.GrantPublicKey()}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+proto.PathEnrollNonce, e.nonce)
	mux.HandleFunc("POST "+proto.PathEnrollRequest, e.enrollRequest)
	mux.HandleFunc("POST "+proto.PathEnrollPoll, e.poll)
	mux.HandleFunc("POST "+proto.PathTokenRefresh, e.refresh)
	mux.HandleFunc("POST "+proto.PathStatus, e.status)
	mux.HandleFunc("POST "+proto.PathHeartbeat, e.heartbeat)
	mux.HandleFunc("POST "+proto.PathDetails, e.postDetails)
	mux.HandleFunc("GET "+proto.PathAgentMetadataPrefix+"{n}", e.metadataRead)
	mux.HandleFunc("GET "+proto.PathRealtimeRoute, e.route)
	mux.HandleFunc("GET "+proto.PathRealtimeWS, e.socket)
	mux.HandleFunc("GET "+proto.PathShellSocket+"/{session}", e.shellSocket)
	e.srv = httptest.NewServer(mux)
	e.URL = e.srv.URL
	t.Cleanup(e.srv.Close)
	return e
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, proto.Error{Code: code, Message: msg})
}

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeErr(w, http.StatusBadRequest, "validation_failed", err.Error())
		return false
	}
	return true
}

func random() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// mint gives d a new token pair; the access token is a JWT-shaped string
// whose exp the agent schedules its refresh by. Caller holds e.mu.
func (e *Engine) mint(d *Device) proto.Tokens {
	delete(e.byAccess, d.Access)
	delete(e.byRefresh, d.Refresh)
	e.seq++
	d.AccessExp = time.Now().Add(e.accessTTL)
	claims, _ := json.Marshal(map[string]any{"sub": d.GUID, "exp": d.AccessExp.Unix(), "n": e.seq})
	d.Access = "eyJhbGciOiJub25lIn0." + base64.RawURLEncoding.EncodeToString(claims) + ".fake"
	d.Refresh = "refresh-" + random()
	e.byAccess[d.Access], e.byRefresh[d.Refresh] = d, d
	return proto.Tokens{AccessToken: d.Access, TokenType: proto.AuthScheme, ExpiresAt: d.AccessExp,
		ExpiresIn: int(e.accessTTL.Seconds()), RefreshToken: d.Refresh}
}

func (e *Engine) event(name string) { e.events = append(e.events, name) }

func (e *Engine) nonce(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := random()
	e.nonces[n] = true
	writeJSON(w, http.StatusOK, proto.EnrollNonce{Nonce: n, ExpiresAt: time.Now().Add(time.Minute)})
}

func (e *Engine) enrollRequest(w http.ResponseWriter, r *http.Request) {
	var req proto.EnrollRequest
	if !decode(w, r, &req) {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.event("enroll_request")
	if e.rateLimit > 0 {
		e.rateLimit--
		w.Header().Set("Retry-After", strconv.Itoa(e.retryAfter))
		writeErr(w, http.StatusTooManyRequests, "rate_limited", "slow down")
		return
	}
	pub, err := base64.StdEncoding.DecodeString(req.PublicKey)
	sig, serr := base64.StdEncoding.DecodeString(req.Signature)
	ok := err == nil && serr == nil && len(pub) == ed25519.PublicKeySize &&
		ed25519.Verify(pub, proto.EnrollSigningMessage(req.Nonce, req.Code, req.Hostname, req.Fingerprint, req.PublicKey), sig)
	e.enrollRequests = append(e.enrollRequests, EnrollRecord{Request: req, SignatureOK: ok})
	switch {
	case !ok:
		writeJSON(w, http.StatusBadRequest, proto.Error{Code: "validation_failed", Message: "bad signature", Fields: map[string]string{"signature": "does not verify"}})
		return
	case !e.nonces[req.Nonce]:
		writeJSON(w, http.StatusBadRequest, proto.Error{Code: "validation_failed", Message: "bad nonce", Fields: map[string]string{"nonce": "unknown or used"}})
		return
	case req.Code != e.code:
		writeJSON(w, http.StatusBadRequest, proto.Error{Code: "validation_failed", Message: "bad code", Fields: map[string]string{"code": "is unknown, expired or used up"}})
		return
	}
	delete(e.nonces, req.Nonce)
	a := &approval{id: "appr-" + random(), jkt: agent.Thumbprint(pub), hostname: req.Hostname, fingerprint: req.Fingerprint, status: proto.ApprovalPending}
	if e.autoApprove {
		a.status = proto.ApprovalApproved
	}
	e.approvals[a.id] = a
	writeJSON(w, http.StatusAccepted, proto.EnrollResponse{ApprovalID: a.id, Status: a.status})
}

func (e *Engine) poll(w http.ResponseWriter, r *http.Request) {
	var req proto.EnrollPoll
	if !decode(w, r, &req) {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.event("poll")
	jkt, err := e.verifyProof(r, "")
	if err != nil {
		writeErr(w, http.StatusUnauthorized, proto.CodeInvalidDPoPProof, err.Error())
		return
	}
	e.polls = append(e.polls, jkt)
	a := e.approvals[req.ApprovalID]
	if a == nil || a.jkt != jkt {
		writeErr(w, http.StatusNotFound, "not_found", "approval not found")
		return
	}
	a.polls++
	if a.status == proto.ApprovalPending && a.polls > e.decideAfter {
		a.status = e.decision
	}
	if a.status != proto.ApprovalApproved {
		writeJSON(w, http.StatusOK, proto.EnrollPollResponse{Status: a.status})
		return
	}
	var d *Device
	for _, x := range e.devices {
		if x.JKT == a.jkt {
			d = x
		}
	}
	if d == nil {
		d = &Device{GUID: "guid-" + random(), AgentID: "agent-" + random(), JKT: a.jkt}
		e.devices[d.GUID] = d
	}
	d.Hostname, d.Fingerprint, d.Purged, d.Quarantined = a.hostname, a.fingerprint, false, false
	a.status = proto.ApprovalEnrolled
	tok := e.mint(d)
	writeJSON(w, http.StatusOK, proto.EnrollPollResponse{Status: proto.ApprovalEnrolled, Tokens: &tok,
		Device: &proto.EnrolledDevice{GUID: d.GUID, AgentID: d.AgentID, Hostname: d.Hostname, SiteSlug: "test"}, ScriptSigning: e.scriptTrust})
}

func (e *Engine) refresh(w http.ResponseWriter, r *http.Request) {
	var req proto.RefreshRequest
	if !decode(w, r, &req) {
		return
	}
	e.mu.Lock()
	e.event("refresh")
	e.refreshes++
	e.refreshInFlight++
	e.refreshMax = max(e.refreshMax, e.refreshInFlight)
	delay := e.refreshDelay
	e.mu.Unlock()
	time.Sleep(delay) // holds the refresh open so an overlapping one would show
	e.mu.Lock()
	defer e.mu.Unlock()
	e.refreshInFlight--
	jkt, err := e.verifyProof(r, "")
	if err != nil {
		writeErr(w, http.StatusUnauthorized, proto.CodeInvalidDPoPProof, err.Error())
		return
	}
	d := e.byRefresh[req.RefreshToken]
	switch {
	case d == nil:
		writeErr(w, http.StatusUnauthorized, proto.CodeTokenRevoked, "refresh token unknown or reused")
	case d.JKT != jkt:
		writeErr(w, http.StatusUnauthorized, proto.CodeInvalidDPoPProof, "key does not belong to the device")
	case d.Fingerprint != req.Fingerprint:
		writeErr(w, http.StatusUnauthorized, proto.CodeFingerprintMismatch, "fingerprint differs")
	case d.Purged:
		writeErr(w, http.StatusUnauthorized, proto.CodeDevicePurged, "purged")
	case d.Quarantined:
		writeErr(w, http.StatusConflict, proto.CodeDeviceQuarantined, "quarantined")
	case e.refreshErr != nil:
		writeErr(w, e.refreshErr.status, e.refreshErr.code, "refused by the test")
	default:
		writeJSON(w, http.StatusOK, proto.RefreshResponse{GUID: d.GUID, Tokens: e.mint(d)})
	}
}

// device authenticates a Device route; nil means it answered. Caller
// holds e.mu.
func (e *Engine) device(w http.ResponseWriter, r *http.Request) *Device {
	token, _ := strings.CutPrefix(r.Header.Get("Authorization"), proto.AuthScheme+" ")
	d := e.byAccess[token]
	if d == nil {
		writeErr(w, http.StatusUnauthorized, proto.CodeInvalidAccessToken, "unknown access token")
		return nil
	}
	jkt, err := e.verifyProof(r, token)
	if err != nil || jkt != d.JKT {
		writeErr(w, http.StatusUnauthorized, proto.CodeInvalidDPoPProof, fmt.Sprint("proof: ", err))
		return nil
	}
	refuse := func(status int, code string) {
		e.event("refused " + r.URL.Path + " " + code)
		writeErr(w, status, code, "refused")
	}
	switch {
	case d.Purged:
		refuse(http.StatusUnauthorized, proto.CodeDevicePurged)
	case d.Quarantined:
		refuse(http.StatusConflict, proto.CodeDeviceQuarantined)
	case time.Now().After(d.AccessExp):
		refuse(http.StatusUnauthorized, proto.CodeTokenExpired)
	case e.deviceErr != nil:
		refuse(e.deviceErr.status, e.deviceErr.code)
	default:
		return d
	}
	return nil
}

// GrantPublicKey is the fake's script key as agents trust it.
func (e *Engine) GrantPublicKey() string {
	return base64.StdEncoding.EncodeToString(e.grantKey.Public().(ed25519.PublicKey))
}

// Grant signs a grant for env to device guid, valid for a day.
func (e *Engine) Grant(guid string, env proto.Envelope) *proto.Signed {
	doc, err := json.Marshal(proto.Grant{Purpose: proto.PurposeOperation, DeviceGUID: guid, OperationID: env.OperationID,
		Type: env.Type, PayloadSHA256: proto.GrantDigest(env.Payload), ExpiresAt: time.Now().Add(24 * time.Hour)})
	if err != nil {
		panic(err)
	}
	pub := e.grantKey.Public().(ed25519.PublicKey)
	return &proto.Signed{Payload: doc, KeyID: proto.KeyID(pub), Signature: ed25519.Sign(e.grantKey, doc)}
}
