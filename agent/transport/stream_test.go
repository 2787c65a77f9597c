package transport

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestStreamedPostThroughFallback: a file transfer's content post (a
// chunked body whose SHA-256 follows as a trailer) takes the same
// FQDN-then-server_ip_fallback path as every Engine call (SPEC agent
// item 6), keeping the FQDN as Host and TLS server name.
func TestStreamedPostThroughFallback(t *testing.T) {
	t.Parallel()
	env := setup(t)
	var s seen
	got := make(chan [2]string, 1)
	handler := func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		_, err := io.Copy(h, r.Body)
		require.NoError(t, err)
		got <- [2]string{hex.EncodeToString(h.Sum(nil)), r.Trailer.Get("X-Content-SHA256")}
		w.WriteHeader(http.StatusNoContent)
	}
	port := env.serve(t, "127.0.0.1:0", s.handler(handler), false, 0)
	c := env.client(t, "https://"+engineName+":"+port, "127.0.0.1", env.caPEM)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	body := strings.Repeat("cairn ", 200000)
	pr, pw := io.Pipe()
	trailer := http.Header{"X-Content-Sha256": nil}
	go func() {
		h := sha256.New()
		_, err := io.Copy(io.MultiWriter(pw, h), strings.NewReader(body))
		trailer.Set("X-Content-SHA256", hex.EncodeToString(h.Sum(nil)))
		pw.CloseWithError(err)
	}()
	req, err := c.NewRequest(ctx, "POST", "/api/agent/files/transfers/t1/content", pr, AuthBearer("access-1"))
	require.NoError(t, err)
	req.ContentLength, req.Trailer = -1, trailer
	res, err := c.HTTPClient().Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusNoContent, res.StatusCode)

	sums := <-got
	want := sha256.Sum256([]byte(body))
	require.Equal(t, hex.EncodeToString(want[:]), sums[0])
	require.Equal(t, sums[0], sums[1], "the trailer carries the sum")
	host, sni, _ := s.get()
	require.Equal(t, engineName+":"+port, host)
	require.Equal(t, engineName, sni)
	require.True(t, c.Dials().Last.Fallback)
}
