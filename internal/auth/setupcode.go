package auth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base32"
	"strings"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
)

// ECodeSetupCodeRequired answers a first-run setup step sent without the
// setup code, or with a wrong one (HTTP 403).
const ECodeSetupCodeRequired = "setup_code_required"

// The first-run setup code keeps a fresh deployment from belonging to
// whoever reaches its port first: `cairn serve` issues one while setup is
// unfinished and prints it only to its own terminal and log (and its data
// directory), and the setup steps that create the cipher and the first
// administrator refuse callers without it. Only hashes are stored, in
// PostgreSQL, one row per code, so every replica accepts a code any
// replica printed. Finishing setup deletes them all.

var errSetupCode = cairn.Errorf(ECodeSetupCodeRequired,
	"enter the setup code that `cairn serve` printed to its terminal and log (it is also in the file setup-code in its data directory)")

// SetupPending reports whether first-run setup is unfinished: no master
// cipher (a fresh deployment, or one whose cipher was force-reset), or no
// administrator who finished setup or awaits recovery.
func (s *Service) SetupPending(ctx context.Context) (bool, error) {
	st, err := s.cipher.Status(ctx)
	if err != nil {
		return false, err
	}
	if !st.Configured {
		return true, nil
	}
	c, err := s.store.UserCounts(ctx)
	if err != nil {
		return false, err
	}
	return c.ReadyAdmins == 0 && c.FlaggedAdmins == 0, nil
}

// IssueSetupCode creates a setup code and stores its hash. `cairn serve`
// calls it while setup is pending; in-process tests call it to play the
// operator who reads the terminal.
func (s *Service) IssueSetupCode(ctx context.Context) (string, error) {
	code := newSetupCode()
	return code, s.store.SetupCodeInsert(ctx, setupCodeHash(code))
}

// checkSetupCode accepts a code that matches any issued one. Every stored
// hash is compared, in constant time, so the answer's timing says nothing
// about how close a guess came.
func (s *Service) checkSetupCode(ctx context.Context, code string) error {
	if normalizeSetupCode(code) == "" {
		return errSetupCode
	}
	hashes, err := s.store.SetupCodeHashes(ctx)
	if err != nil {
		return err
	}
	want := setupCodeHash(code)
	match := 0
	for _, h := range hashes {
		match |= subtle.ConstantTimeCompare(h, want)
	}
	if match != 1 {
		return errSetupCode
	}
	return nil
}

// spendSetupCodes ends every setup code: setup is finished.
func spendSetupCodes(ctx context.Context, q *db.Queries) error { return q.SetupCodeDeleteAll(ctx) }

// newSetupCode is 100 random bits as four groups of five base32 letters
// and digits, easy to read off a terminal and type.
func newSetupCode() string {
	b := make([]byte, 13)
	if _, err := rand.Read(b); err != nil {
		panic("auth: crypto/rand failed: " + err.Error())
	}
	s := base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b)[:20]
	return s[0:5] + "-" + s[5:10] + "-" + s[10:15] + "-" + s[15:20]
}

// normalizeSetupCode forgives case, spaces and dashes, as people type
// codes they read.
func normalizeSetupCode(code string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '-' || r == ' ' || r == '\t':
			return -1
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		}
		return r
	}, code)
}

func setupCodeHash(code string) []byte { return HashToken(normalizeSetupCode(code)) }
