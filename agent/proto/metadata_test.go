package proto

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The value rule the agent's command line and the Engine share.
func TestNormalizeMetadataValue(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, in, want string
		bad            bool
	}{
		{name: "plain", in: "Web Server (IIS)", want: "Web Server (IIS)"},
		{name: "kept as given, not trimmed", in: "  x  ", want: "  x  "},
		{name: "blank clears", in: "   ", want: ""},
		{name: "whitespace lines clear", in: "\t\r\n \n", want: ""},
		{name: "empty clears", in: "", want: ""},
		{name: "tab and newline allowed", in: "a\tb\nc", want: "a\tb\nc"},
		{name: "CRLF becomes LF", in: "a\r\nb", want: "a\nb"},
		{name: "lone CR refused", in: "a\rb", bad: true},
		{name: "bell refused", in: "a\x07", bad: true},
		{name: "escape refused", in: "\x1b[31mred", bad: true},
		{name: "NUL refused", in: "a\x00", bad: true},
		{name: "invalid UTF-8 refused", in: "a\xffb", bad: true},
		{name: "1024 multibyte characters", in: strings.Repeat("é", 1024), want: strings.Repeat("é", 1024)},
		{name: "1025 characters refused", in: strings.Repeat("a", 1025), bad: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, problem := NormalizeMetadataValue(c.in)
			if c.bad {
				require.NotEmpty(t, problem)
				return
			}
			require.Empty(t, problem)
			require.Equal(t, c.want, got)
		})
	}
}
