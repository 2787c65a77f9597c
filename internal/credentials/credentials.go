// Package credentials keeps the stored credentials operators pick for
// remote sessions (Windows sign-in, WinRM). The password is sealed with the
// master cipher and never leaves this package except through Reveal, which
// the remote-desktop work calls with the site of the device it connects to.
package credentials

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/aegis"
)

// Connection and credential types (SPEC "Other records").
const (
	ConnWindows   = "Windows"
	ConnWinRM     = "WinRM"
	TypeMachine   = "Machine"
	TypeDomain    = "Domain"
	StatusOK      = "ok"
	StatusUnread  = "unreadable"
	maxName       = 100
	maxUsername   = 256
	maxDomain     = 255
	maxPassword   = 256
	nameUniqueKey = "stored_credentials_scope_name_key"
)

// A domain is a NetBIOS or DNS name: letters, digits, '.', '-', '_'.
var domainPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// Credential is a stored credential as anyone may see it: no secret.
// SecretStatus is StatusUnread when the password was sealed by a master
// cipher that was since force-reset (it must be set again to be usable).
type Credential struct {
	ID             int64
	Name           string
	ConnectionType string
	CredentialType string
	Username       string
	Domain         string
	SiteID         *cairn.SiteID
	HasPassword    bool
	SecretStatus   string
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// Input is a create or update request. A nil Password on update keeps the
// stored one.
type Input struct {
	Name           string
	ConnectionType string
	CredentialType string
	Username       string
	Domain         string
	Password       *string
	SiteID         *cairn.SiteID
}

// Scope is who is asking: an administrator sees every credential, anyone
// else only global ones and those of the sites assigned to UserID.
type Scope struct {
	UserID   int64
	AllSites bool
}

// Secret is a revealed credential, for the remote-session code only.
type Secret struct {
	ConnectionType string
	CredentialType string
	Username       string
	Domain         string
	Password       string
}

// Service implements stored credentials.
type Service struct {
	store  *db.Store
	cipher *aegis.Cipher
}

// NewService returns the service.
func NewService(store *db.Store, cipher *aegis.Cipher) *Service {
	return &Service{store: store, cipher: cipher}
}

// List returns the credentials scope may see; a non-nil siteID narrows it
// to that site's credentials plus the global ones.
func (s *Service) List(ctx context.Context, scope Scope, siteID *int64) ([]Credential, error) {
	if siteID != nil && *siteID <= 0 {
		return nil, cairn.Invalid("site_id", "must be a positive site ID")
	}
	rows, err := s.store.CredentialList(ctx, db.CredentialListParams{SiteID: siteID, AllSites: scope.AllSites, UserID: scope.UserID})
	if err != nil {
		return nil, err
	}
	out := make([]Credential, len(rows))
	for i, r := range rows {
		out[i] = s.view(r)
	}
	return out, nil
}

// Get returns one credential; one outside scope is not_found like a
// missing one, so its existence does not leak.
func (s *Service) Get(ctx context.Context, scope Scope, id int64) (Credential, error) {
	r, err := s.store.CredentialGet(ctx, db.CredentialGetParams{ID: id, AllSites: scope.AllSites, UserID: scope.UserID})
	if err != nil {
		return Credential{}, notFound(err, id)
	}
	return s.view(r), nil
}

// Create stores a new credential; the password is required.
func (s *Service) Create(ctx context.Context, in Input) (Credential, error) {
	in, err := s.check(ctx, in, true)
	if err != nil {
		return Credential{}, err
	}
	var row db.StoredCredential
	err = s.store.InTx(ctx, func(q *db.Queries) error {
		row, err = q.CredentialInsert(ctx, db.CredentialInsertParams{Name: in.Name, ConnectionType: in.ConnectionType,
			CredentialType: in.CredentialType, Username: in.Username, Domain: in.Domain, SiteID: in.SiteID})
		if err != nil {
			return err
		}
		row.PasswordSealed, row.PasswordKeyID, err = s.seal(ctx, q, row.ID, *in.Password)
		return err
	})
	if err != nil {
		return Credential{}, nameTaken(err, in.Name)
	}
	return s.view(row), nil
}

// Update replaces every field of a credential; a nil password keeps the
// stored one (an administrator edits the name without retyping it).
func (s *Service) Update(ctx context.Context, id int64, in Input) (Credential, error) {
	in, err := s.check(ctx, in, false)
	if err != nil {
		return Credential{}, err
	}
	var row db.StoredCredential
	err = s.store.InTx(ctx, func(q *db.Queries) error {
		row, err = q.CredentialUpdate(ctx, db.CredentialUpdateParams{ID: id, Name: in.Name, ConnectionType: in.ConnectionType,
			CredentialType: in.CredentialType, Username: in.Username, Domain: in.Domain, SiteID: in.SiteID})
		if err != nil || in.Password == nil {
			return notFound(err, id)
		}
		row.PasswordSealed, row.PasswordKeyID, err = s.seal(ctx, q, id, *in.Password)
		return err
	})
	if err != nil {
		return Credential{}, nameTaken(err, in.Name)
	}
	return s.view(row), nil
}

// Delete removes a credential.
func (s *Service) Delete(ctx context.Context, id int64) error {
	n, err := s.store.CredentialDelete(ctx, id)
	if err != nil {
		return err
	}
	if n == 0 {
		return cairn.Errorf(cairn.ECodeNotFound, "credential %d not found", id)
	}
	return nil
}

// Reveal decrypts a credential for a session on a device of siteID. It
// re-checks everything a row could have lost since it was written (site,
// types, content) before decrypting, so a caller never gets a half-valid
// secret.
func (s *Service) Reveal(ctx context.Context, id int64, siteID cairn.SiteID) (Secret, error) {
	r, err := s.store.CredentialGet(ctx, db.CredentialGetParams{ID: id, AllSites: true})
	if err != nil {
		return Secret{}, notFound(err, id)
	}
	if r.SiteID != nil && *r.SiteID != siteID {
		return Secret{}, cairn.Errorf(cairn.ECodeForbidden, "credential %d belongs to another site", id)
	}
	if !oneOf(r.ConnectionType, ConnWindows, ConnWinRM) || !oneOf(r.CredentialType, TypeMachine, TypeDomain) ||
		strings.TrimSpace(r.Username) == "" || (r.CredentialType == TypeDomain && r.Domain == "") || len(r.PasswordSealed) == 0 {
		return Secret{}, cairn.Errorf(cairn.ECodeConflict, "credential %d is incomplete; edit it and save it again", id)
	}
	if key := s.cipher.KeyID(); key != nil && !bytes.Equal(r.PasswordKeyID, key) {
		return Secret{}, unreadable(id)
	}
	plain, err := s.cipher.Open(r.PasswordSealed, aad(id))
	if errors.Is(err, aegis.ErrForeignKey) {
		return Secret{}, unreadable(id)
	} else if err != nil {
		return Secret{}, err
	}
	return Secret{ConnectionType: r.ConnectionType, CredentialType: r.CredentialType, Username: r.Username,
		Domain: r.Domain, Password: string(plain)}, nil
}

// check normalizes and validates in, reporting every bad field at once.
func (s *Service) check(ctx context.Context, in Input, create bool) (Input, error) {
	in.Name = strings.TrimSpace(in.Name)
	in.Username = strings.TrimSpace(in.Username)
	in.Domain = strings.TrimSpace(in.Domain)
	var v cairn.Validation
	checkText(&v, "name", in.Name, maxName, true)
	if !oneOf(in.ConnectionType, ConnWindows, ConnWinRM) {
		v.Add("connection_type", "must be Windows or WinRM")
	}
	if !oneOf(in.CredentialType, TypeMachine, TypeDomain) {
		v.Add("credential_type", "must be Machine or Domain")
	}
	checkText(&v, "username", in.Username, maxUsername, true)
	switch {
	case in.CredentialType == TypeDomain && in.Domain == "":
		v.Add("domain", "is required for a Domain credential")
	case in.CredentialType == TypeMachine && in.Domain != "":
		v.Add("domain", "must be empty for a Machine credential")
	case len(in.Domain) > maxDomain:
		v.Add("domain", fmt.Sprintf("must be at most %d characters", maxDomain))
	case in.Domain != "" && !domainPattern.MatchString(in.Domain):
		v.Add("domain", "must be a NetBIOS or DNS name: letters, digits, '.', '-' and '_'")
	}
	switch {
	case in.Password == nil && create:
		v.Add("password", "is required")
	case in.Password != nil && *in.Password == "":
		v.Add("password", "must not be empty; leave it out to keep the stored password")
	case in.Password != nil:
		checkText(&v, "password", *in.Password, maxPassword, false)
	}
	if in.SiteID != nil {
		if *in.SiteID <= 0 {
			v.Add("site_id", "must be a positive site ID or null for a global credential")
		} else if ok, err := s.store.CredentialSiteExists(ctx, *in.SiteID); err != nil {
			return in, err
		} else if !ok {
			v.Add("site_id", fmt.Sprintf("site %d does not exist", *in.SiteID))
		}
	}
	return in, v.Err()
}

// checkText bounds a text field and refuses control characters (they have
// no place in a name or a Windows sign-in and break logs and grids).
func checkText(v *cairn.Validation, field, val string, maxLen int, required bool) {
	n := len([]rune(val))
	switch {
	case n == 0 && required:
		v.Add(field, "is required")
	case n > maxLen:
		v.Add(field, fmt.Sprintf("must be at most %d characters", maxLen))
	case strings.ContainsFunc(val, unicode.IsControl):
		v.Add(field, "must not contain control characters")
	}
}

func (s *Service) seal(ctx context.Context, q *db.Queries, id int64, password string) ([]byte, []byte, error) {
	key := s.cipher.KeyID()
	sealed, err := s.cipher.Seal([]byte(password), aad(id))
	if err != nil {
		return nil, nil, err
	}
	return sealed, key, q.CredentialSetPassword(ctx, db.CredentialSetPasswordParams{ID: id, PasswordSealed: sealed, PasswordKeyID: key})
}

func (s *Service) view(r db.StoredCredential) Credential {
	status := StatusOK
	if !bytes.Equal(r.PasswordKeyID, s.cipher.KeyID()) {
		status = StatusUnread
	}
	return Credential{ID: r.ID, Name: r.Name, ConnectionType: r.ConnectionType, CredentialType: r.CredentialType,
		Username: r.Username, Domain: r.Domain, SiteID: r.SiteID, HasPassword: len(r.PasswordSealed) > 0,
		SecretStatus: status, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}

// aad binds a sealed password to its row.
func aad(id int64) []byte {
	return []byte("cairn:credential:" + strconv.FormatInt(id, 10) + ":password")
}

func oneOf(v string, allowed ...string) bool {
	for _, a := range allowed {
		if v == a {
			return true
		}
	}
	return false
}

func notFound(err error, id int64) error { return db.NotFound(err, "credential %d not found", id) }

func nameTaken(err error, name string) error {
	if db.IsUniqueViolation(err, nameUniqueKey) {
		return &cairn.Error{Code: cairn.ECodeConflict, Message: "another credential of that scope has this name",
			Fields: map[string]string{"name": fmt.Sprintf("%q is already used in this scope", name)}}
	}
	return err
}

func unreadable(id int64) error {
	return &cairn.Error{Code: cairn.ECodeConflict,
		Message: fmt.Sprintf("credential %d was sealed by a master cipher that was since reset; set its password again", id),
		Fields:  map[string]string{"password": "is unreadable after the master-cipher reset; set it again"}}
}
