package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/service"
)

// TestInstallUninstall runs the commands into a temporary unit directory
// with --no-start and an explicit --binary, so nothing on the host changes
// (uninstall asks systemd, when it runs, only whether it loaded this very
// file; it did not). --purge is covered in agent/service, where the copied
// binary's location can be redirected.
func TestInstallUninstall(t *testing.T) {
	t.Parallel()
	path := setup(t)
	unitDir := filepath.Join(t.TempDir(), "units")
	bin := filepath.Join(t.TempDir(), "cairn-agent")
	require.NoError(t, os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755))

	code, out, errOut := runCLI("install", "--config", path, "--binary", bin, "--unit-dir", unitDir, "--no-start")
	require.Equal(t, 0, code, errOut)
	unitPath := filepath.Join(unitDir, service.UnitName)
	info, err := os.Stat(unitPath)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), info.Mode().Perm())
	unit, err := os.ReadFile(unitPath)
	require.NoError(t, err)
	require.Contains(t, string(unit), "\nExecStart="+bin+" run --config "+path+"\n")
	require.Contains(t, out, "using binary "+bin+"\n")
	require.Contains(t, out, "wrote "+unitPath+" (mode 0644)\n")
	require.Contains(t, out, "not started (--no-start)")

	// The global --config form works too, and a reinstall rewrites the unit.
	code, _, errOut = runCLI("--config", path, "install", "--binary", bin, "--unit-dir", unitDir, "--no-start")
	require.Equal(t, 0, code, errOut)

	code, out, errOut = runCLI("--config", path, "uninstall", "--unit-dir", unitDir)
	require.Equal(t, 0, code, errOut)
	require.NoFileExists(t, unitPath)
	require.FileExists(t, path, "agent.json stays without --purge")
	require.Contains(t, out, "removed "+unitPath+"\n")
	require.Contains(t, out, "kept "+path)

	code, out, errOut = runCLI("uninstall", "--config", path, "--unit-dir", unitDir)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "no unit at "+unitPath)
}

func TestInstallBadInput(t *testing.T) {
	t.Parallel()
	path := setup(t)
	unitDir := t.TempDir()
	missing := filepath.Join(t.TempDir(), "agent.json")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"install", "--config", missing, "--unit-dir", unitDir, "--no-start"}, 1, "enroll the agent first"},
		{[]string{"install", "--config", path, "--unit-dir", unitDir, "--binary", filepath.Join(unitDir, "nope"), "--no-start"}, 1, "--binary"},
		{[]string{"install", "--config", path, "extra"}, 2, `install takes no arguments, got "extra"`},
		{[]string{"install", "--unit-dir"}, 2, "flag needs an argument"},
		{[]string{"install", "--binary="}, 2, "--binary needs a value"},
		{[]string{"install", "--start"}, 2, "flag provided but not defined: -start"},
		{[]string{"uninstall", "--config", path, "--no-start"}, 2, "not defined: -no-start"},
	} {
		code, _, errOut := runCLI(tc.args...)
		require.Equal(t, tc.code, code, "%q: %s", tc.args, errOut)
		require.Contains(t, errOut, tc.want, "%q", tc.args)
	}
	entries, err := os.ReadDir(unitDir)
	require.NoError(t, err)
	require.Empty(t, entries, "refused installs write nothing")
}
