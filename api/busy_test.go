package api_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
)

// A loaded machine can keep the shared embedded Temporal from answering
// for longer than the SDK's 10 s bound on a call (seen once in three
// fresh-clone runs beside a build: ~20 s). The Engine then answers as
// designed, 503 with Retry-After (temporal_unavailable, or unavailable
// "too busy"). A real client tries again after Retry-After, so the tests'
// client tries again too (once Temporal answers), while the fixture's
// Temporal is the shared one: a test that takes Temporal away on purpose
// (temporal_away_test.go) has its own and sees every 503.

// busyFor bounds how long the client keeps trying: a stall lasts seconds;
// minutes of 503s are a real fault the test must report.
const busyFor = 3 * time.Minute

// busy reports whether r is the Engine saying "Temporal is busy or away,
// try again after Retry-After".
func busy(r response) bool {
	if r.Status != 503 {
		return false
	}
	code, _ := r.Body["error"].(string)
	if code != "temporal_unavailable" && code != "unavailable" {
		return false
	}
	secs, err := strconv.Atoi(r.Header.Get("Retry-After"))
	return err == nil && secs > 0
}

// untilNotBusy sends (send builds a fresh request each time: a new DPoP
// proof, a new nonce) until the answer is not busy. Rather than wait out
// Retry-After on the clock, it waits for what the answer says is missing,
// the shared Temporal answering, then tries again; each try is logged so a
// failure shows them.
func (f *fixture) untilNotBusy(t *testing.T, send func() response) response {
	t.Helper()
	r := send()
	if f.temporal != nil {
		return r
	}
	deadline := time.Now().Add(busyFor)
	for busy(r) && time.Now().Before(deadline) {
		t.Logf("the Engine answered %d %s; trying again once Temporal answers, as a client honouring Retry-After would", r.Status, r.Body["error"])
		require.Eventually(t, sharedTemporalAnswers, busyFor, 100*time.Millisecond, "the shared Temporal did not answer for %s", busyFor)
		r = send()
	}
	return r
}

// sharedTemporalAnswers reports whether the tests' shared Temporal answers
// a health check (bounded per try: Eventually tries again).
func sharedTemporalAnswers() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := temporalClient.CheckHealth(ctx, &client.CheckHealthRequest{})
	return err == nil
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
			require.Equal(t, c.busy, busy(c.r))
		})
	}
}

// The client tries a busy answer again once Temporal answers, and hands a
// test with its own Temporal every answer as it came.
func TestUntilNotBusyTriesAgain(t *testing.T) {
	t.Parallel()
	busyAnswer := response{Status: 503, Header: http.Header{"Retry-After": {"5"}}, Body: map[string]any{"error": "temporal_unavailable"}}
	for _, tc := range []struct {
		name     string
		fixture  *fixture
		calls    int
		lastCode int
	}{
		{"shared Temporal", &fixture{}, 3, 202},
		{"its own Temporal", &fixture{temporal: &client.Options{HostPort: temporalAddress}}, 1, 503},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			calls := 0
			r := tc.fixture.untilNotBusy(t, func() response {
				calls++
				if calls <= 2 {
					return busyAnswer
				}
				return response{Status: 202}
			})
			require.Equal(t, tc.calls, calls)
			require.Equal(t, tc.lastCode, r.Status)
		})
	}
}
