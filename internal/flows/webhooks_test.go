package flows_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/internal/flows"
)

func TestResolveParameters(t *testing.T) {
	t.Parallel()
	input := json.RawMessage(`{"ticket": 4711, "host": "web-1", "urgent": true, "tags": ["a", "b"], "none": null}`)
	cases := []struct {
		name  string
		in    map[string]any
		input json.RawMessage
		want  map[string]any
	}{
		{"a number", map[string]any{"t": "{{input.ticket}}"}, input, map[string]any{"t": float64(4711)}},
		{"a string, spaces inside the braces", map[string]any{"h": "{{ input.host }}"}, input, map[string]any{"h": "web-1"}},
		{"a boolean", map[string]any{"u": "{{input.urgent}}"}, input, map[string]any{"u": true}},
		{"a list as JSON text", map[string]any{"l": "{{input.tags}}"}, input, map[string]any{"l": `["a", "b"]`}},
		{"absent: no value", map[string]any{"x": "{{input.missing}}"}, input, map[string]any{}},
		{"null: no value", map[string]any{"x": "{{input.none}}"}, input, map[string]any{}},
		{"no input: no value", map[string]any{"t": "{{input.ticket}}"}, nil, map[string]any{}},
		{"not a whole reference stays", map[string]any{"s": "ticket {{input.ticket}}", "n": float64(3)}, input,
			map[string]any{"s": "ticket {{input.ticket}}", "n": float64(3)}},
	}
	for _, c := range cases {
		require.Equal(t, c.want, flows.ResolveParameters(c.in, c.input), c.name)
	}
}
