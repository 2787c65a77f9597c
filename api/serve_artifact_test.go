package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/internal/agentartifacts"
)

// A download counts only when the whole file, or a last range of it,
// went out.
func TestServeArtifactCountsCompleteDownloads(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("0123456789", 100)
	a := agentartifacts.Artifact{ID: "linux-amd64-x", Size: int64(len(body)), FileName: "cairn-agent", SHA256: "s"}
	for _, tc := range []struct {
		method, rng string
		status      int
		counted     bool
	}{
		{"GET", "", 200, true},
		{"GET", "bytes=0-99", 206, false},
		{"GET", "bytes=900-", 206, true},
		{"GET", "bytes=900-999", 206, true},
		{"GET", "bytes=-10", 206, true},
		{"GET", "bytes=0-9,990-999", 206, false},
		{"GET", "bytes=5000-", 416, false},
		{"HEAD", "", 200, false},
	} {
		req := httptest.NewRequest(tc.method, "/x", nil)
		if tc.rng != "" {
			req.Header.Set("Range", tc.rng)
		}
		rec := httptest.NewRecorder()
		counted := false
		serveArtifact(rec, req, strings.NewReader(body), a, func() { counted = true })
		require.Equal(t, tc.status, rec.Code, "%+v", tc)
		require.Equal(t, tc.counted, counted, "%+v", tc)
		if tc.status == http.StatusOK && tc.method == "GET" {
			require.Equal(t, body, rec.Body.String())
		}
	}
}
