package main

import (
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The Engine shares only the wire with the agent (docs/architecture.md
// "Layout"): of the agent's packages, the Engine binary may import
// agent/proto and what lies below it, never the agent's runtime, transport
// or handlers, which would put agent code (and its privileges' logic) in
// the Engine and tie their releases together (issue 22 item 5).
func TestEngineImportsOnlyAgentProto(t *testing.T) {
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(goruntime.GOROOT(), "bin", "go")
	}
	const module = "github.com/cairn-rmm/cairn/"
	out, err := exec.Command(goBin, "list", "-deps", module+"cmd/cairn").CombinedOutput()
	require.NoError(t, err, string(out))
	var agentDeps, offending []string
	for _, pkg := range strings.Fields(string(out)) {
		rel, ok := strings.CutPrefix(pkg, module)
		if !ok || (rel != "agent" && !strings.HasPrefix(rel, "agent/")) {
			continue
		}
		agentDeps = append(agentDeps, rel)
		if rel != "agent/proto" && !strings.HasPrefix(rel, "agent/proto/") {
			offending = append(offending, rel)
		}
	}
	require.Contains(t, agentDeps, "agent/proto", "the check sees the agent's packages at all")
	require.Empty(t, offending, "the Engine imports agent packages beyond agent/proto")
}
