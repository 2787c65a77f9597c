package api_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A loaded machine can keep the shared embedded Temporal from answering
// for longer than the SDK's 10 s bound on a call (seen once in three
// fresh-clone runs beside a build: ~20 s). The Engine then answers as
// designed, 503 with Retry-After (temporal_unavailable, or unavailable
// "too busy"), and nothing was done. A real client tries again after
// Retry-After, so the tests' client does too, while the fixture's Temporal
// is the shared one: a test that takes Temporal away on purpose
// (temporal_away_test.go) has its own and sees every 503.

// busyFor bounds how long the client keeps trying: a stall lasts seconds;
// minutes of 503s are a real fault the test must report.
const busyFor = 3 * time.Minute

// busy reports whether r is the Engine saying "Temporal is busy or away,
// try again after Retry-After".
func busy(r response) (time.Duration, bool) {
	if r.Status != 503 {
		return 0, false
	}
	code, _ := r.Body["error"].(string)
	if code != "temporal_unavailable" && code != "unavailable" {
		return 0, false
	}
	secs, err := strconv.Atoi(r.Header.Get("Retry-After"))
	if err != nil || secs <= 0 {
		return 0, false
	}
	return time.Duration(secs) * time.Second, true
}

// untilNotBusy sends (send builds a fresh request each time: a new DPoP
// proof, a new nonce) until the answer is not busy, as a client honouring
// Retry-After would, and logs each wait so a failure shows them.
func (f *fixture) untilNotBusy(t *testing.T, send func() response) response {
	t.Helper()
	r := send()
	if f.temporal != nil {
		return r
	}
	deadline := time.Now().Add(busyFor)
	for {
		wait, ok := busy(r)
		if !ok || time.Now().After(deadline) {
			return r
		}
		t.Logf("the Engine answered %d %s with Retry-After %s; trying again as a client would", r.Status, r.Body["error"], wait)
		time.Sleep(wait)
		r = send()
	}
}

func TestBusyIsOnlyARetryAfter503(t *testing.T) {
	t.Parallel()
	header := func(retry string) http.Header {
		h := http.Header{}
		if retry != "" {
			h.Set("Retry-After", retry)
		}
		return h
	}
	for name, c := range map[string]struct {
		r    response
		busy bool
	}{
		"temporal away":          {response{Status: 503, Header: header("5"), Body: map[string]any{"error": "temporal_unavailable"}}, true},
		"too busy to start":      {response{Status: 503, Header: header("5"), Body: map[string]any{"error": "unavailable"}}, true},
		"source host down":       {response{Status: 503, Header: header(""), Body: map[string]any{"error": "unavailable"}}, false},
		"database shedding load": {response{Status: 503, Header: header("1"), Body: map[string]any{"error": "service_unavailable"}}, false},
		"rate limited":           {response{Status: 429, Header: header("30"), Body: map[string]any{"error": "rate_limited"}}, false},
		"accepted":               {response{Status: 202, Header: header(""), Body: map[string]any{}}, false},
		"unreadable Retry-After": {response{Status: 503, Header: header("soon"), Body: map[string]any{"error": "unavailable"}}, false},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, got := busy(c.r)
			require.Equal(t, c.busy, got)
		})
	}
}
