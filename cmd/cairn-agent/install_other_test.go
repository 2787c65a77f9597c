//go:build !linux && !windows

package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestInstallNotSupported(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"install", "uninstall"} {
		code, _, errOut := runCLI(cmd, "--unit-dir", t.TempDir())
		require.Equal(t, 1, code)
		require.Contains(t, errOut, "not supported on")
	}
}
