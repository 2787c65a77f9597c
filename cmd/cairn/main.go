// Command cairn is the Engine: `cairn serve` runs the API, the console and
// (by default) every site worker; `cairn worker --site SLUG` runs site
// workers alone; `cairn migrate` applies migrations.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/cairn-rmm/cairn/internal/aegis"
	"github.com/cairn-rmm/cairn/internal/auth"
	"github.com/cairn-rmm/cairn/internal/devpostgres"
	"github.com/cairn-rmm/cairn/internal/logs"
)

const usage = `usage: cairn <command> [flags]

commands:
  serve                  run the Engine (API, console, site workers)
  worker --site SLUG...  run the workers of some sites only (scale-out)
  migrate                apply database migrations and exit
  cluster join           ask a running Engine to admit this process (join code, then an admin's approval)
  gateway                run the WireGuard and remote-desktop gateway apart (no database credentials)
  command CMD            run an operator bridge command (POST /v1/command) under an Internal key
  admin recovery-code    issue a new one-time administrator recovery code
  dev-postgres -- CMD    run CMD with DATABASE_URL pointing at a private cluster
  temporal-server        run a Temporal server on PostgreSQL (DATABASE_URL's server) for replicas and workers to share
  sign-artifact          make an offline artifact key, or sign an agent binary with it

Run "cairn <command> -h" for its flags.`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "serve":
		err = serve(ctx, args)
	case "worker":
		err = runWorker(ctx, args)
	case "migrate":
		err = migrate(ctx, args)
	case "cluster":
		err = runCluster(ctx, args, os.Stdout)
	case "command":
		err = runCommand(ctx, args, os.Stdout)
	case "gateway":
		err = runGateway(ctx, args)
	case "admin":
		err = admin(ctx, args)
	case "dev-postgres":
		err = devPostgres(ctx, args)
	case "temporal-server":
		err = runTemporalServer(ctx, args)
	case "sign-artifact":
		err = signArtifact(args, os.Stdout)
	case "-h", "--help", "help":
		fmt.Println(usage)
	default:
		fmt.Fprintf(os.Stderr, "unknown command %q\n\n%s\n", cmd, usage)
		os.Exit(2)
	}
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			os.Exit(exit.ExitCode())
		}
		fmt.Fprintln(os.Stderr, "cairn:", err)
		os.Exit(1)
	}
}

func migrate(ctx context.Context, args []string) error {
	c, err := loadConfig(flag.NewFlagSet("migrate", flag.ExitOnError), args)
	if err != nil {
		return err
	}
	rt := &runtime{log: newLogger(c.LogFormat, c.LogLevel)}
	defer rt.close()
	if err := rt.openDatabase(ctx, c); err != nil {
		return err
	}
	fmt.Println("migrations applied")
	return nil
}

func admin(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "recovery-code" {
		return errors.New("usage: cairn admin recovery-code")
	}
	c, err := loadConfig(flag.NewFlagSet("admin", flag.ExitOnError), args[1:])
	if err != nil {
		return err
	}
	rt := &runtime{log: newLogger(c.LogFormat, c.LogLevel)}
	defer rt.close()
	if err := rt.openDatabase(ctx, c); err != nil {
		return err
	}
	svc, err := auth.NewService(ctx, rt.store, aegis.New(aegis.PGStore{Q: rt.store.Queries}, aegis.DefaultKDF), auth.Config{})
	if err != nil {
		return err
	}
	code, err := svc.IssueRecoveryCode(ctx)
	if err != nil {
		return err
	}
	fmt.Println(code)
	return nil
}

// devPostgres starts a private cluster, runs the command after "--" with
// DATABASE_URL set to it, and stops the cluster. `make test` uses it so the
// whole suite shares one cluster.
func devPostgres(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("dev-postgres", flag.ExitOnError)
	dir := fs.String("dir", filepath.Join(".data", "test-postgres"), "cluster directory")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cmdArgs := fs.Args()
	if len(cmdArgs) == 0 {
		return errors.New("usage: cairn dev-postgres [--dir DIR] -- COMMAND [ARGS...]")
	}
	cluster, err := devpostgres.Start(ctx, devpostgres.Options{Dir: *dir, Logger: newLogger(logs.FormatText, 0), InstallIfMissing: true})
	if err != nil {
		return err
	}
	defer cluster.Stop()
	cmd := exec.Command(cmdArgs[0], cmdArgs[1:]...)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+cluster.URL)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		_ = cmd.Process.Signal(syscall.SIGTERM)
		return <-done
	}
}

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }
