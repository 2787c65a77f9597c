//go:build !windows

package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// run --service is the Windows service control manager's command line;
// elsewhere it fails before the agent starts instead of running detached
// from any service manager.
func TestRunServiceFlagOnlyOnWindows(t *testing.T) {
	t.Parallel()
	path := setup(t)
	code, _, errOut := runCLI("--config", path, "run", "--service")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "--service is for the Windows service control manager")
}
