// Package devpostgres runs a private PostgreSQL cluster from the system's
// binaries, for `make run` and `make test` when DATABASE_URL is unset. The
// cluster lives in a directory of its own (data, password, log), listens on
// 127.0.0.1 only with password authentication, and keeps its data between
// runs. initdb refuses to run as root, so as root the cluster runs as the
// `postgres` OS user.
package devpostgres

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Cluster is a running private cluster.
type Cluster struct {
	// URL connects to the `cairn` database as the `cairn` superuser.
	URL  string
	Base string
	Port int

	cmd    *exec.Cmd
	exited chan error
	admin  string // URL of the maintenance database
}

// Options configure Start.
type Options struct {
	// Dir holds the cluster (created when missing).
	Dir string
	// Database is created when missing; default "cairn".
	Database string
	Logger   *slog.Logger
	// InstallIfMissing lets Start apt-get install postgresql when running as
	// root and no binaries are found.
	InstallIfMissing bool
	// Port is the port to listen on; 0 picks a free one. The fault suite
	// restarts a cluster on the port its Engine knows.
	Port int
}

const superuser = "cairn"

// Start initializes the cluster on first use and starts it on a free port.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	if o.Database == "" {
		o.Database = "cairn"
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	bin, err := findBinaries(o)
	if err != nil {
		return nil, err
	}
	runAs, err := runAsUser()
	if err != nil {
		return nil, err
	}
	base, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	if runAs != nil && !traversable(filepath.Dir(base), runAs) {
		// The postgres user cannot reach the project directory (for example
		// under /root). Only root gets here, so keep the cluster in a
		// persistent place it can reach (not /tmp, which a reboot may wipe).
		sum := sha256.Sum256([]byte(base))
		alt := filepath.Join("/var/lib/cairn", "postgres-"+hex.EncodeToString(sum[:6]))
		o.Logger.Info("the postgres user cannot reach the data directory; using another", "wanted", base, "using", alt)
		base = alt
	}
	// Parents must stay traversable for the postgres user; the cluster
	// directory itself is private to it.
	if err := os.MkdirAll(filepath.Dir(base), 0o755); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(base, 0o700); err != nil {
		return nil, err
	}
	if err := chownTree(base, runAs); err != nil {
		return nil, err
	}
	data := filepath.Join(base, "data")
	pwFile := filepath.Join(base, "password")
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); errors.Is(err, os.ErrNotExist) {
		if err := initCluster(ctx, bin, base, data, pwFile, runAs, o.Logger); err != nil {
			return nil, err
		}
	}
	pw, err := os.ReadFile(pwFile)
	if err != nil {
		return nil, fmt.Errorf("read cluster password: %w", err)
	}
	port := o.Port
	if port == 0 {
		if port, err = freePort(); err != nil {
			return nil, err
		}
	}
	c := &Cluster{Base: base, Port: port, exited: make(chan error, 1)}
	if err := c.startServer(bin, data, runAs); err != nil {
		return nil, err
	}
	u := url.URL{Scheme: "postgres", User: url.UserPassword(superuser, strings.TrimSpace(string(pw))),
		Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), RawQuery: "sslmode=disable"}
	u.Path = "/postgres"
	c.admin = u.String()
	u.Path = "/" + o.Database
	c.URL = u.String()
	if err := c.waitReady(ctx, 60*time.Second); err != nil {
		c.Stop()
		return nil, err
	}
	if err := c.CreateDatabase(ctx, o.Database, ""); err != nil {
		c.Stop()
		return nil, err
	}
	o.Logger.Info("private PostgreSQL cluster started", "dir", base, "port", port)
	return c, nil
}

// AdminURL connects to the cluster's maintenance database.
func (c *Cluster) AdminURL() string { return c.admin }

// CreateDatabase creates name (optionally from template) unless it exists.
func (c *Cluster) CreateDatabase(ctx context.Context, name, template string) error {
	return CreateDatabase(ctx, c.admin, name, template)
}

// CreateDatabase creates database name on the server of adminURL unless it
// exists. This is cluster administration for the dev and test harness, so
// its DDL lives here rather than in db/queries (identifiers cannot be bound
// parameters).
func CreateDatabase(ctx context.Context, adminURL, name, template string) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil
	}
	stmt := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
	if template != "" {
		stmt += " TEMPLATE " + pgx.Identifier{template}.Sanitize()
	}
	_, err = conn.Exec(ctx, stmt)
	return err
}

// DropDatabase drops name, ending its connections.
func DropDatabase(ctx context.Context, adminURL, name string) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	return err
}

