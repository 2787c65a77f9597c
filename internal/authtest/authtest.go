// Package authtest holds what tests of sign-in need: a settable clock, cheap
// key-derivation costs, and TOTP codes from oathtool, an implementation of
// RFC 6238 independent of the one under test.
package authtest

import (
	"context"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairn-rmm/cairn/internal/aegis"
	"github.com/cairn-rmm/cairn/internal/auth"
)

// Cheap costs keep tests fast; production uses the defaults.
var (
	CheapKDF      = aegis.KDFParams{Time: 1, MemoryKiB: 1024, Threads: 1}
	CheapPassword = auth.PasswordParams{Memory: 1024, Iterations: 1, Parallelism: 1, SaltLength: 16, KeyLength: 32}
)

// Clock is a settable time source.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock starts at the beginning of the current TOTP step.
func NewClock() *Clock { return &Clock{t: time.Now().Truncate(30 * time.Second)} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

// Advance moves the clock on.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TOTP returns oathtool's code for secret at time at.
func TOTP(t testing.TB, secret string, at time.Time) string {
	t.Helper()
	out, err := exec.Command("oathtool", "--totp", "-b", "--now", at.UTC().Format("2006-01-02 15:04:05 UTC"), secret).Output()
	if err != nil {
		t.Fatalf("oathtool is needed for TOTP tests (make deps-test installs it): %v", err)
	}
	return strings.TrimSpace(string(out))
}

// SetupCode plays the operator who reads `cairn serve`'s terminal: it
// issues a first-run setup code, which the setup steps require.
func SetupCode(t testing.TB, svc *auth.Service) string {
	t.Helper()
	code, err := svc.IssueSetupCode(context.Background())
	if err != nil {
		t.Fatalf("issue a setup code: %v", err)
	}
	return code
}
