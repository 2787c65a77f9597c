// Package pgtest gives every test its own PostgreSQL database, cloned from a
// migrated template so tests run in parallel on real PostgreSQL. The
// server is DATABASE_URL (`make test` starts one private cluster for the
// whole suite); without it, Main starts a private cluster for the test
// binary.
package pgtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devpostgres"
)

var (
	serverURL string
	tplOnce   sync.Once
	tplName   string
	tplErr    error
	// CREATE DATABASE ... TEMPLATE refuses while another clone of the same
	// template is being made in this process; serialize them here.
	cloneMu sync.Mutex
)

// Main runs a package's tests; call it from TestMain.
func Main(m *testing.M) int {
	serverURL = os.Getenv("DATABASE_URL")
	if serverURL == "" {
		dir, err := os.MkdirTemp("", "cairn-pgtest-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
			return 1
		}
		defer os.RemoveAll(dir)
		// MkdirTemp makes the directory private; the postgres OS user (when
		// tests run as root) must be able to traverse it.
		if err := os.Chmod(dir, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
			return 1
		}
		cluster, err := devpostgres.Start(context.Background(), devpostgres.Options{Dir: dir + "/pg", InstallIfMissing: true})
		if err != nil {
			fmt.Fprintln(os.Stderr, "pgtest: start PostgreSQL:", err)
			return 1
		}
		defer cluster.Stop()
		serverURL = cluster.URL
	}
	return m.Run()
}

// URL returns the URL of database name on the test server.
func URL(name string) string {
	u, err := url.Parse(serverURL)
	if err != nil {
		panic(err)
	}
	u.Path = "/" + name
	return u.String()
}

// NewDB creates an empty, migrated database for t and drops it afterwards.
func NewDB(t testing.TB) *db.Store {
	t.Helper()
	name := NewDatabase(t)
	ctx := context.Background()
	store, err := db.Open(ctx, URL(name))
	if err != nil {
		t.Fatalf("pgtest: open %s: %v", name, err)
	}
	t.Cleanup(store.Close)
	return store
}

// NewDatabase creates a migrated database for t and returns its name.
func NewDatabase(t testing.TB) string {
	t.Helper()
	if serverURL == "" {
		t.Fatal("pgtest: call pgtest.Main from TestMain")
	}
	tplOnce.Do(func() { tplName, tplErr = ensureTemplate() })
	if tplErr != nil {
		t.Fatalf("pgtest: template: %v", tplErr)
	}
	name := "cairn_test_" + randomHex(6)
	ctx := context.Background()
	cloneMu.Lock()
	err := retry(func() error { return devpostgres.CreateDatabase(ctx, URL("postgres"), name, tplName) })
	cloneMu.Unlock()
	if err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		if err := devpostgres.DropDatabase(context.Background(), URL("postgres"), name); err != nil {
			t.Logf("pgtest: drop %s: %v", name, err)
		}
	})
	return name
}

// ensureTemplate creates the template for the current migrations once per
// server; test binaries running at the same time coordinate through an
// advisory lock.
func ensureTemplate() (string, error) {
	ctx := context.Background()
	name := "cairn_tpl_" + migrationsHash()
	conn, err := pgx.Connect(ctx, URL("postgres"))
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	// Harness-only SQL: lock and catalog lookups on the test server.
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock(7263)"); err != nil {
		return "", err
	}
	defer conn.Exec(ctx, "SELECT pg_advisory_unlock(7263)") //nolint:errcheck
	var ready bool
	err = conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1 AND datistemplate)", name).Scan(&ready)
	if err != nil || ready {
		return name, err
	}
	if err := devpostgres.DropDatabase(ctx, URL("postgres"), name); err != nil {
		return "", err
	}
	if err := devpostgres.CreateDatabase(ctx, URL("postgres"), name, ""); err != nil {
		return "", err
	}
	if err := db.Migrate(ctx, URL(name)); err != nil {
		return "", err
	}
	// Marking it a template last means a half-made one is never used.
	_, err = conn.Exec(ctx, "UPDATE pg_database SET datistemplate = true WHERE datname = $1", name)
	return name, err
}

func migrationsHash() string {
	h := sha256.New()
	var names []string
	_ = fs.WalkDir(db.Migrations(), ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, p)
		}
		return nil
	})
	sort.Strings(names)
	for _, n := range names {
		b, _ := fs.ReadFile(db.Migrations(), n)
		h.Write([]byte(n))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

func retry(f func() error) error {
	var err error
	for i := 0; i < 20; i++ {
		if err = f(); err == nil || !strings.Contains(err.Error(), "being accessed by other users") {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