// Stop shuts the server down (fast shutdown) and waits for it.
func (c *Cluster) Stop() {
	if c.cmd == nil || c.cmd.Process == nil {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-c.exited:
	case <-time.After(30 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.exited
	}
	c.cmd = nil
}

type binaries struct{ initdb, postgres string }

func findBinaries(o Options) (binaries, error) {
	if b, ok := lookBinaries(); ok {
		return b, nil
	}
	if o.InstallIfMissing && os.Geteuid() == 0 {
		if _, err := exec.LookPath("apt-get"); err == nil {
			o.Logger.Info("PostgreSQL binaries not found; installing the postgresql package with apt-get")
			for _, args := range [][]string{{"update"}, {"install", "-y", "--no-install-recommends", "postgresql"}} {
				cmd := exec.Command("apt-get", args...)
				cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
				cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
				if err := cmd.Run(); err != nil {
					return binaries{}, fmt.Errorf("apt-get %s: %w", args[0], err)
				}
			}
			if b, ok := lookBinaries(); ok {
				return b, nil
			}
		}
	}
	return binaries{}, errors.New("PostgreSQL server binaries (initdb, postgres) were not found: install them " +
		"(Debian/Ubuntu: sudo apt-get install postgresql) or set DATABASE_URL to an existing database")
}

func lookBinaries() (binaries, bool) {
	dirs := []string{}
	if p, err := exec.LookPath("initdb"); err == nil {
		dirs = append(dirs, filepath.Dir(p))
	}
	// Debian keeps server binaries out of PATH, one directory per version.
	versions, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(versions, func(i, j int) bool { return pgMajor(versions[i]) > pgMajor(versions[j]) })
	dirs = append(dirs, versions...)
	for _, d := range dirs {
		b := binaries{initdb: filepath.Join(d, "initdb"), postgres: filepath.Join(d, "postgres")}
		if isExec(b.initdb) && isExec(b.postgres) {
			return b, true
		}
	}
	return binaries{}, false
}

func pgMajor(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode()&0o111 != 0
}

// runAsUser returns the postgres OS user when running as root, else nil.
func runAsUser() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, errors.New("running as root, and initdb refuses root: create a `postgres` user " +
			"(installing the postgresql package does) or run as an unprivileged user, or set DATABASE_URL")
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// traversable reports whether every directory from / down to dir lets cred
// through (execute permission for its owner, group or others).
func traversable(dir string, cred *syscall.Credential) bool {
	for d := dir; ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				if d == filepath.Dir(d) {
					return true
				}
				continue // will be created by us, with our permissions below
			}
			return false
		}
		sys, ok := st.Sys().(*syscall.Stat_t)
		mode := st.Mode().Perm()
		switch {
		case !ok:
			return false
		case sys.Uid == cred.Uid:
			if mode&0o100 == 0 {
				return false
			}
		case sys.Gid == cred.Gid:
			if mode&0o010 == 0 {
				return false
			}
		default:
			if mode&0o001 == 0 {
				return false
			}
		}
		if d == filepath.Dir(d) {
			return true
		}
	}
}

func chownTree(dir string, cred *syscall.Credential) error {
	if cred == nil {
		return nil
	}
	return filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(cred.Uid), int(cred.Gid))
	})
}

func initCluster(ctx context.Context, bin binaries, base, data, pwFile string, runAs *syscall.Credential, log *slog.Logger) error {
	log.Info("initializing private PostgreSQL cluster", "dir", data)
	pw := make([]byte, 24)
	if _, err := rand.Read(pw); err != nil {
		return err
	}
	if err := os.WriteFile(pwFile, []byte(hex.EncodeToString(pw)+"\n"), 0o600); err != nil {
		return err
	}
	if err := chownTree(base, runAs); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, bin.initdb, "-D", data, "-U", superuser, "--pwfile", pwFile,
		"-A", "scram-sha-256", "-E", "UTF8", "--locale", "C.UTF-8", "--no-instructions")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: runAs}
	cmd.Dir = base
	if out, err := cmd.CombinedOutput(); err != nil {
		_ = os.RemoveAll(data)
		return fmt.Errorf("initdb: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (c *Cluster) startServer(bin binaries, data string, runAs *syscall.Credential) error {
	logFile, err := os.OpenFile(filepath.Join(c.Base, "postgres.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(bin.postgres, "-D", data, "-p", strconv.Itoa(c.Port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+c.Base,
		"-c", "max_connections=300", "-c", "fsync=on")
	// Its own process group, so Ctrl-C reaches only the Engine, which then
	// stops the cluster in order; Pdeathsig stops it if the Engine dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: runAs, Setpgid: true, Pdeathsig: syscall.SIGINT}
	cmd.Dir = c.Base
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("start postgres: %w", err)
	}
	c.cmd = cmd
	go func() { c.exited <- cmd.Wait(); logFile.Close() }()
	return nil
}

func (c *Cluster) waitReady(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		conn, err := pgx.Connect(ctx, c.admin)
		if err == nil {
			conn.Close(ctx)
			return nil
		}
		select {
		case exitErr := <-c.exited:
			c.exited <- exitErr
			return fmt.Errorf("postgres exited during start (see %s): %v", filepath.Join(c.Base, "postgres.log"), exitErr)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres did not accept connections within %s: %w", limit, err)
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
