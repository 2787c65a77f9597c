// Package passkeys registers WebAuthn credentials (passkeys) for operators
// and signs them in with one, without a password: a passkey checks user
// verification on the authenticator, so it satisfies MFA on its own.
//
// Ceremony state (the challenge between options and verify) lives in
// PostgreSQL, so any replica can finish a ceremony another one started.
package passkeys

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/auth"
	"github.com/cairn-rmm/cairn/internal/ratelimit"
)

const (
	ceremonyTTL = 5 * time.Minute
	maxLabel    = 64

	kindRegister     = "register"
	kindAuthenticate = "authenticate"
	kindReauth       = "reauth"
)

// Passkey is a passkey as the API shows it: never any key material.
type Passkey struct {
	ID         int64
	Label      string
	CreatedAt  time.Time
	LastUsedAt *time.Time
}

// Ceremony is what the client needs to run a ceremony in the browser: the
// options for navigator.credentials and the opaque ID to send back.
type Ceremony struct {
	ID      string
	Options any
}

// Service implements passkey registration, management and sign-in.
type Service struct {
	store   *db.Store
	auth    *auth.Service
	limiter *ratelimit.Limiter
	now     func() time.Time
	wa      *webauthn.WebAuthn // nil when the public URL cannot be an RP ID
	reason  string             // why wa is nil
}

// NewService derives the relying party from publicURL: its hostname is the
// RP ID and its origin the only accepted origin. Browsers refuse IP
// addresses as RP IDs, so with an IP host the service answers
// passkeys_unavailable instead of failing every ceremony obscurely.
func NewService(store *db.Store, authSvc *auth.Service, publicURL string, now func() time.Time) (*Service, error) {
	if now == nil {
		now = time.Now
	}
	s := &Service{store: store, auth: authSvc, limiter: ratelimit.New(store.Queries), now: now}
	u, err := url.Parse(publicURL)
	if err != nil || u.Hostname() == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("passkeys: public URL %q is not an http(s) URL", publicURL)
	}
	host := u.Hostname()
	if net.ParseIP(host) != nil {
		s.reason = fmt.Sprintf("passkeys need the Engine to be reached by name, not by the IP address %s: set CAIRN_PUBLIC_URL to a name (for example http://localhost:%s) and browse there", host, portOr(u, "8080"))
		return s, nil
	}
	s.wa, err = webauthn.New(&webauthn.Config{
		RPID:          host,
		RPDisplayName: "Cairn",
		RPOrigins:     []string{u.Scheme + "://" + u.Host},
		// Any authenticator will do: no vendor attestation is asked for or
		// checked, so none is collected about operators' devices.
		AttestationPreference: protocol.PreferNoAttestation,
	})
	if err != nil {
		return nil, fmt.Errorf("passkeys: relying party from %q: %w", publicURL, err)
	}
	return s, nil
}

func portOr(u *url.URL, def string) string {
	if p := u.Port(); p != "" {
		return p
	}
	return def
}

func (s *Service) available() error {
	if s.wa == nil {
		return cairn.Errorf(cairn.ECodePasskeysUnavailable, "%s", s.reason)
	}
	return nil
}

// operator is a WebAuthn user: an operator and the credentials it owns.
type operator struct {
	user  db.User
	creds []webauthn.Credential
}

// userHandle is the opaque WebAuthn user ID stored on the authenticator: the
// account's numeric ID, which carries no personal data and is never reused.
func userHandle(id int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(id)) }

func (o *operator) WebAuthnID() []byte                         { return userHandle(o.user.ID) }
func (o *operator) WebAuthnName() string                       { return o.user.Username }
func (o *operator) WebAuthnDisplayName() string                { return o.user.Username }
func (o *operator) WebAuthnCredentials() []webauthn.Credential { return o.creds }

// manager loads the signed-in operator for passkey management, which only
// local accounts have (directory accounts are managed by their directory).
func (s *Service) manager(ctx context.Context, p *auth.Principal) (db.User, error) {
	if err := s.available(); err != nil {
		return db.User{}, err
	}
	u, err := s.store.UserGetByID(ctx, p.UserID)
	if err != nil {
		return db.User{}, db.NotFound(err, "account not found")
	}
	if u.AuthSource != "local" {
		return db.User{}, cairn.Errorf(cairn.ECodeForbidden, "directory accounts cannot manage passkeys")
	}
	return u, nil
}

// List returns the operator's passkeys.
func (s *Service) List(ctx context.Context, p *auth.Principal) ([]Passkey, error) {
	if _, err := s.manager(ctx, p); err != nil {
		return nil, err
	}
	rows, err := s.store.PasskeyListByUser(ctx, p.UserID)
	out := make([]Passkey, len(rows))
	for i, r := range rows {
		out[i] = passkeyOf(r)
	}
	return out, err
}

