package inventory

import "github.com/cairn-rmm/cairn/agent/toolexec"

// command and explain are the agent's one way to run a system tool.
var (
	command = toolexec.Run
	explain = toolexec.Explain
)

// orEmpty turns "none found" into an empty, non-nil collection: nil would
// tell the Engine the collection was not taken at all.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
