package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"regexp"
	"strings"

	"github.com/alexedwards/argon2id"

	"github.com/cairn-rmm/cairn"
)

const (
	minPassword = 12
	maxPassword = 256
)

var usernamePattern = regexp.MustCompile(`^[a-z0-9._@-]{3,64}$`)

// NormalizeUsername trims and lower-cases; usernames are case-insensitive.
func NormalizeUsername(u string) string { return strings.ToLower(strings.TrimSpace(u)) }

// UsernameProblem says what is wrong with a (normalized) new username, or "".
func UsernameProblem(u string) string {
	if !usernamePattern.MatchString(u) {
		return "must be 3 to 64 characters: letters, digits, '.', '_', '-' or '@'"
	}
	return ""
}

// PasswordProblem says what is wrong with a new password, or "".
func PasswordProblem(p string) string {
	n := len([]rune(p))
	switch {
	case n < minPassword:
		return fmt.Sprintf("must be at least %d characters", minPassword)
	case n > maxPassword:
		return fmt.Sprintf("must be at most %d characters", maxPassword)
	}
	return ""
}

// CheckPassword validates a new password as request field.
func CheckPassword(field, p string) error {
	if pr := PasswordProblem(p); pr != "" {
		return cairn.Invalid(field, pr)
	}
	return nil
}

// PasswordParams are the argon2id costs for operator passwords.
type PasswordParams = argon2id.Params

// DefaultPasswordParams: 64 MiB, one pass, two lanes (OWASP's argon2id floor
// is 19 MiB, t=2; this is stronger in memory and costs ~60 ms here).
var DefaultPasswordParams = argon2id.Params{Memory: 64 * 1024, Iterations: 1, Parallelism: 2, SaltLength: 16, KeyLength: 32}

func hashPassword(p string, params *argon2id.Params) (string, error) {
	return argon2id.CreateHash(p, params)
}

func verifyPassword(p, encoded string) (bool, error) {
	return argon2id.ComparePasswordAndHash(p, encoded)
}

// newToken returns a random URL-safe token and its SHA-256 hash.
func newToken() (string, []byte) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic("auth: crypto/rand failed: " + err.Error())
	}
	tok := base64.RawURLEncoding.EncodeToString(b)
	return tok, HashToken(tok)
}

// NewToken returns a random URL-safe token and its SHA-256 hash, for
// other sign-in steps (passkey ceremonies) that store only the hash.
func NewToken() (string, []byte) { return newToken() }

// HashToken is how session, CSRF and recovery tokens are stored.
func HashToken(tok string) []byte {
	h := sha256.Sum256([]byte(tok))
	return h[:]
}
