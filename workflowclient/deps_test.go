package workflowclient_test

import (
	"go/build"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Package workflows holds only deterministic workflow code: nothing in it
// (tests aside) may reach Temporal as a client. Starters, signals and
// schedules live here, in workflowclient.
func TestWorkflowsDoNotImportTheTemporalClient(t *testing.T) {
	t.Parallel()
	pkg, err := build.Import("github.com/cairn-rmm/cairn/workflows", ".", 0)
	require.NoError(t, err)
	require.NotEmpty(t, pkg.GoFiles)
	for _, imp := range pkg.Imports {
		require.False(t, imp == "go.temporal.io/sdk/client" || strings.HasPrefix(imp, "go.temporal.io/sdk/client/"),
			"workflows imports %s; starters belong in workflowclient", imp)
		require.NotEqual(t, "go.temporal.io/api/serviceerror", imp, "workflows handles Temporal's service errors: client code")
	}
	require.True(t, slices.Contains(pkg.Imports, "go.temporal.io/sdk/workflow"), "the check reads the right package")
}