// Rename changes the label of one of the operator's passkeys.
func (s *Service) Rename(ctx context.Context, p *auth.Principal, id int64, label string) (Passkey, error) {
	label, err := checkLabel(label)
	if err != nil {
		return Passkey{}, err
	}
	if _, err := s.manager(ctx, p); err != nil {
		return Passkey{}, err
	}
	row, err := s.store.PasskeyRename(ctx, db.PasskeyRenameParams{Label: label, ID: id, UserID: p.UserID})
	if err != nil {
		return Passkey{}, db.NotFound(err, "passkey not found")
	}
	return passkeyOf(row), nil
}

// Delete removes one of the operator's passkeys.
func (s *Service) Delete(ctx context.Context, p *auth.Principal, id int64) error {
	if _, err := s.manager(ctx, p); err != nil {
		return err
	}
	n, err := s.store.PasskeyDelete(ctx, db.PasskeyDeleteParams{ID: id, UserID: p.UserID})
	if err != nil {
		return err
	}
	if n == 0 {
		return cairn.Errorf(cairn.ECodeNotFound, "passkey not found")
	}
	return nil
}

// BeginRegistration starts registering a passkey for the signed-in
// operator. The passkey must be discoverable (sign-in is usernameless) and
// verify the user (it stands in for MFA).
//
// confirm checks the operator's fresh proof of identity (registering adds
// a way in); it runs once the operator is known to be able to have
// passkeys, so those who cannot learn that first.
func (s *Service) BeginRegistration(ctx context.Context, p *auth.Principal, confirm func(context.Context) error) (Ceremony, error) {
	u, err := s.manager(ctx, p)
	if err != nil {
		return Ceremony{}, err
	}
	if err := confirm(ctx); err != nil {
		return Ceremony{}, err
	}
	op, err := s.operatorOf(ctx, u)
	if err != nil {
		return Ceremony{}, err
	}
	creation, session, err := s.wa.BeginRegistration(op,
		webauthn.WithAuthenticatorSelection(protocol.AuthenticatorSelection{
			ResidentKey:        protocol.ResidentKeyRequirementRequired,
			RequireResidentKey: protocol.ResidentKeyRequired(),
			UserVerification:   protocol.VerificationRequired,
		}),
		webauthn.WithExclusions(webauthn.Credentials(op.creds).CredentialDescriptors()),
	)
	if err != nil {
		return Ceremony{}, fmt.Errorf("passkeys: begin registration: %w", err)
	}
	id, err := s.saveCeremony(ctx, kindRegister, &u.ID, session)
	return Ceremony{ID: id, Options: creation.Response}, err
}

// FinishRegistration verifies the authenticator's answer and stores the
// new passkey under label.
func (s *Service) FinishRegistration(ctx context.Context, p *auth.Principal, ceremonyID, label string, credential []byte) (Passkey, error) {
	label, err := checkLabel(label)
	if err != nil {
		return Passkey{}, err
	}
	u, err := s.manager(ctx, p)
	if err != nil {
		return Passkey{}, err
	}
	session, owner, err := s.takeCeremony(ctx, kindRegister, ceremonyID)
	if err != nil {
		return Passkey{}, err
	}
	if owner == nil || *owner != u.ID {
		return Passkey{}, errUnknownCeremony
	}
	parsed, err := protocol.ParseCredentialCreationResponseBytes(credential)
	if err != nil {
		return Passkey{}, cairn.Invalid("credential", "is not a WebAuthn registration response")
	}
	op, err := s.operatorOf(ctx, u)
	if err != nil {
		return Passkey{}, err
	}
	cred, err := s.wa.CreateCredential(op, session, parsed)
	if err != nil {
		return Passkey{}, cairn.Invalid("credential", "was not accepted: "+protocolDetail(err))
	}
	raw, err := json.Marshal(cred)
	if err != nil {
		return Passkey{}, err
	}
	row, err := s.store.PasskeyInsert(ctx, db.PasskeyInsertParams{UserID: u.ID, CredentialID: cred.ID, Credential: raw,
		SignCount: int64(cred.Authenticator.SignCount), Label: label})
	if db.IsUniqueViolation(err, "") {
		return Passkey{}, cairn.Errorf(cairn.ECodeConflict, "this passkey is already registered")
	}
	if err != nil {
		return Passkey{}, err
	}
	return passkeyOf(row), nil
}

