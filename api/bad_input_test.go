package api_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// PostgreSQL stores no NUL in text or jsonb: a body carrying one is the
// client's error (400 validation_failed), never a failed query (500).
func TestNULInBodiesIsAClientError(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	for _, body := range []string{
		`{"name":"Nul\u0000Site","site_worker_slug":"` + uniqueSlug("nul") + `"}`,
		`{"name":"Nul Site","site_worker_slug":"` + uniqueSlug("nul") + `\u0000"}`,
	} {
		r := f.do(t, "POST", "/api/sites", admin, body)
		require.Equal(t, 400, r.Status, "%s: %s", body, r.Raw)
		require.Equal(t, "validation_failed", r.Body["error"])
	}
	r := f.do(t, "POST", "/api/sites", admin, `{"name":"Backslash \\u0000 Site","site_worker_slug":"`+uniqueSlug("nul")+`"}`)
	require.Equal(t, 201, r.Status, "an escaped backslash is text: %s", r.Raw)
}
