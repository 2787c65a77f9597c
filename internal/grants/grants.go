// Package grants authorises what reaches an agent where it is asked for
// (issue 21 item 1). Temporal is a trust boundary: anyone who can start a
// workflow could otherwise make an agent act as root. So the process that
// decided an operator (or a job saved by one) may make a device do
// something signs a grant, an EdDSA JWT over the device, the operation,
// the event type, the payload's SHA-256 and an expiry, with a server key
// sealed by the master cipher that never enters a workflow history. The
// activity that writes to the agent's socket verifies the grant with the
// key's public half (stored in the clear, so a site worker whose cipher is
// locked still verifies) and sends nothing without one that matches.
package grants

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/aegis"
)

// keyName is the server key that signs grants: its own, so a grant is
// never confused with a device token and rotating one leaves the other.
const keyName = "operation-grant-ed25519"

// Purpose is the grant's audience: what the signature is for.
const Purpose = "cairn/operation-grant/v1"

// Operation is what a grant authorises: one event of one type with one
// payload to one device, under an operation ID.
type Operation struct {
	GUID        cairn.DeviceGUID
	OperationID cairn.OperationID
	// Type is the agent event (proto.Event*).
	Type    string
	Payload []byte
	// Actor is who asked (recorded in the grant, for audit).
	Actor string
}

type claims struct {
	jwt.RegisteredClaims
	Type        string `json:"typ"`
	PayloadHash string `json:"pld"`
	Actor       string `json:"act,omitempty"`
}

// ScriptSigner signs documents with the script-signing key, which agents
// trust through their key chain (scriptsign.Signer).
type ScriptSigner interface {
	Sign(ctx context.Context, payload []byte) (proto.Signed, error)
}

// Service signs and verifies grants.
type Service struct {
	key    *aegis.Ed25519Key
	now    func() time.Time
	signer ScriptSigner
}

// New returns the grant service over the database's server keys; signer
// signs the grants agents check (AgentGrant).
func New(store *db.Store, cipher *aegis.Cipher, signer ScriptSigner, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{key: aegis.NewEd25519Key(store.Queries, cipher, keyName), now: now, signer: signer}
}

// AgentGrant is what the agent checks before it acts (agent/proto/grant.go):
// op, for this device, until expires, signed by the script-signing key.
// The command path makes it right after Verify, so it says what the API
// authorised; a request planted in agent_requests has none the agent
// trusts.
func (s *Service) AgentGrant(ctx context.Context, op Operation, expires time.Time) (*proto.Signed, error) {
	doc, err := json.Marshal(proto.Grant{Purpose: proto.PurposeOperation, DeviceGUID: string(op.GUID), OperationID: string(op.OperationID),
		Type: op.Type, PayloadSHA256: proto.GrantDigest(op.Payload), ExpiresAt: expires.UTC()})
	if err != nil {
		return nil, err
	}
	sg, err := s.signer.Sign(ctx, doc)
	if err != nil {
		return nil, err
	}
	return &sg, nil
}

// PayloadHash is the grant's digest of a payload.
func PayloadHash(payload []byte) string {
	sum := sha256.Sum256(payload)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// Sign grants op until ttl from now. It needs the unlocked master cipher
// (aegis_locked otherwise): only a process that holds it, and so could
// have authenticated the operator, can grant.
func (s *Service) Sign(ctx context.Context, op Operation, ttl time.Duration) (string, error) {
	if op.GUID == "" || op.OperationID == "" || op.Type == "" || ttl <= 0 {
		return "", errors.New("grants: a grant names a device, an operation, a type and a lifetime")
	}
	priv, err := s.key.Signer(ctx)
	if err != nil {
		return "", err
	}
	now := s.now()
	c := claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Subject: string(op.GUID), ID: string(op.OperationID), Audience: jwt.ClaimStrings{Purpose},
			IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
		},
		Type: op.Type, PayloadHash: PayloadHash(op.Payload), Actor: op.Actor,
	}
	return jwt.NewWithClaims(jwt.SigningMethodEdDSA, c).SignedString(priv)
}

// ECodeNotGranted: an operation reached the command path without a valid
// grant for exactly what it would send (issue 21 item 1).
const ECodeNotGranted = "operation_not_granted"

// Verify checks that grant authorises op now. An operation ID matches the
// grant's or extends it with ":<attempt>" (a file transfer asks its agent
// again under one grant). Every refusal is operation_not_granted; its
// message says which check failed, never the grant itself.
func (s *Service) Verify(ctx context.Context, grant string, op Operation) error {
	if grant == "" {
		return cairn.Errorf(ECodeNotGranted, "the operation carries no grant: it was not started by the Engine's API")
	}
	c, err := s.parse(ctx, grant, false)
	if errors.Is(err, jwt.ErrTokenSignatureInvalid) {
		c, err = s.parse(ctx, grant, true)
	}
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return cairn.Errorf(ECodeNotGranted, "the operation's grant has expired")
	case err != nil:
		return cairn.Errorf(ECodeNotGranted, "the operation's grant does not verify")
	case cairn.DeviceGUID(c.Subject) != op.GUID:
		return cairn.Errorf(ECodeNotGranted, "the operation's grant is for another device")
	case cairn.OperationID(c.ID) != op.OperationID && !strings.HasPrefix(string(op.OperationID), c.ID+":"):
		return cairn.Errorf(ECodeNotGranted, "the operation's grant is for another operation")
	case c.Type != op.Type:
		return cairn.Errorf(ECodeNotGranted, "the operation's grant is for another request type")
	case c.PayloadHash != PayloadHash(op.Payload):
		return cairn.Errorf(ECodeNotGranted, "the operation's payload is not the one granted")
	}
	return nil
}

func (s *Service) parse(ctx context.Context, grant string, stale bool) (*claims, error) {
	pub, err := s.key.Verifier(ctx, stale)
	if err != nil {
		return nil, err
	}
	if pub == nil {
		return nil, jwt.ErrTokenSignatureInvalid // no key yet: nothing was ever granted
	}
	var c claims
	_, err = jwt.ParseWithClaims(grant, &c, func(*jwt.Token) (any, error) { return pub, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodEdDSA.Alg()}), jwt.WithAudience(Purpose),
		jwt.WithTimeFunc(s.now), jwt.WithExpirationRequired())
	return &c, err
}