// BeginLogin starts a usernameless sign-in: the browser offers whichever
// passkey of this relying party the operator picks.
func (s *Service) BeginLogin(ctx context.Context, meta auth.ClientMeta) (Ceremony, error) {
	if err := s.available(); err != nil {
		return Ceremony{}, err
	}
	// Each call stores a row, so anonymous callers are held to the login
	// budget per address.
	if err := s.limiter.Hit(ctx, "passkey:options:addr:"+meta.Addr, auth.LoginPerAddress); err != nil {
		return Ceremony{}, err
	}
	assertion, session, err := s.wa.BeginDiscoverableLogin(webauthn.WithUserVerification(protocol.VerificationRequired))
	if err != nil {
		return Ceremony{}, fmt.Errorf("passkeys: begin login: %w", err)
	}
	id, err := s.saveCeremony(ctx, kindAuthenticate, nil, session)
	return Ceremony{ID: id, Options: assertion.Response}, err
}

// FinishLogin verifies the assertion, refuses a signature counter that did
// not move forward (a cloned authenticator), and starts a session.
func (s *Service) FinishLogin(ctx context.Context, ceremonyID string, credential []byte, meta auth.ClientMeta) (auth.Session, error) {
	if err := s.available(); err != nil {
		return auth.Session{}, err
	}
	if err := s.limiter.Hit(ctx, "login:addr:"+meta.Addr, auth.LoginPerAddress); err != nil {
		return auth.Session{}, err
	}
	session, _, err := s.takeCeremony(ctx, kindAuthenticate, ceremonyID)
	if err != nil {
		return auth.Session{}, err
	}
	parsed, err := protocol.ParseCredentialRequestResponseBytes(credential)
	if err != nil {
		return auth.Session{}, cairn.Invalid("credential", "is not a WebAuthn authentication response")
	}
	var (
		row       db.Passkey
		lookupErr error // a failure of ours, not the passkey's
	)
	handler := func(rawID, _ []byte) (webauthn.User, error) {
		row, err = s.store.PasskeyGetByCredentialID(ctx, rawID)
		if db.IsNoRows(err) {
			return nil, errPasskeyRefused
		} else if err != nil {
			lookupErr = err
			return nil, err
		}
		u, err := s.store.UserGetByID(ctx, row.UserID)
		if err != nil {
			lookupErr = err
			return nil, err
		}
		var cred webauthn.Credential
		if err := json.Unmarshal(row.Credential, &cred); err != nil {
			lookupErr = fmt.Errorf("passkeys: stored credential %d: %w", row.ID, err)
			return nil, lookupErr
		}
		return &operator{user: u, creds: []webauthn.Credential{cred}}, nil
	}
	_, cred, err := s.wa.ValidatePasskeyLogin(handler, session, parsed)
	if lookupErr != nil {
		return auth.Session{}, lookupErr
	}
	if err != nil {
		return auth.Session{}, errPasskeyRefused
	}
	if cred.Authenticator.CloneWarning {
		return auth.Session{}, errCloned
	}
	raw, err := json.Marshal(cred)
	if err != nil {
		return auth.Session{}, err
	}
	n, err := s.store.PasskeyUse(ctx, db.PasskeyUseParams{SignCount: int64(cred.Authenticator.SignCount), Credential: raw, ID: row.ID})
	if err != nil {
		return auth.Session{}, err
	}
	if n == 0 {
		// Another sign-in with a counter at least as high won the race.
		return auth.Session{}, errCloned
	}
	return s.auth.StartSession(ctx, row.UserID, meta)
}

// BeginReauth starts a passkey assertion that proves again, before a
// sensitive action, that the signed-in operator is at the keyboard: only
// the operator's own passkeys are offered, and the ceremony is bound to
// the operator.
func (s *Service) BeginReauth(ctx context.Context, p *auth.Principal) (Ceremony, error) {
	u, err := s.manager(ctx, p)
	if err != nil {
		return Ceremony{}, err
	}
	op, err := s.operatorOf(ctx, u)
	if err != nil {
		return Ceremony{}, err
	}
	if len(op.creds) == 0 {
		return Ceremony{}, cairn.Errorf(auth.ECodeReauthRequired, "you have no passkey; confirm it is you with your password and authenticator code")
	}
	assertion, session, err := s.wa.BeginLogin(op, webauthn.WithUserVerification(protocol.VerificationRequired))
	if err != nil {
		return Ceremony{}, fmt.Errorf("passkeys: begin re-authentication: %w", err)
	}
	id, err := s.saveCeremony(ctx, kindReauth, &u.ID, session)
	return Ceremony{ID: id, Options: assertion.Response}, err
}

