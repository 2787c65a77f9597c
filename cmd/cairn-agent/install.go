package main

import (
	"context"
	"flag"
	"io"
	"os"
	"os/signal"

	"github.com/cairn-rmm/cairn/agent/service"
)

// install: cairn-agent install [--config PATH] [--binary PATH] [--unit-dir DIR] [--no-start] [--hostname NAME]
// [--server URL --code CODE [--ca-file PEM [--trust-public-cas]] [--server-ip-fallback IP]]
//
// With --server and --code it enrolls first (exactly as enroll does, waiting
// for approval; nothing to do when already enrolled with that code), so the
// one-line installer the console shows is download, then install.
func install(ctx context.Context, configPath string, args []string, stdout, stderr io.Writer, h host) error {
	fs := newFlagSet("install")
	fs.StringVar(&configPath, "config", configPath, "")
	binary := fs.String("binary", "", "")
	unitDir := fs.String("unit-dir", service.DefaultUnitDir, "")
	noStart := fs.Bool("no-start", false, "")
	// The name given to enroll --hostname, kept for run: agent.json does
	// not hold the reported hostname.
	hostname := fs.String("hostname", "", "")
	server := fs.String("server", "", "")
	code := fs.String("code", "", "")
	caFile := fs.String("ca-file", "", "")
	trustPublic := fs.Bool("trust-public-cas", false, "")
	fallback := fs.String("server-ip-fallback", "", "")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *server != "" || *code != "" {
		if *server == "" || *code == "" {
			return usagef("install enrolls only with both --server URL and --code CODE")
		}
		enrollArgs := []string{"--config", configPath, "--server", *server, "--code", *code}
		for _, f := range []struct{ name, value string }{{"ca-file", *caFile}, {"server-ip-fallback", *fallback}, {"hostname", *hostname}} {
			if f.value != "" {
				enrollArgs = append(enrollArgs, "--"+f.name, f.value)
			}
		}
		if *trustPublic {
			enrollArgs = append(enrollArgs, "--trust-public-cas")
		}
		if err := enroll(ctx, configPath, enrollArgs, stdout, stderr, h); err != nil {
			return err
		}
	} else if *caFile != "" || *fallback != "" || *trustPublic {
		return usagef("--ca-file, --trust-public-cas and --server-ip-fallback go with --server and --code")
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	_, err := service.Install(ctx, service.InstallOptions{
		ConfigPath: configPath,
		Binary:     *binary,
		UnitDir:    *unitDir,
		NoStart:    *noStart,
		Hostname:   *hostname,
		Out:        stdout,
	})
	return err
}

// uninstall: cairn-agent uninstall [--config PATH] [--unit-dir DIR] [--purge]
func uninstall(configPath string, args []string, stdout io.Writer) error {
	fs := newFlagSet("uninstall")
	fs.StringVar(&configPath, "config", configPath, "")
	unitDir := fs.String("unit-dir", service.DefaultUnitDir, "")
	purge := fs.Bool("purge", false, "")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	_, err := service.Uninstall(ctx, service.UninstallOptions{
		ConfigPath: configPath,
		UnitDir:    *unitDir,
		Purge:      *purge,
		Out:        stdout,
	})
	return err
}

// newFlagSet parses a subcommand's flags quietly: run prints the usage
// for a usageError itself.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return usagef("%s: %s", fs.Name(), err)
	}
	if fs.NArg() > 0 {
		return usagef("%s takes no arguments, got %q", fs.Name(), fs.Arg(0))
	}
	// A path, URL or name flag given as "" is a mistake, never a request
	// for the default.
	var empty string
	fs.Visit(func(f *flag.Flag) {
		if empty == "" && f.Value.String() == "" {
			empty = f.Name
		}
	})
	if empty != "" {
		return usagef("--%s needs a value", empty)
	}
	return nil
}
