package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAgentDependencies keeps the agent binary free of Engine-side code:
// the agent shares only agent/... with the Engine (DESIGN "Layout").
func TestAgentDependencies(t *testing.T) {
	t.Parallel()
	const module = "github.com/cairn-rmm/cairn"
	forbidden := []string{"github.com/jackc/pgx", "go.temporal.io", "github.com/go-chi/chi"}
	for _, goos := range []string{"linux", "windows"} {
		cmd := exec.Command("go", "list", "-deps", ".")
		cmd.Env = append(os.Environ(), "GOOS="+goos)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		for _, pkg := range strings.Fields(string(out)) {
			for _, f := range forbidden {
				require.False(t, pkg == f || strings.HasPrefix(pkg, f+"/"),
					"GOOS=%s: cmd/cairn-agent depends on %s", goos, pkg)
			}
			if pkg == module || strings.HasPrefix(pkg, module+"/") {
				ok := pkg == module+"/cmd/cairn-agent" || pkg == module+"/agent" || strings.HasPrefix(pkg, module+"/agent/")
				require.True(t, ok, "GOOS=%s: cmd/cairn-agent depends on Engine package %s", goos, pkg)
			}
		}
	}
}