// Reauthenticate verifies an assertion of a ceremony BeginReauth started
// for the same operator. Anything wrong answers reauthentication_required.
func (s *Service) Reauthenticate(ctx context.Context, p *auth.Principal, ceremonyID string, credential []byte) error {
	refused := cairn.Errorf(auth.ECodeReauthRequired, "confirm it is you: the passkey was not accepted; start again")
	u, err := s.manager(ctx, p)
	if err != nil {
		return err
	}
	if err := s.limiter.Hit(ctx, "reauth:user:"+p.Username, auth.ReauthPerUser); err != nil {
		return err
	}
	session, owner, err := s.takeCeremony(ctx, kindReauth, ceremonyID)
	if cairn.IsCode(err, cairn.ECodeValidation) || (err == nil && (owner == nil || *owner != u.ID)) {
		return refused
	} else if err != nil {
		return err
	}
	parsed, err := protocol.ParseCredentialRequestResponseBytes(credential)
	if err != nil {
		return refused
	}
	op, err := s.operatorOf(ctx, u)
	if err != nil {
		return err
	}
	cred, err := s.wa.ValidateLogin(op, session, parsed)
	if err != nil {
		return refused
	}
	if cred.Authenticator.CloneWarning {
		return errCloned
	}
	row, err := s.store.PasskeyGetByCredentialID(ctx, cred.ID)
	if err != nil {
		return err
	}
	raw, err := json.Marshal(cred)
	if err != nil {
		return err
	}
	n, err := s.store.PasskeyUse(ctx, db.PasskeyUseParams{SignCount: int64(cred.Authenticator.SignCount), Credential: raw, ID: row.ID})
	if err != nil {
		return err
	}
	if n == 0 {
		return errCloned
	}
	_ = s.limiter.Reset(ctx, "reauth:user:"+p.Username)
	return nil
}

func (s *Service) operatorOf(ctx context.Context, u db.User) (*operator, error) {
	rows, err := s.store.PasskeyListByUser(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	op := &operator{user: u}
	for _, r := range rows {
		var c webauthn.Credential
		if err := json.Unmarshal(r.Credential, &c); err != nil {
			return nil, fmt.Errorf("passkeys: stored credential %d: %w", r.ID, err)
		}
		op.creds = append(op.creds, c)
	}
	return op, nil
}

// saveCeremony stores the session data under the hash of a new random ID,
// and sweeps expired ceremonies on the way.
func (s *Service) saveCeremony(ctx context.Context, kind string, userID *int64, session *webauthn.SessionData) (string, error) {
	// Expiry is ours (with the service clock), not the library's.
	session.Expires = time.Time{}
	raw, err := json.Marshal(session)
	if err != nil {
		return "", err
	}
	now := s.now()
	if err := s.store.WebauthnCeremonyDeleteExpired(ctx, now); err != nil {
		return "", err
	}
	id, hash := auth.NewToken()
	err = s.store.WebauthnCeremonyInsert(ctx, db.WebauthnCeremonyInsertParams{IDHash: hash, Kind: kind, UserID: userID,
		Session: raw, ExpiresAt: now.Add(ceremonyTTL)})
	return id, err
}

// takeCeremony consumes a ceremony: whatever happens next, it cannot be
// used again.
func (s *Service) takeCeremony(ctx context.Context, kind, id string) (webauthn.SessionData, *int64, error) {
	row, err := s.store.WebauthnCeremonyTake(ctx, db.WebauthnCeremonyTakeParams{IDHash: auth.HashToken(id), Kind: kind})
	if db.IsNoRows(err) || (err == nil && s.now().After(row.ExpiresAt)) {
		return webauthn.SessionData{}, nil, errUnknownCeremony
	} else if err != nil {
		return webauthn.SessionData{}, nil, err
	}
	var session webauthn.SessionData
	if err := json.Unmarshal(row.Session, &session); err != nil {
		return webauthn.SessionData{}, nil, fmt.Errorf("passkeys: stored ceremony: %w", err)
	}
	return session, row.UserID, nil
}

// CheckLabel validates a passkey label as request field "label".
func CheckLabel(label string) error {
	_, err := checkLabel(label)
	return err
}

func checkLabel(label string) (string, error) {
	label = strings.TrimSpace(label)
	switch n := utf8.RuneCountInString(label); {
	case n == 0:
		return "", cairn.Invalid("label", "is required")
	case n > maxLabel:
		return "", cairn.Invalid("label", fmt.Sprintf("must be at most %d characters", maxLabel))
	}
	return label, nil
}

func passkeyOf(r db.Passkey) Passkey {
	return Passkey{ID: r.ID, Label: r.Label, CreatedAt: r.CreatedAt, LastUsedAt: r.LastUsedAt}
}

// protocolDetail is the library's client-safe explanation of a refusal.
func protocolDetail(err error) string {
	if pe, ok := err.(*protocol.Error); ok && pe.Details != "" {
		return pe.Details
	}
	return "the response could not be verified"
}

var (
	errUnknownCeremony = cairn.Invalid("ceremony_id", "is unknown, used or expired; start again")
	errPasskeyRefused  = cairn.Errorf(cairn.ECodeInvalidCredentials, "this passkey was not accepted")
	errCloned          = cairn.Errorf(cairn.ECodeInvalidCredentials, "this passkey's signature counter went backwards, so it may be a copy; it was refused")
)
