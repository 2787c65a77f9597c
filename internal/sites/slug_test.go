package sites_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/internal/sites"
)

func TestSlugProblem(t *testing.T) {
	t.Parallel()
	for slug, ok := range map[string]bool{
		"hq": true, "a": true, "site-01": true, strings.Repeat("a", 51): true,
		"": false, strings.Repeat("a", 52): false, "HQ": false, "-hq": false, "hq-": false,
		"h q": false, "site:1": false, "héq": false,
	} {
		require.Equal(t, ok, sites.SlugProblem(slug) == "", "slug %q", slug)
	}
}
