package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/cairn-rmm/cairn/internal/auth"
)

// setupCodeFile is where `cairn serve` keeps its first-run setup code, for
// operators who read files rather than terminals (and for e2e tests).
const setupCodeFile = "setup-code"

// setupCode is this process's first-run setup code (docs/architecture.md
// "First-run setup code"): issued and shown while setup is pending,
// forgotten (and its file removed) once any replica finishes setup.
type setupCode struct {
	auth *auth.Service
	path string
	log  *slog.Logger

	mu   sync.Mutex
	code string // "" : none issued by this process, or setup finished
}

func newSetupCode(a *auth.Service, dataDir string, log *slog.Logger) *setupCode {
	return &setupCode{auth: a, path: filepath.Join(dataDir, setupCodeFile), log: log}
}

// reconcile issues a code when setup is pending and this process has none,
// or drops it when setup is finished; it returns a newly issued code.
func (s *setupCode) reconcile(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pending, err := s.auth.SetupPending(ctx)
	if err != nil {
		return "", err
	}
	if !pending {
		if s.code != "" {
			s.code = ""
			if err := os.Remove(s.path); err != nil && !os.IsNotExist(err) {
				return "", err
			}
		}
		return "", nil
	}
	if s.code != "" {
		return "", nil
	}
	code, err := s.auth.IssueSetupCode(ctx)
	if err != nil {
		return "", err
	}
	if err := writePrivateFile(s.path, code+"\n"); err != nil {
		return "", err
	}
	s.code = code
	s.log.Warn("Setup code: "+code, "file", s.path)
	return code, nil
}

// watch reconciles whenever the cipher is reset or setup finishes on any
// replica, and prints a code issued after start.
func (s *setupCode) watch(ctx context.Context, changes ...<-chan struct{}) {
	merged := make(chan struct{}, 1)
	for _, ch := range changes {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-ch:
					select {
					case merged <- struct{}{}:
					default:
					}
				}
			}
		}()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-merged:
		}
		code, err := s.reconcile(ctx)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Error("first-run setup code", "err", err)
			}
			continue
		}
		if code != "" {
			fmt.Fprintln(os.Stderr, "\n  "+setupCodeLine(code, s.path)+"\n")
		}
	}
}

func setupCodeLine(code, path string) string {
	return "Setup code: " + code + "   (the setup wizard asks for it; also in " + path + ")"
}

// writePrivateFile replaces path with content, readable by this user only,
// never leaving a partly written or wider-readable file behind.
func writePrivateFile(path, content string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".setup-code-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
