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
func install(configPath string, args []string, stdout io.Writer) error {
	fs := newFlagSet("install")
	fs.StringVar(&configPath, "config", configPath, "")
	binary := fs.String("binary", "", "")
	unitDir := fs.String("unit-dir", service.DefaultUnitDir, "")
	noStart := fs.Bool("no-start", false, "")
	// The name given to enroll --hostname, kept for run: agent.json does
	// not hold the reported hostname.
	hostname := fs.String("hostname", "", "")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
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
