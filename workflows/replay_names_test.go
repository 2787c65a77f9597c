package workflows_test

import (
	"os"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/cairn-rmm/cairn/engine"
)

// workflowType reads the workflow type a saved history started.
func workflowType(t *testing.T, file string) string {
	t.Helper()
	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, h.Events, file)
	return h.Events[0].GetWorkflowExecutionStartedEventAttributes().GetWorkflowType().GetName()
}

// registeredNames are the type names of engine.Workflows() (a function's
// name, as the SDK registers it).
func registeredNames() []string {
	var out []string
	for _, wf := range engine.Workflows() {
		full := runtime.FuncForPC(reflect.ValueOf(wf).Pointer()).Name()
		out = append(out, full[strings.LastIndex(full, ".")+1:])
	}
	return out
}
